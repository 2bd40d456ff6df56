"""Finding a rubric's claims in an answer: parts in order, with polarity, numbers and quotes.

A *pattern* (spec.py) is a list of parts that must occur in this order inside one span — a
sentence, a list item, or a sentence and the next one when that one continues it ("此时…",
"so…").  Each part match carries:

* ``negated`` — a negation word (不/没有/未/not/never/without/…) at most three words before it in
  its clause ("不会溢出", "does not overflow"; "没有 eps 时 rsqrt(0) = inf" does not negate inf).
  A plain part must not be negated, a ``not:`` part must be;
* for a pattern's first part: not the object of a comparison ("两矩法比 Welford 更快" does not say
  Welford is faster).

Two-part patterns also match reversed across a "because" ("B，因为 A"): direction is kept, word
order is not.  Numbers are parsed and compared as numbers (16 vs 12 bytes, 65504, 2^24, 1e-5).
A sentence that reports a view in order to reject it ("有人说…其实不对", "it is a myth that…")
is *quoted* from the frame to the rejection: what matches there is reported, never counted.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from .normalise import clause_bounds, normalise, sentences
from .spec import Part

_NEG = re.compile(
    r"并非|而非|绝非|不是|并不|不会|不能|不用|不必|不需要?|无需|无须|无法|(?<![淹埋沉吞])没有?|未(?!知)|"
    r"不(?![同少止断足仅过久但管然论光单只停])|"
    r"\b(?:not|no|never|none|neither|nor|without|can not)\b(?! only\b)|\brather than\b|\binstead of\b|\bfails? to\b")
_GAP_UNIT = re.compile(r"[\u4e00-\u9fff]|[a-z0-9_.]+")
NEG_WINDOW = 3                           # words between a negation and what it negates
_SCOPE_END = re.compile(r"时|后|则|就|才|那么|的话|→|\bwhen\b|\bthen\b|\bif\b")   # "没有 eps 时 | 全零行…": scope ended
FRAGMENT_UNITS = 10                      # a verbless note up to this many words is a scrap, not a claim
MAX_GAP = 30                             # words between two consecutive parts of one pattern
_COMPARED = re.compile(r"(?:比|相比|than|compared (?:to|with))\s*$")
_BECAUSE = re.compile(r"因为|由于|是因为|原因是|源于|取决于|\bbecause\b|\bsince\b|\bdue to\b|\bas a result of\b|"
                      r"\bthanks to\b|\bcaused by\b|(?<!\beven )\bwhen\b|当|(?<![存现实所正好])在[^,;:]{1,12}时")    # not 存在，…时
_CONTINUES = re.compile(r"^(?:此时|这时|这样|于是|所以|因此|因而|从而|结果|那么|然后|这会|这就|这导致|它会|就会|进而|"
                        r"\bso\b|\bthus\b|\bhence\b|\btherefore\b|\bthen\b|\bthis\b|\bwhich\b|\bas a result\b|\bthat\b|\bit\b)")

# "Someone says X" frames, and the rejections that make X quoted rather than asserted.
_FRAME = re.compile(
    r"(?:有人|很多人|不少人|常有人|许多人|一些人|有些人|别人|大家|人们|网上|有的人|有的同学|有同学|初学者|"
    r"有(?:的|些)(?:资料|教程|文章|书))(?:会|也|常|常常|经常|总是|一直)?(?:说|认为|以为|觉得|讲|声称|主张|写(?![的入回进好完了])|提出|提到)|"
    r"(?:很多|不少|许多|好多|一些|有些|有的|某些)(?:教程|资料|文章|书|博客|帖子|课件|人|同学)(?:里|上|中)?"
    r"(?:会|也|常|常常|经常|都)?(?:说|写|讲|提到|提出|认为|以为|觉得|声称)|"                        # 很多教程里说
    r"(?:有|还有)?(?:一|1)?种(?:常见的)?(?:观点|说法|看法|理解)(?:是|认为|说)?|"                    # 有一种观点认为
    r"(?:我|我们)(?:之前|以前|一开始|起初|原来|本来|曾经|刚开始|开始)(?:也|还|都)?(?:觉得|认为|以为|想)(?=.*?(?:不对|错|不是这样|不成立|发现|明白))|"
    r"(?:别|不要|不能)被|"                                                                          # 别被“X”这种说法骗了
    r"^\s*说(?![明过了])(?=[^。]*?(?:不对|错误|错的|不成立|不准确))|"                                   # 说 X 是不对的
    r"(?:网上|书上|教材上?|课本上?|博客上?|帖子里?|(?:有(?:的|些)?|一些|某些)(?:资料|教程|文章|书|博客|帖子|课件))"
    r"(?:上|里|中)?(?:有人)?(?:会|也|常|常常|经常)?(?:说|写|讲|提到|声称)(?:道|着|过)?|"
    r"(?:表面上(?:看)?|乍一?看|看起来|看上去|直觉上|第一反应(?:是)?)(?=[^,;:]{0,40}[,;:—-]\s*(?:其实|实际上|事实上|但))|"   # a naive view set up to be rejected
    r"(?:常|常常|经常|总|总是|老)?(?:听(?:别)?人(?:家)?(?:说|讲)|听到有人说|听说|据说|听过(?:一种)?(?:说法)?)|"    # 常听人说 / 据说
    r"不要以为|别以为|不要认为|别认为|不要觉得|别觉得|不能说|并不是说|并非说|不是说|不等于说|"
    r"(?:通常|常|一般)?(?:被)?(?:认为|以为)|误以为|误认为|所谓|(?:常见|典型)的?(?:误解|错误|说法|误区)|(?:一|1)种(?:常见的)?(?:误解|误区|说法)|(?:常见|流行)(?:的)?(?:一|1)种(?:误解|误区|说法)|"
    r"\bsome(?:one|\s+[a-z]+(?:\s+[a-z]+)?)? (?:says?|thinks?|believes?|claims?|suggests?|writes?)\b|"     # some notes say
    r"\b(?:many |some |a lot of )?(?:people|students|beginners|tutorials|blogs?|posts|notes|sources|articles) "
    r"(?:often |sometimes |usually )?(?:say|think|believe|claim|assume|suggest|write)\b|"
    r"\bit is (?:a )?(?:common |popular |widespread )?(?:myth|misconception|mistake|wrong|false|not true|belief|assumption|idea|view) (?:to (?:think|say) )?that\b|"
    r"\ba (?:common )?(?:myth|misconception|mistake)(?: is)?(?: that)?\b|\bcontrary to\b|\b(?:one|you) might think\b|"
    r"\b(?:a|one|the) (?:common|popular|typical|usual|frequent|naive|standard) (?:explanation|view|belief|claim|answer|"
    r"assumption|intuition|guess|story)(?: is)?(?: that)?\b|"
    r"\bit is tempting to (?:think|say)\b|\bthe (?:claim|idea|belief) that\b|\bit is often said\b|"
    r"\b(?:don'?t|do not|never) (?:think|assume|believe) that\b|\bi (?:used to|once|first|initially) (?:think|thought|believe|believed)\b|\bit is not (?:true|the case) that\b")
_THIRD_PARTY = re.compile(r"有人|很多人|不少人|常有人|许多人|一些人|有些人|别人|有的人|有的同学|有同学|初学者|有(?:的|些)|"
                          r"some|many|people|students|beginners")
_SELF_REJECTING = re.compile(r"误以为|误认为|所谓|误解|误区|错误|不要|别|不能说|不是说|并非说|不等于说|"
                             r"myth|misconception|mistake|wrong|false|not true|contrary|might think|tempting|"
                             r"don'?t|do not|never|not the case|used to|once|initially")
_REJECT = re.compile(
    r"(?:说|搞|弄|想|讲|记|理解|看)反了|"           # "常听人说'X'，这其实说反了"
    r"(?:这个|这种|这句|那个|那种)?(?:想法|说法|观点|理解|话)(?:只在[^,;:]{1,16}(?:成立|才对|适用)|只对了?一半|有问题|不全对|不完全对|是片面的)|"
    r"其实|事实上|实际上|恰恰相反|正好相反|相反|并不成立|不成立|是错的|是错误的|错的|错了|不对|并非如此|不是这样|这是误解|误解|而是|"
    r"不准确|不正确|不严谨|站不住(?:脚)?|经不起推敲|(?:我)?不(?:同意|赞同|认同)|有误|误导|误区|"
    r"只(?:说)?对了?(?:一|1)?小?半|"            # "这句话只对了一小半"
    r"后来(?:我|我们)?(?:才)?(?:看|想|弄|搞)?(?:明白|发现|意识到|知道|清楚)|才(?:发现|明白|意识到)|"   # "我以为 X，后来看明白了"
    r"现在(?:才)?(?:知道|明白|发现|清楚|懂了)|(?:完全|根本|压根)(?:就)?不是|"       # "以前我以为 X，现在知道完全不是"
    r"\bnow i (?:know|see|understand)\b|\bturns out\b|"
    r"\bdo(?:es)?(?: not|n't) (?:survive|hold(?: up)?|stand(?: up)?)\b|\bfalls apart\b|\bnope\b|"   # "the idea that X does not survive"
    r"(?:^|[—,;:-]\s*)no\b(?=\s*(?:[.,;:!—-]|$))|"                                       # "some notes say 'X' - no."
    r"\b(?:that|this) is not (?:it|so|why|right|correct|the (?:reason|cause|problem|issue|point))\b|"
    r"但是|但|然而|不过|可是|"                     # a reported view followed by a contrast is being rejected
    r"\bactually\b|\bin fact\b|\bin reality\b|\bwrong\b|\bfalse\b|\bnot true\b|\bincorrect\b|\bmyth\b|\bnot the case\b|"
    r"\bbut\b|\bhowever\b|\byet\b")
# double quotes, corner brackets, and single quotes ‘…’ / '…' (an ASCII one opens after a non-letter and
# holds Chinese or a space, so "row's" / "it's" open nothing)
_QUOTED = re.compile(r"[“\"「『]([^”\"」』]{2,400})[”\"」』]|‘([^’]{2,400})’|(?<![a-z0-9])'(?=[^']*?[\u4e00-\u9fff ])([^'\n]{2,400})'")
# a rejection that closes a sentence ("…，这是误解" / "…——错的" / "…, but that is wrong"): what comes before it in
# the sentence is the view rejected, even where the view has a 其实 / but of its own
_CLOSING_REJECT = re.compile(r"(?:[,;:—-]|^)\s*(?:但|可|不过|然而|but|which is|that is|this is|and that is)?\s*"
                             r"(?:(?:(?:这|那|它)(?:个|种|句|条)?(?:话|说法|想法|结论|观点|理解|看法)?)?(?:其实|实际上|事实上)?(?:是|就是)?"
                             r"(?:错的|错误的|错了|不对的?|不成立|并不成立|不准确|(?:说|搞|弄|想|讲)反了|"
                             r"(?:一种|一个|个|种)?(?:很)?(?:常见|典型)?的?(?:误解|误区|错误理解)|不是这样的?)|"
                             r"(?:这种|这个|这类|这样的)?(?:说法|观点|想法)?(?:骗|误导)了?|"
                             r"后来(?:才)?(?:发现|知道|明白|意识到)(?:这|那)?(?:是错的|不对|不是这样的?|错了)|"
                             r"(?:that|this|it)?\s*(?:is )?(?:wrong|false|not true|a myth|a misconception|incorrect))\s*[.!]?\s*$")
_SCARE = re.compile(r"[“\"「『‘][^”\"」』’\n]{1,8}[”\"」』’]")      # a quoted term of a few characters
_WEAK_REJECT = re.compile(r"其实|事实上|实际上|但是|但|然而|不过|可是|而是|actually|in fact|in reality|but|however|yet")


def _rejection(s: str, start: int):
    """The first rejection of a reported view after ``start``.  A hedge word inside the view ("数学上其实可以直接
    相加", "fmaxf 其实不是防 NaN 的") is the view's own: 其实 / but / … reject only where they open a clause."""
    for m in _REJECT.finditer(s, start):
        if not _WEAK_REJECT.fullmatch(m.group(0)):
            return m
        before = re.sub(r"^[\s是:]+", "", s[start:m.start()]).rstrip()      # "常见的误区是：其实…"
        if before and before[-1] in ",;:—-(" or before and re.search(r"(?:^|[,;:])\s*(?:可|而|但)$", before):
            return m
    return None


_OPEN_QUOTE = re.compile(r"\s*[:：]?\s*[“\"「『‘']")
_ANSWERS_NO = re.compile(r"\s*(?:不对|不是|错|并不|当然不|没有|no\b|nope|wrong|not\b)")

# A list item or fragment has no predicate; prose does.
_PREDICATE = re.compile(r"是|为|会|(?<!没)有|(?<![觉记])得|导致|使|让|变成|变为|造成|引起|所以|因为|因此|就|要|需要|能|可以|把|被|返回|等于|只用|不用|=|→|<|>|"
                        r"越[^,;:]{1,8}越|"                        # "br 越大重复读越少" relates two quantities
                        r"\b(?:is|are|was|were|gives?|causes?|becomes?|leads?|makes?|will|so|because|would|can|must|"
                        r"needs?|has|have|does|do|turns?|produces?|returns?|equals?)\b")

# ASCII boundaries only: CJK letters count as \w in Python, and "每元素16字节" has a number in it.
_NUM = re.compile(r"(?<![a-z0-9_.])([-+]?(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?:\.\d+)?(?:e[-+]?\d+)?)"
                  r"(?:\s*(?:\^|\*\*)\s*\(?\s*([-+]?\d+(?:\.\d+)?)\s*\)?)?(?!\.\d)")
_OPERAND = re.compile(r"[a-z_)\]][\s]*[*/]\s*$|[*/^]\s*$")     # "k*4 字节" is a formula, not a count


@dataclass(frozen=True)
class Span:
    start: int                  # offsets in the normalised answer
    end: int
    kind: str                   # prose | list | soup (connective-strung terms) | window (a sentence and the next)
    first_end: int = -1         # window: where its first sentence ends (the first part must be there)
    semi: bool = False          # a window joined by a semicolon only: it establishes, it asserts nothing
    asked: bool = False         # a window from a question the answer poses to the sentence that answers it


@dataclass(frozen=True)
class Hit:
    span: Span
    evidence: str
    quoted: bool
    at: int = 0                 # where in ``evidence`` the pattern's first part starts


@dataclass
class Text:
    """A normalised answer split for matching."""
    norm: str
    sentences: List[Tuple[int, int]]
    spans: List[Span]
    quoted: List[Tuple[int, int]]
    listy_share: float          # share of the answer's words in list items / verbless fragments

    def in_quote(self, pos: int) -> bool:
        return any(a <= pos < b for a, b in self.quoted)


def units(s: str) -> int:
    return len(_GAP_UNIT.findall(s))


def _items(sent: str, sep: re.Pattern) -> List[str]:
    return [x for x in sep.split(sent) if x.strip()]


_ITEM_VERB = re.compile(r"是|为|会|得到|导致|使|让|变成|变为|造成|引起|所以|因为|因此|就|需要|(?<![主重只])要(?![是么素])|能|可以|把|被|"
                        r"\b(?:is|are|was|were|gives?|causes?|becomes?|leads?|makes?|will|so|because|would|can|"
                        r"must|needs?|has|have|does|do|turns?|produces?)\b")
_DUN = re.compile(r"[、]")


def _item_verb(x: str) -> bool:
    """An item states something: a verb of claim, or an arrow step between two terms of four or more words
    ("x − max <= 0 → 每项 ∈ (0, 1]"); a bare formula such as "rsqrtf(0) → inf" stays a term."""
    return bool(_ITEM_VERB.search(x)) or ("→" in x and units(x) >= 4)
_COMMA = re.compile(r"[,，、]")
_CJK_GAP = re.compile(r"[\u4e00-\u9fff][ \t]+(?=[\u4e00-\u9fff])")


def _is_list(sent: str) -> bool:
    """A sentence that is really a list of terms: at least two 、 (the Chinese enumeration comma)
    between items three in four of which are term-sized (<= 8 words) with no verb of claim (a
    formula such as "rsqrtf(0) → inf" is a term); or four or more comma-separated items of at most
    three words; or Chinese terms separated by spaces (prose never puts a space between two Chinese
    words).  Parenthesised asides are ignored; prose clauses between commas are not items."""
    top = re.sub(r"\([^()]*\)", " ", sent)
    items = _items(top, _COMMA)
    bare = [x for x in items if not _item_verb(x)]
    if _framed_enumeration(top, items) or _term_sum(top):
        return True
    if len(_DUN.findall(top)) >= 2 and len(items) >= 3:
        if any(units(x) >= 4 and _item_verb(x) for x in (items[0], items[-1])):
            return False      # an enumeration inside prose: "代价是：要记 n、mean、m2 三个数"
        # a clause of the sentence outside its enumerations that states something makes the
        # enumerations noun phrases of prose: "标准实现：写 S、读 S 写 P、读 P，共 4T² 个 float，再加…"
        flat = re.sub(r"[(\[][^()\[\]]*[)\]]", " ", top)          # intervals and indices: "(0,1]", "[8192, 50257]"
        if any("、" not in c and units(c) >= 3 and (_PREDICATE.search(c) or _NUM.search(c))
               for c in re.split(r"[,，:：]", flat)[1:]):
            return False
        return sum(1 for x in bare if units(x) <= 8) >= 0.75 * len(items)
    # four or more comma-separated verbless terms: identifiers up to three words, a Chinese term up to four
    # characters ("tid < s，smem[tid + s]，__syncthreads()，树形归约，数据竞争")
    if len(items) >= 4 and len(bare) == len(items) and \
            all(units(x) <= 3 or (units(x) <= 4 and _CJK_RUN.fullmatch(x.strip())) for x in items):
        return True
    # bare facts side by side: four or more comma-separated noun phrases (numbers allowed) with no predicate
    # at all ("标准:s、p 写进显存,4t^2 个 float,访存受限,o(t^2) 显存"): notes, not a linked explanation
    if len(items) >= 4 and not any(_PREDICATE.search(x) for x in items) and all(units(x) <= 6 for x in items) \
            and _bare_terms(top, items):
        return True
    # terms separated by " / " or "|" ("两阶段 / atomicAdd / kernel 边界 = 全局同步 / launch 开销 / 争用 / CAS"): three
    # or more separators, four or more items, three in four of them term-sized and verbless ("sq_sum / N" is a formula)
    slashed = [x for x in _SLASH.split(top) if x.strip()]
    if len(_SLASH.findall(top)) >= 3 and len(slashed) >= 4 and \
            not any(units(x) >= 4 and _item_verb(x) for x in (slashed[0], slashed[-1])) and \
            sum(1 for x in slashed if units(x) <= 6 and not _item_verb(x)) >= 0.75 * len(slashed):
        return True
    return _keyword_soup(top)


_SLASH = re.compile(r"\s+/\s+|\s*\|\s*")


def _bare_terms(top: str, items: List[str]) -> bool:
    """Predicate-less comma items are bare terms, not clauses: no English word besides identifiers, or, among
    six or more items, English only as nouns of terms ("bank conflict，32 路冲突，padding +1，occupancy 影响小"):
    no function word.  Four English clauses ("threads diverge, warps stall, …") have verbs no list names."""
    words = _EN_WORD.findall(re.sub(r"[a-z0-9_]*\d[a-z0-9_]*|\b[a-z]{1,2}\b", " ", top).replace("float", ""))
    if not words:
        return True
    return len(items) >= 6 and not any(_FUNCTION.fullmatch(w) for w in words)


def _framed_enumeration(top: str, items: List[str]) -> bool:
    """Keywords enumerated with 、 and framed by one short predicate ("关键是 warp、shuffle、寄存器、共享内存、合并访问、
    带宽" / "合并访问、带宽、寄存器、归约、shuffle 都会让它更快"): six or more items, every inner one a verbless term of up
    to four words, no other clause in the sentence and no count in the frame ("要记 n、mean、m2 三个数" says how many
    and what: a claim)."""
    if len(_DUN.findall(top)) < 5 or re.search(r"[,，:：;]", top) or len(items) < 6:
        return False
    inner, frame = items[1:-1], items[0] + " " + items[-1]
    return all(units(x) <= 4 and not _item_verb(x) and not _NUM.search(x) for x in inner) and \
        not _NUM.search(frame) and units(frame) <= 14


_SUMMAND = re.compile(r"\s*(?:[\u4e00-\u9fff]{2,}|[a-z][a-z-]{3,})(?:\s*(?:[\u4e00-\u9fff]+|[a-z][a-z-]*))*\s*")


def _term_sum(top: str) -> bool:
    """Terms added up as a formula ("fused kernel = kernel fusion + online softmax + in-place + memory-bound",
    "速度 = 合并访问 + 带宽 + 寄存器"): the right side of one = is three or more word summands, no identifier, number,
    bracket or other operator among them; "y = (x - mean) * rstd + beta" is a formula."""
    if top.count("=") != 1:
        return False
    rhs = top.split("=", 1)[1].strip().rstrip("。.")
    summands = rhs.split("+")
    return len(summands) >= 3 and all(_SUMMAND.fullmatch(x) and not _ITEM_VERB.search(x) for x in summands)
_CJK_RUN = re.compile(r"[\u4e00-\u9fff]+")
_FUNCTION = re.compile(r"the|a|an|is|are|was|were|be|to|of|in|on|and|or|it|its|this|that|will|can|by|with|for|into|"
                       r"from|as|each|every|which|we|you|they|not|no|has|have|at|gets?|makes?|becomes?|so|because")


def _mixed_soup(s: str, runs: List[str]) -> bool:
    """Chinese and English terms pasted with spaces ("负 negative NaN 传播 污染 fmaxf 截断 clamp …"): eight or
    more space-separated tokens and no clause punctuation, most of them Chinese terms that stand alone
    between spaces (prose never puts a space between two Chinese words), short ones, and no English
    function word."""
    toks = s.split()
    if len(toks) < 8 or re.search(r"[,，;；:：、]", s) or len(_CJK_GAP.findall(s)) < 2:
        return False
    alone = [t for t in toks if _CJK_RUN.fullmatch(t)]
    if len(alone) < 0.4 * len(toks) or sum(map(len, alone)) / len(alone) > 3:
        return False
    return not any(_FUNCTION.fullmatch(t) for t in toks)


def _keyword_soup(s: str) -> bool:
    """Terms pasted with spaces between them: Chinese runs of a few characters separated by spaces
    (connectives such as 因为 / 所以 sprinkled in do not make it prose), or eight or more English
    words with almost no function words."""
    runs = _CJK_RUN.findall(s)
    gaps = len(_CJK_GAP.findall(s))
    if runs and gaps >= 3 and gaps >= 0.5 * len(runs):     # most Chinese runs end at a space before another
        return sum(len(r) for r in runs) / len(runs) <= 4
    if _mixed_soup(s, runs):
        return True
    if len(re.findall(r"[=*/+<>]", s)) >= 2:          # a formula, not a term list
        return False
    if sum(len(r) for r in runs) >= 6:                # mixed prose: its function words are Chinese
        return False
    # an arrow chain of phrases ("rounding n/4 up → last float4 reads past the end → need scalar tail") links
    # its steps: a correct causal link written as an arrow is a link, not a term list
    steps = [x for x in s.split("→")]
    if len(steps) >= 2 and all(len(_EN_WORD.findall(x)) >= 2 or re.search(r"[=<>]", x) for x in steps) and \
            sum(1 for x in steps if len(_EN_WORD.findall(x)) >= 2) >= 2:
        return False          # a formula step ("n4 = 0") is a step of the chain too
    words = [w for w in re.split(r"[\s,;:()]+", s) if re.fullmatch(r"[a-z][a-z0-9_'-]*", w)]
    if _EN_FINITE.search(s) and len(_items(s, _COMMA)) <= 3:
        # "expf overflows to inf once x exceeds ln(FLT_MAX), about 88.7": a clause with few function words; a
        # verb inside a comma list of notes ("…, spills to local memory, few blocks …") keeps it notes
        return False
    return len(words) >= 8 and sum(1 for w in words if _FUNCTION.fullmatch(w)) <= len(words) // 8


# finite forms of the verbs answers are made of (a noun such as "read" or "load" alone says nothing)
_EN_FINITE = re.compile(r"\b(?:overflow|underflow|exceed|read|write|load|store|stay|return|become|give|cause|lead|make|"
                        r"turn|produce|need|use|take|keep|move|fall|rise|grow|drop|cancel|saturate|round|lose|hold|fit|"
                        r"reach|stall|diverge|coalesce|spill|fail|crash|compute|divide|multiply|subtract|shift|"
                        r"propagate|poison|break|hide|cover|skip|touch|waste|halve|double|reduce|increase|avoid|prevent)"
                        r"(?:s|es|ed|d)\b|\b(?:wrote|read|grew|fell|rose|became|gave|made|took|kept|lost|held|broke|"
                        r"goes|went)\b(?=\s+(?:to|into|past|from|below|above|out|back|by|the|a|an|at|up|down|inf|nan|0)\b)")


_CAUSAL = re.compile(r"因为|所以|导致|使得|因此|由于|从而|于是|\bso\b|\bbecause\b|\btherefore\b|\bthus\b|\bhence\b|"
                     r"\bleads? to\b")
_CONSEQUENCE_OPEN = re.compile(r"\s*(?:[-*•]\s*|\d{1,2}[.)]\s*)?(?:所以|因此|因而|从而|于是|导致|使得|这(?:就|又)?(?:导致|使得|让)|"
                               r"\bso\b|\btherefore\b|\bthus\b|\bhence\b|\bthis (?:leads to|means|causes)\b)")
SEMI_RUN = 3                             # segments joined by semicolons that still read as one sentence
SOUP_CONNECTIVES = 4                     # causal connectives in one sentence that make it a chain of pasted terms


def _is_causal_soup(sent: str) -> bool:
    """Terms strung together by causal connectives ("因为 X 所以 Y，导致 Z，所以 W 因为 V，因此 …"): four or
    more 因为 / 所以 / 导致 / so / because … in one sentence, about one for every two clauses or more.  A
    reasoned chain spreads its steps over sentences and says *why* each follows; a sentence that is
    mostly connectives asserts links it never argues, and a reader grades it as no explanation."""
    return _connective_soup([sent], turn_back=True)


def _is_causal_soup_run(segs: List[str]) -> bool:
    """Connective-strung terms continued across semicolons ("因为 A，所以 B，导致 C；因为 D，所以 E，但是 F，所以 G"),
    the run of segments read as one sentence.  A 因为 that opens a new segment is a new step, not a turn back,
    so "因为 A，所以 B；因为 C，所以 D" stays two reasoned halves."""
    return len(segs) >= 2 and _connective_soup(segs, turn_back=False)


def _connective_soup(segs: List[str], *, turn_back: bool) -> bool:
    found = [[m for m in _CAUSAL.finditer(x)] for x in segs]
    words = [m.group(0) for ms in found for m in ms]
    k = len(words)
    if k < SOUP_CONNECTIVES:
        return False
    if k < 0.4 * sum(len(clause_bounds(re.sub(r"\([^()]*\)", " ", x))) for x in segs):
        return False
    if k > SOUP_CONNECTIVES:
        return True
    # exactly four: a reasoned chain runs one way (因为 A，所以 B，因此 C，所以 D); pasted terms turn back
    # ("…，所以 X，因为 Y"), reach for 导致 / leads to, or put two connectives in one clause ("所以 fmaxf 因为 NaN 传播")
    backward = {"因为", "由于", "because", "since"}
    turns_back = turn_back and any(w in backward for w in words[1:]) and any(w not in backward for w in words[:-1])
    crowded = False
    for x, ms in zip(segs, found):
        bounds = clause_bounds(x) + [len(x) + 1]
        crowded = crowded or any(sum(1 for m in ms if a <= m.start() < b) >= 2 for a, b in zip(bounds, bounds[1:]))
    return turns_back or crowded or "导致" in words or "使得" in words or any(w.startswith("lead") for w in words)


_CAUSE = re.compile(r"因为|由于|\bbecause\b|\bsince\b")
_EFFECT = re.compile(r"所以|因此|导致|从而|于是|\bso\b|\btherefore\b|\bhence\b|\bthus\b")
TEMPLATED = 3                            # short "因为 A，所以 B" sentences that make a whole answer one template
TEMPLATED_UNITS = 30


def _templated(norm: str, sents: List[Tuple[int, int]]) -> List[int]:
    """The sentences of an answer written as one template, "- 因为 A，所以 B / - 因为 C，所以 D / …": three or more
    short sentences (at most ``TEMPLATED_UNITS`` words on average), most of the answer, each with its own cause and
    consequence.  Every link is asserted and none argued; students who reason write one or two such sentences among
    others, or long ones that say what each step rests on."""
    body = [(k, norm[a:b]) for k, (a, b) in enumerate(sents) if units(norm[a:b]) >= 2]
    both = [(k, s) for k, s in body if _CAUSE.search(s) and _EFFECT.search(s)]
    if len(both) < TEMPLATED or len(both) < 0.6 * len(body) or \
            sum(units(s) for _, s in both) > TEMPLATED_UNITS * len(both):
        return []
    return [k for k, _ in both]


_EN_WORD = re.compile(r"\b[a-z][a-z'-]*\b")


def _is_fragment(sent: str) -> bool:
    """A verbless scrap ("negative variance", "- NaN", "寄存器压力；occupancy 下降" as telegraphic notes);
    one that states a number ("朴素 12 B") is a claim, and so is an English sentence of six or more words
    with two function words ("for small shapes the launch overhead dominates the runtime"): its verb is
    one no list of verbs names."""
    if units(sent) > FRAGMENT_UNITS or _PREDICATE.search(sent) or _NUM.search(sent):
        return False
    words = _EN_WORD.findall(sent)
    return not (len(words) >= 6 and sum(1 for w in words if _FUNCTION.fullmatch(w)) >= 2)


def _quotes(norm: str, sents: List[Tuple[int, int]]) -> List[Tuple[int, int]]:
    out = []
    for k, (a, b) in enumerate(sents):
        s = norm[a:b]
        for f in _FRAME.finditer(s):
            if re.search(r"(?:我|我们)(?:一开始|起初|原来|本来|之前|曾经|还)?$", s[max(0, f.start() - 6):f.start()]) \
                    and not _SELF_REJECTING.search(f.group(0)) \
                    and not (re.search(r"以为|听|据说", f.group(0)) and _rejection(s, f.end())):
                continue           # "我认为 X" is the student's own claim; "我以为 X，后来发现…" retracts it
            after = f.end()
            oq = _OPEN_QUOTE.match(s, after)
            if oq:                              # 有人说「其实 X」，…: a rejection word inside the quote is the view's own
                close = _QUOTED.match(s, oq.end() - 1)
                after = close.end() if close else after
            rej = _rejection(s, after)
            closing = _CLOSING_REJECT.search(s, f.end())
            if closing and (not rej or rej.start() < closing.start()):
                out.append((a + f.start(), a + closing.start()))
            elif rej:
                out.append((a + f.start(), a + rej.start()))
            elif _SELF_REJECTING.search(f.group(0)) or _THIRD_PARTY.match(f.group(0)):
                out.append((a + f.start(), b))     # "有人以为 X；…": someone else's view, reported
            elif k + 1 < len(sents) and _REJECT.search(norm[sents[k + 1][0]:sents[k + 1][0] + 16]):
                out.append((a + f.start(), b))
        # "X——这是个常见误区。" / "X，这是错的。": a sentence that closes by rejecting itself, with no frame
        if not any(qa <= a + 1 and qb >= b - 1 for qa, qb in out):
            closing = _CLOSING_REJECT.search(s)
            if closing and closing.start() > 0 and not _FRAME.search(s, 0, closing.start()):
                out.append((a, a + closing.start()))
        # "X？不对。" — a question answered no in the next sentence asserts nothing
        if norm[b:b + 1] == "?" and k + 1 < len(sents) and _ANSWERS_NO.match(norm, sents[k + 1][0]):
            out.append((a, b))
        for q in _QUOTED.finditer(s):     # “X” 这种说法是错的 / "X" is a myth
            if _REJECT.search(s[q.end():q.end() + 24]) or _FRAME.search(s[max(0, q.start() - 24):q.start()]):
                # the view is the clause the quotation closes ("v1 慢像是“算术多”，其实不是": v1 慢 is part of it)
                cs = max([0] + [m.end() for m in re.finditer(r"[,;:]", s[:q.start()])])
                close = re.match(r"\s*(?:[,;:—-]|$)", s[q.end():])
                out.append((a + (cs if close else q.start()), a + q.end()))
    return out


def analyse(text: str, *, normalised: bool = False) -> Text:
    norm = text if normalised else normalise(text)
    sents = sentences(norm)
    spans: List[Span] = []
    listy = total = 0
    # a semicolon after sentence k; runs[k]: how many segments its run of semicolon-joined segments has
    # (prose joins two or three halves of a thought that way, telegraphic notes string many together)
    semi = [k + 1 < len(sents) and ";" in norm[sents[k][1]:sents[k + 1][0]] for k in range(len(sents))]
    runs, k = [0] * len(sents), 0
    while k < len(sents):
        j = k
        while j < len(sents) and semi[j]:
            j += 1
        for i in range(k, j + 1):
            if i < len(sents):
                runs[i] = j - k + 1
        k = j + 1
    # a run of semicolon-joined segments that as a whole strings terms together by connectives: each of its
    # segments with a connective is part of that chain.  The same across full stops: a sentence that opens with a
    # consequence connective ("…。所以 B，导致 C。") goes on with the segment before it, as it would with a comma.
    soup_run = [False] * len(sents)
    k = 0
    while k < len(sents):
        segs, j = [norm[sents[k][0]:sents[k][1]]], k
        while j + 1 < len(sents) and (semi[j] or _CONSEQUENCE_OPEN.match(norm, sents[j + 1][0])):
            nxt = norm[sents[j + 1][0]:sents[j + 1][1]]
            if semi[j]:
                segs.append(nxt)
            else:
                segs[-1] += "," + nxt
            j += 1
        if j > k and (_is_causal_soup_run(segs) if len(segs) >= 2 else _is_causal_soup(segs[0])):
            for i in range(k, j + 1):
                soup_run[i] = bool(_CAUSAL.search(norm[sents[i][0]:sents[i][1]]))
        k = j + 1
    for k in _templated(norm, sents):
        soup_run[k] = True
    notes = _note_runs(norm, sents, runs)
    for k, (a, b) in enumerate(sents):
        s = norm[a:b]
        n = units(s)
        total += n
        bare = HEDGE_OPEN.sub("", s)        # "我觉得少了：减均值、beta" is the note it opens
        if _is_question(norm, b, s) and not (k + 1 < len(sents) and _ANSWERS_YES.match(norm, sents[k + 1][0])):
            spans.append(Span(a, b, "question"))  # asks, asserts nothing ("…为什么不变？" copied or posed)
            # "如果把 eps 放到根号外，会怎样？全零行时 inf + eps 还是 inf": the question is the topic of the answer
            # that follows it; a pattern may start in the question and must end in the answer (which alone asserts)
            if k + 1 < len(sents) and not _is_question(norm, sents[k + 1][1], norm[sents[k + 1][0]:sents[k + 1][1]]):
                spans.append(Span(a, sents[k + 1][1], "window", first_end=b, semi=True, asked=True))
        elif notes[k] or _is_list(bare):
            listy += n
            spans.append(Span(a, b, "list"))     # claims found here count toward a term list only
        elif _is_causal_soup(s) or soup_run[k]:
            spans.append(Span(a, b, "soup"))     # asserts (its contradictions count), establishes nothing
        else:
            if _is_fragment(bare):
                listy += n
            spans.append(Span(a, b, "list" if _is_fragment(bare) else "prose"))
            # a sentence that continues this one ("此时…", "so…"), or one after a semicolon, which joins two
            # halves of one thought ("…上一轮别的线程写的；只有栅障保证写完才读")
            if k + 1 < len(sents):
                cont = bool(_CONTINUES.search(norm[sents[k + 1][0]:sents[k + 1][1]]))
                if cont or (semi[k] and runs[k] <= SEMI_RUN):
                    spans.append(Span(a, sents[k + 1][1], "window", first_end=b, semi=not cont))
    share = listy / total if total else 0.0
    if _all_notes(norm):
        share = 1.0       # step notes line by line, none of them a sentence: graded as a term list
    return Text(norm, sents, spans, _quotes(norm, sents), share)


# a hedge that opens a sentence ("我觉得…", "感觉是…"): the sentence after it is what is said (one rule for notes,
# fragments and question copies)
HEDGE_OPEN = re.compile(r"^(?:我|我们|个人)?(?:觉得|感觉|估计|猜|认为|想)(?:是)?\s*[,:]?\s*")
# a rhetorical question asserts its answer: "这不就是数据竞争吗？" / "isn't that a race?"
_RHETORICAL = re.compile(r"难道|不就|不也|岂不|不是[^?]*吗|\b(?:is|are|was|were|does|do|did|would|could|can|will)n't\b")


_ANSWERS_YES = re.compile(r"\s*(?:是的|是啊|是|对的|对|没错|当然|确实|会的|会|能|yes\b|yep\b|right\b|correct\b|indeed\b|sure\b)")


def _is_question(norm: str, end: int, s: str) -> bool:
    """A sentence that asks (ends with a question mark), not a rhetorical one; one answered yes ("X 吗？是的，…")
    asserts X, which the caller checks."""
    return norm[end:end + 1] == "?" and not _RHETORICAL.search(s)


NOTE_RUN = 5                             # semicolon-joined segments that make a run of notes
NOTE_UNITS = 8                           # words per segment, on average, in such a run
_ASSIGNMENT = re.compile(r"[a-z_][a-z0-9_]*\s*=(?!=)")    # "m_new = max(m, tile_max)": a step of an algorithm


def _note_runs(norm: str, sents: List[Tuple[int, int]], runs: List[int]) -> List[bool]:
    """Segments of a run of telegraphic notes ("24 位有效位；ulp 随数值增大；pos·θ 大 → 舍入大；1e5：~5e-3；…"): five or
    more semicolon-joined segments, short on average, none with a causal connective.  Notes set facts side by side
    (an arrow is a step, not a because); prose joins two or three halves of a thought that way, and an update rule
    spelled as assignments ("m_new = max(m, tile_max)；alpha = …；l = alpha·l + …") is an algorithm, stated."""
    out = [False] * len(sents)
    k = 0
    while k < len(sents):
        j = k + max(1, runs[k])
        segs = [norm[a:b] for a, b in sents[k:j]]
        if len(segs) >= NOTE_RUN and sum(map(units, segs)) <= NOTE_UNITS * len(segs) \
                and not any(_CAUSAL.search(x) for x in segs) \
                and sum(1 for x in segs if _ASSIGNMENT.search(x)) < len(segs) / 2:
            out[k:j] = [True] * len(segs)
        k = j
    return out


# a line of notes states steps, not reasons: no verb of claim and no connective in it ("输入：1 block/行，tid stride
# 读 → 合并" / "warp shfl → smem → warp0 → sum, sq_sum"); an arrow is a step, not a because
_NOTE_VERB = re.compile(r"因为|所以|因此|由于|导致|使得?|让|就|会|才|要|需要|必须|可以|能|是|否则|不然|于是|从而|"
                        r"\b(?:because|so|since|would|will|must|is|are|can|means|makes)\b")


def _all_notes(norm: str) -> bool:
    """Three or more lines, every one of them a note without a verb of claim or a connective.  A line that is an
    English arrow chain of phrases ("shift invariance: the e^{-c} cancels top & bottom → same softmax for any c") links
    its steps (the arrow is the connective of English notes) and is not a note."""
    lines = [x for x in norm.split("\n") if x.strip()]
    return len(lines) >= 3 and not any(_NOTE_VERB.search(x) or _english_chain(x) for x in lines)


def _english_chain(line: str) -> bool:
    steps = line.split("→")
    return len(steps) >= 2 and sum(1 for x in steps if len(_EN_WORD.findall(x)) >= 3) >= 2


# ----------------------------------------------------------------------------- part matches

@dataclass(frozen=True)
class PartMatch:
    start: int
    end: int
    negated: bool
    compared: bool               # the object of a comparison ("比 X 更快")
    neg_at: int = -1             # where the negation word starts (-1: none)
    value_ok: bool = True        # number slots: the value is the one the part asks for


def _negation_at(s: str, start: int, clause_start: int) -> int:
    """Where a negation word at most NEG_WINDOW words before ``start`` in its clause begins, or -1.
    Only the text before the match counts, so a paraphrase that spells a negation itself
    ("不可能为负", "结果不变") is negated only by one more before it."""
    before = s[clause_start:start]
    negs = list(_NEG.finditer(before))
    last = negs[-1] if negs else None
    after = before[last.end():] if last is not None else ""
    if last is not None and after.count(")") > after.count("("):
        return -1          # a negation inside an aside that has closed ("全零行（不是 padding，是空序列）会得到 NaN")
    if last is not None and units(after) <= NEG_WINDOW and not _SCOPE_END.search(after):
        # two negations in a row cancel: "也不是不减均值" subtracts the mean, "不会不得到 0" gets 0
        if len(negs) >= 2 and units(before[negs[-2].end():last.start()]) <= 1 and \
                not re.search(r"[,;:]", before[negs[-2].end():last.start()]):
            return -1
        return clause_start + last.start()
    return -1


_ORDINAL = re.compile(r"第\s*$")
_LISTED = re.compile(r"\d\s*[:/、]\s*$")      # "16 : 12 : 8 字节": the unit belongs to every number


def _numbers(s: str, *, listed: bool = True):
    for m in _NUM.finditer(s):
        before = s[max(0, m.start() - 6):m.start()]
        if _OPERAND.search(before) or _ORDINAL.search(before) or (not listed and _LISTED.search(before)):
            continue
        try:
            base = float(m.group(1).replace(",", ""))
            value = base ** float(m.group(2)) if m.group(2) else base
        except (OverflowError, ValueError):
            continue
        yield m.start(), m.end(), value


def _negation_inside(regex: re.Pattern, s: str, a: int, b: int) -> int:
    """A regex paraphrase whose gap runs across a clause ("部分和.{0,10}直接相加" over "部分和基准不同，不能直接
    相加") is negated by a negation in its last clause, as if that clause stood alone — unless the negation
    is the paraphrase's own word ("越界….{0,30}不会报错"): the paraphrase no longer matches without it.  Within
    one clause the same holds for a negation the gap swallowed ("部分和不能直接相加" is not "部分和.{0,10}直接相加")."""
    inner = [m.end() for m in re.finditer(r"[,;:]", s[a:b])]
    tail_start = a + inner[-1] if inner else a
    asides = [(a + m.start(), a + m.end()) for m in re.finditer(r"\([^()]*\)", s[a:b])]
    for neg in _NEG.finditer(s, tail_start, b):
        if not inner and neg.start() == a:
            continue          # a paraphrase that opens with its negation ("can not simply add") spells it itself
        if any(x < neg.start() < y for x, y in asides):
            continue          # inside an aside that closes within the match ("base 在 m_new = -inf（还没有可见 key）时是 0")
        if regex.search(s[a:neg.start()] + s[neg.end():b]):
            return neg.start()
    return -1


def part_matches(part: Part, s: str) -> List[PartMatch]:
    """Matches of one part in span text ``s`` (normalised), with polarity."""
    bounds = clause_bounds(s)
    out = []
    found = [(m.start(), m.end(), True) for m in part.regex.finditer(s) if m.end() > m.start()] \
        if part.regex is not None else []
    # every number (with the unit) is a candidate, so a number-only part binds the *nearest* one after
    # its previous part: "三遍 16 字节，朴素 12 字节" does not make the three-pass count 12
    for n in part.numbers:
        # the last number of a list ("16 : 12 : 8 字节") is not what the part before it is said to be
        for a, b, v in _numbers(s, listed=not n.other):
            if n.unit is not None:
                um = n.unit.match(s, b + len(s[b:]) - len(s[b:].lstrip()))
                if not um:
                    continue
                b = um.end()
            same = math.isclose(v, n.value, rel_tol=n.tol, abs_tol=0.0) if math.isfinite(v) else False
            found.append((a, b, same != n.other))
    found.sort()
    for f in found:
        a, b = f[0], f[1]
        cs = max(x for x in bounds if x <= a)
        neg = _negation_at(s, a, cs)
        if neg < 0 and part.regex is not None and f[2] is True:
            neg = _negation_inside(part.regex, s, a, b)
        out.append(PartMatch(a, b, neg >= 0, bool(_COMPARED.search(s[max(cs, a - 16):a])), neg, f[2]))
    return out


def _polarity_ok(part: Part, m: PartMatch, prev: Optional[PartMatch] = None) -> bool:
    # a negation inside the previous part of the pattern belongs to it ("不用 | 减均值", "without | eps"), and so
    # does the one the previous part was negated by ("不 | 减均值 | 更快": 不 negates 减均值, not 更快); one between
    # the two parts negates this one ("RMSNorm 也 | 不 | 减均值")
    negated = m.negated and not (prev is not None and (prev.start <= m.neg_at < prev.end or
                                                       prev.negated and m.neg_at == prev.neg_at))
    return negated == part.negated


def find(pattern: Sequence[Part], text: Text, cache: Dict, *, assertion: bool = False,
         consequence: bool = False) -> Optional[Hit]:
    """The first span where ``pattern`` holds (an unquoted hit preferred over a quoted one).

    ``assertion`` (contradictions, misconceptions): only prose asserts — a term list states no
    relation — and the parts of a pattern without a number slot must share one clause, so
    "大正数会上溢，大负数会下溢" does not say that large positives underflow.  With ``consequence`` the
    second clause may be the 所以 / so consequence of the first (what zeroes an item; a veto needs
    the view stated in one clause)."""
    quoted_hit = list_hit = None
    for span in text.spans:
        if span.kind == "question" or assertion and (span.kind == "list" or span.semi) or \
                not assertion and span.kind == "soup":
            continue
        s = text.norm[span.start:span.end]
        ms = []
        for p in pattern:
            key = (id(p), span)
            if key not in cache:
                cache[key] = part_matches(p, s)
            ms.append(cache[key])
        if assertion:                        # “直接相加” in quotation marks is a word mentioned, not a claim made
            mentions = [(m.start(), m.end()) for m in _SCARE.finditer(s)]
            if mentions:
                ms = [[m for m in cands if not any(a <= m.start < b for a, b in mentions)] for cands in ms]
        if assertion and len(pattern) > 1 and pattern[0].regex is not None:   # 它 names a subject, not a claim
            ms[0] = ms[0] + _anaphora(pattern[0], text, span, s)
        if assertion and len(pattern) > 1 and not any(p.numbers for p in pattern):
            first = _in_one_clause(pattern, ms, span, s, consequence)
        else:
            first = _in_order(pattern, ms, span, s, nearest=assertion)
        if first is None and len(pattern) == 2:
            first = _reversed(pattern, ms, s)
        if first is None:
            continue
        hit = Hit(span, s, text.in_quote(span.start + first), first)
        if not hit.quoted and span.kind != "list":
            return hit
        if not hit.quoted:
            list_hit = list_hit or hit      # a later sentence in prose may state what a term list names
            continue
        quoted_hit = quoted_hit or hit
    return list_hit or quoted_hit


# the antecedent of a conditional: "如果树不用每轮同步，…" / "要是 X 的话" / "if the tree skipped the barrier, it would…"
# supposes X, it does not assert it; the antecedent runs from the opener to the next clause mark or 就 / 那么 / 则 / then
_IF_OPENER = re.compile(r"如果|假如|假设|假使|倘若|万一|若(?!干)|(?<![主需只就还正])要是|\bif\b|\bsuppose\b|\bsupposing\b|"
                        r"\bassuming\b|\bimagine\b")
_IF_END = re.compile(r"[,;:]|就|那么|则|的话|时候?|\bthen\b|"
                     # "if the layouts were swapped the kernel would produce NaN": an English consequence without a
                     # comma opens with its own subject and a modal
                     r"(?<!\bif )(?<!suppose )\b(?:the\s+[a-z_][a-z0-9_]*|it|this|that|we|you|they|there)\s+"
                     r"(?:would|will|could|can|might|must|should|gets?|becomes?)\b")


# a conditional without an opener: "只乘 l 的话，acc 就对不上" — 的话 closes the antecedent it ends
_IF_CLOSER = re.compile(r"的话(?![题语说是])")
_CLAUSE_END = re.compile(r"[,;:]|就|那么|则|\bthen\b")


def hypothetical(s: str, at: int) -> bool:
    """Whether position ``at`` of sentence ``s`` lies in the antecedent of a conditional (after 如果 / 要是 / 假如 /
    if …, before its clause ends or its consequence opens)."""
    return any(m.end() <= at and not _IF_END.search(s, m.end(), at) for m in _IF_OPENER.finditer(s, 0, at))


def antecedent_end(s: str, at: int) -> Optional[int]:
    """Where the antecedent holding position ``at`` of sentence ``s`` ends (None: ``at`` is in none): one opened
    by 如果 / if …, or a clause that a 的话 closes ("只乘 l 的话 acc 就对不上")."""
    closer = _IF_CLOSER.search(s, at)
    if hypothetical(s, at):
        ends = [m.start() for m in (_IF_END.search(s, at), closer) if m]
        return min(ends) if ends else len(s)
    if closer and not _CLAUSE_END.search(s, at, closer.start()):
        return closer.start()
    return None


def supposed(pattern: Sequence[Part], s: str, at: int) -> bool:
    """Whether the whole of ``pattern`` found at ``at`` in sentence ``s`` lies in a conditional's antecedent:
    "只乘 l 的话，acc 就对不上" supposes "只乘 l"; "eps 放在根号里的话 inf + eps 还是 inf" asserts the consequence."""
    end = antecedent_end(s, at)
    return end is not None and all(any(m.start >= at and m.end <= end for m in part_matches(p, s)) for p in pattern)


# people other than the writer: who holds a view here, who made a run in gpu_claims
OTHER_PEOPLE = (r"有人|别人|他们?|她们?|老师|助教|同学|作者|朋友|室友|学长|学姐|师兄|师姐|同事|队友|组员|"
                r"\b(?:someone|somebody|people|others|classmates?|friends?|teachers?|roommates?|colleagues?|"
                r"(?:room|class|team|lab)-?mates?|lab partners?)\b")
# someone else, or a source, holds the view: "有人说 X，其实 Y" rejects it by the contrast alone
_SOMEONE_ELSE = (OTHER_PEOPLE + r"|网上|书上|教程|资料|文章|博客|帖子|论坛|说法|流传|流行|据说|听说|"
                 r"\b(?:forum|tutorials?|online|textbooks?|blogs?|posts?|chatgpt|chatbots?|copilot)\b|聊天机器人")
# A broad reading of "someone's view, rejected" for veto decisions only.  The frames above mark exactly what is
# quoted; students report and reject views in more ways than any list of frames holds ("我室友说 X，我觉得他说错了",
# "网上流传一个说法，X，这并不正确", "Someone in the forum said X. That's not right."), and a veto fails the whole
# lesson, so a view that is attributed before it and rejected after it (or in the next sentence's opening) is not
# vetoed: it goes to a person.
_ATTRIBUTED = re.compile(
    _SOMEONE_ELSE + r"|观点|看法|结论|解释|"
    r"以为|认为|觉得|相信|认定|理解(?:成|为)|当成|当作|(?<![来明])说|讲过|写(?:道|着|过|的|成|了)|(?<!回)答(?:成|的|了)?|回答|提出|坚持|告诉|声称|主张|误会|误解|问|"
    r"\b(?:said|says|say|claims?|claimed|believes?|believed|thinks?|thought|assumes?|assumed|idea|view|belief|guess|guessed|"
    r"notes|told|insist(?:s|ed)?|argued?|argues|heard|wrote|writes|reckon(?:s|ed)?|saw|answers?|used to|bought)\b|"
    r"看到|看过|读到|见过|讲义|笔记|课件|答案|想成|看成|第一反应|第一感觉|直觉上?|乍一?看|\b(?:written|at first glance|at first sight)\b")
# a verdict on the view itself, never something the view causes: a mark-down, a correction, "outdated"
_VERDICT_WORD = re.compile(r"扣(?:了)?分|丢(?:了)?分|不给分|判(?:为|成)?错|勘误|划掉|谣言|过时|被[^,;:]{0,6}?(?:纠正|更正|推翻|否定|证伪)|"
                           r"\blos[et] (?:\w+ )?points?\b|\bmarked (?:down|wrong)\b|\boutdated\b|\bobsolete\b|"
                           r"\bcrossed (?:it |that |this )?out\b|\bdisprov|\brefut|\bdebunk|恰恰相反|正好相反|打脸")
_REJECTS = re.compile(
    _VERDICT_WORD.pattern + r"|不对(?![齐称应劲])|错(?:了|的|误)|说错|搞错|弄错|想错|记错|不正确|不成立|不准确|误(?:解|区|会|导)|别信|不要信|不可信|"
    r"被证明|并非如此|不是这样|站不住|经不起推敲|说不通|瞎说|胡说|说反|其实不然|否定的|(?:是|个)(?:大)?坑|陷阱|"
    r"\b(?:wrong|false|incorrect|mistaken|myth|misconception|nonsense|backwards|trap|pitfall)\b|\bnot (?:right|true|correct|the case)\b|"
    r"\bturned out\b|\bdo(?:es)? not hold\b|\bno longer\b|\bthe opposite\b|\bon the contrary\b|不再(?:这么|这样)?(?:认为|觉得|相信|以为)|"
    r"没(?:有)?(?:搞|弄|想)(?:清楚|明白|懂)|搞混|\b(?:a|the|this|that|classic|typical) mistake\b|\bmistakes?\b(?= ?[.!]?$)|以讹传讹|\bwarns? (?:about|against)\b|不靠谱|(?:下|说)得太早|太武断|不是这么回事|推翻|(?:并|其实|实际上?)不是(?:的|这样的?)?(?=\s*[.!?]?\s*$)|\bstruck (?:it |that )?out\b|(?:理解|想|搞|弄|写|记|答)反|犯(?:的)?错|\bdoes?n'?t hold\b|(?:说法|想法|理解|观点|看法|解释)[^,;:]{0,4}(?:有问题|不全对|片面)|"
    r"翻车|再也不(?:信|相信)|反例|\bnope\b|\bcounter-?examples?\b|\bfalls? apart\b|扯淡|胡扯|瞎扯|鬼扯|(?:并)?不是事实|与事实不符|不符合事实|"
    r"\bnot a fact\b|\b(?:does|do|did)(?: not|n'?t) support (?:this|that|it)\b")
# a view labelled wrong before it is stated ("有一种错误说法：X", "a common mistake is to think X", "与网上说的相反（X）")
_LABELLED_WRONG = re.compile(
    r"(?:错误|错的|不对|有误|过时|误导人?)的?(?:说法|观点|理解|想法|看法|答案|解释|结论|认识|印象|直觉)|误(?:区|解|读)\s*(?:是|在于|[:：])|"
    r"[和与跟同][^,;:。]{0,16}(?:说|讲|写|想)的?(?:正好|恰好|恰恰)?相反|"
    r"\b(?:wrong|false|mistaken|incorrect|naive|misleading) (?:answer|view|idea|explanation|claim|belief|reading|intuition|statement)s?\b|"
    r"\b(?:common|popular|frequent|typical) (?:mistake|error|pitfall|misconception|misreading|misunderstanding|myth|confusion)\b|\bcontrary to\b|^\s*[✗×❌]")
# a sentence that opens with a label of what follows as wrong: "下面这个说法是错的：X", "Myth: X", "Wrong — X"
_LABEL_OPEN = re.compile(r"^[^,;:。]{0,30}?(?:" + _REJECTS.pattern + r")\W{0,3}[:—-]")
_MARKED_WRONG = re.compile(r"\(\s*(?:(?:这|此)?(?:是|为)?\s*(?:错误|错的|不对|误解|误区)(?:的)?(?:说法|理解|观点|答案|想法)?|错|误|"
                           r"wrong|false|incorrect|[✗×❌])\s*\)\s*[.!]?\s*$|"    # "X（错）", "X（这是错误的说法）"
                           r"^\s*\(\s*(?:错|错误|错的|不对|误区?|wrong|false|incorrect|myth|[✗×❌])\s*\)")       # "（错误）X"
# a gap that states no consequence: "这会导致错误的结果" / "这样结果就错了" say what follows from the view, not that it is wrong
_RESULT_WORDS = r"导致|会|造成|引起|产生|出现|得到|算|返回|让|使|变|成|就|才|结果|输出"
_CONSEQUENCE_FREE = r"(?!" + _RESULT_WORDS + r")[^,;:.!?]"
_RESULT_WORD = re.compile(_RESULT_WORDS + r"|\b(?:is why|so|makes?|gives?|produces?|leads? to|output|results?)\b")


# "后来才反应过来不对": a realisation before the rejection makes it a verdict, whatever adverb sits between
_REALISE = re.compile(r"发现|意识到|反应过来|知道|明白|想通|看出|想想|\b(?:realised|realized|noticed|found|saw)\b")
# "这说法根本就不对": a view is the subject, so what is wrong is the view, whatever adverb sits between
_VIEW_NOUN = re.compile(r"说法|想法|观点|看法|这种话|这话|\b(?:claim|idea|view|belief|intuition)\b")
# "说 X 的人没搞清楚" / "They are wrong": a person who is wrong is a verdict on their view
_PERSON_END = re.compile(r"(?:的人|他们?|她们?|作者|同学|室友|\b(?:they|he|she|people)(?: are| is| were| was)?)\s*(?:也|都|其实|显然|根本)?\s*$")
# "X 会慢是错的": a copula verdict judges the whole clause before it; only a result noun that is its subject
# ("结果是错的", "输出也是错的", "得到的值是错的") makes it a consequence — "结果都一样是错的" judges "结果都一样"
_RESULT_NOUN = re.compile(r"(?:结果|输出|答案|算出|得到|返回|\b(?:output|results?|answers?)\b)(?:来)?(?:的)?[^,;:的]{0,2}是\s*$")


def _rejects(t: str):
    """The first rejection in ``t`` that is not a consequence ("结果就错了", "会导致错误", "the output is wrong")."""
    for m in _REJECTS.finditer(t):
        if _VERDICT_WORD.match(t, m.start()):
            return m
        window = re.split(r"[,;:()]", _tail(t[:m.start()], 8))[-1]     # its own clause, 8 words back
        if _IF_OPENER.search(window):
            continue          # "这一点要是搞反了，后面就全错了" supposes the mistake, it does not judge the view
        copula = window.rstrip().endswith("是") and not window.rstrip().endswith(("就是", "才是"))
        if _REALISE.search(window) or _PERSON_END.search(window) or _VIEW_NOUN.search(window) or \
                not (_RESULT_NOUN.search(window.rstrip()) if copula else _RESULT_WORD.search(window)):
            return m
    return None


# a verdict on "this" right after the view, in the sentence's last clauses or the next sentence's opening:
# "X——这是我以前的理解，现在看是错的", "X。以上是错误示范。", "X. This answer is wrong."
_THIS_VERDICT = re.compile(
    r"^\s*(?:但|可|可是|不过|but\s+)?(?:这(?![样时么里儿])|那(?![样时么里儿])|以上|上面|上述|该|它)(?:个|种|句|条|段|些)?"
    r"(?:话|说法|想法|理解|观点|看法|答案|结论|解释|印象|都)?(?:其实|实际上|显然)?(?:是|就是)?"
    r"(?:" + _CONSEQUENCE_FREE + r"){0,12}(?:[,;:]\s*(?:" + _CONSEQUENCE_FREE + r"){0,8})?(?:" + _REJECTS.pattern + r")|"
    r"^\s*(?:but\s+)?(?:this|that|the above|which|it)(?: (?:answer|view|idea|claim|statement|explanation|reading|belief))?"
    r"(?:'s| is| was| turns out to be| turned out to be) (?:(?:simply|just|plainly|a|an|the|common|classic|typical|tempting|popular|"
    r"natural|but|and|very|quite|totally|completely)\s+){0,4}(?:wrong|false|incorrect|a myth|a misconception|mistaken|a mistake|an error|"
    r"not (?:right|true|correct))\b|"
    r"^\s*(?:but\s+)?(?:this|that|it)(?:'s not| is not| isn't| was not| wasn't)(?: (?:so|true|the case|what happens|how it works))?\s*(?:[:;,.!—-]|$)")


def _verdict_on_this(t: str) -> bool:
    """``t`` opens with a verdict on "this" view, not a supposed one ("这一点要是搞反了" supposes the mistake)."""
    m = _THIS_VERDICT.match(t)
    return bool(m) and not _IF_OPENER.search(t, 0, m.end())


_DISBELIEVE = re.compile(r"(?:别|不要|千万别|千万不要|不能)(?:信|相信|以为|认为|觉得|听信|写成|说成|答成|理解成|当成)|(?:不|并不)(?:同意|赞同|认同|赞成)|反对|\bdisagree\b|误(?:会|解)了?\s*,?\s*(?:以为|认为|觉得)|\b(?:don'?t|do not|never) (?:believe|trust|assume)\b|\bnot convinced\b|\b(?:don'?t|do not|never) fall for\b|\bbeware of\b|"
                         r"\b(?:it is|it's|it would be|would be|it'd be)\s+(?:wrong|false|incorrect|a mistake|misleading)\s+to\s+(?:say|think|claim|assume|believe)\b")


_VERDICT = re.compile(r"(?:但|可|可是|其实|实际上|事实上|不过)?\s*(?:仔细[^,;:]{0,8}?|细想|再想想)?\s*"
                      r"(?:经不起推敲|站不住(?:脚)?|说不通|不成立|是错的|并不成立|并不是(?:这样|这么回事)?|并非如此|不是这么回事)\s*$|"
                      r"^\s*(?:a|an)?\s*(?:[a-z]+\s+){0,3}(?:but\s+)?(?:wrong|false|incorrect|mistaken|misleading)\s+"
                      r"(?:conclusion|idea|claim|view|answer|belief|explanation|reading|intuition)\b")
_NOUN_VERDICT = re.compile(
    r"(?:这|那)(?:种|个|样的|类)?(?:说法|想法|理解|观点|看法|解释|结论|认识|思路|答案|答法|写法)\s*(?:其实|实际上|显然|完全|本身)?"
    r"(?:是|就是|会被|要被|被)?\s*"
    r"(?:" + _REJECTS.pattern + r")[^,;:]{0,4}\s*[.!]?\s*$")
_DENIED_OPEN = re.compile(r"^\s*(?:但|可|其实|实际上)?\s*(?:并不是|并非|绝不是|绝非|不是说|与其说)|"
                          r"^\s*(?:it is not|it's not|it isn't) (?:true |the case )?that\b|^\s*not because\b")
# "X——我一度这么认为" / "X, or so I used to think": the writer's own view, in the past
_USED_TO = re.compile(r"(?:我|我们)(?:以前|之前|曾经|一度|原来|本来|起初|一开始)(?:也)?(?:是)?(?:这么|这样)(?:认为|想|以为|觉得|理解)(?:过|的)?\s*[.!]?\s*$|"
                      r"\b(?:or so )?(?:i|we) used to (?:think|believe)(?: so| that| this)?\s*[.!]?\s*$|\bi once thought so\b")
_DEMONSTRATIVE = re.compile(r"(?:这|那|它)|\b(?:this|that|which|it)\b")


def reported_and_rejected(text: "Text", span: "Span", at: int) -> bool:
    """The view found at ``at`` of ``span`` is someone's (or one's own earlier) view that the answer rejects."""
    s = text.norm[span.start:span.end]
    before, after = s[:at], s[at:]
    if _OPPOSITE_VIEW.search(after):
        return False          # "我的结论是 X，网上那种正好相反的说法是不对的": the verdict is on the opposite view
    if _DISBELIEVE.search(before) or _LABELLED_WRONG.search(before):
        return True           # "千万别以为 X", "如果有人告诉你 X，别信", "有一种错误说法：X"
    denied = _DENIED_OPEN.match(s)
    if denied and at < min([m.start() for m in re.finditer(r"[,;]|不如", s) if m.start() > denied.end()] + [len(s)]):
        return True           # "并不是 X，而是 Y" / "与其说 X，不如说 Y": the opening clause's view is denied
    label = _LABEL_OPEN.match(s)
    if label and label.end() <= at or _MARKED_WRONG.search(s) or _MARKED_DOWN.search(after):
        return True           # "…（错）", "陷阱选项“X”，选它的人全被扣了分": a mark-down judges the view, whoever held it
    clauses = re.split(r"[,;:—-]", s)
    last = re.sub(r"^(?:and|but|yet)\s+", "", clauses[-1].strip())     # "…, and it doesn't hold"
    if last and len(last) < len(s) and (_DEMONSTRATIVE.match(last) and _rejects(last) or _VERDICT.match(last)):
        return True           # "X——这是我最开始的错误想法" / "X，其实经不起推敲": a closing verdict on the sentence
    if _NOUN_VERDICT.search(last) or _verdict_on_this(last) or _USED_TO.search(last):
        return True           # "X这种想法是错误的" / "X, but that's a mistake"
    if len(clauses) > 2 and _verdict_on_this(",".join(clauses[-2:]).strip()):
        return True           # "X——这是我以前的理解，现在看是错的"
    nxt = [b for a, b in text.sentences if a >= span.end]
    following = text.norm[span.end:nxt[0]] if nxt else ""
    if _verdict_on_this(following.lstrip(" 。.!?;\n")[:40]):
        return True           # "X。以上是错误示范。" / "X. This answer is wrong."
    if not _ATTRIBUTED.search(before) and not _ATTRIBUTED.search(after[:8]):
        return False
    if _rejects(after) or _DISBELIEVE.search(after):
        return True
    head = following.lstrip(" 。.!?;\n")
    if (_OTHERS.search(before) or _OTHERS.search(after[:8])) and not _ENDORSED.search(before) and \
            (_CONTRAST.search(after) or _CONTRAST.match(head)):
        return True           # "有人觉得 X，但实际上 Y" / "Some people say X. In fact, Y": another's view, then the contrast
    return bool(_rejects(_head(head, 24)))


_OTHERS = re.compile(_SOMEONE_ELSE)
_OPPOSITE_VIEW = re.compile(r"(?:相反|反过来|另一种|另外一种|别的|其他)的?\s*(?:说法|想法|观点|看法|理解|结论)|"
                            r"\b(?:the )?(?:opposite|other|contrary) (?:view|claim|idea|belief|answer)s?\b")
# "老师讲得没错，X，但…": another's view the student agrees with is the student's own
_ENDORSED = re.compile(r"没错|(?:说|讲|写)得(?:很)?对|(?:说|讲)的(?:很)?对|正如|(?<![不])(?:同意|赞同)|\b(?:as [\w ]{0,20}(?:says|said|puts it)|agree|rightly)\b")
_MARKED_DOWN = re.compile(r"(?<![没不未])(?<!没有)(?<!不会)(?:" + _VERDICT_WORD.pattern + ")")
# a contrast after another's view (in its sentence, or opening the next one) answers it
_CONTRAST = re.compile(r"\s*(?:[,;:]\s*)?(?:其实|实际上|事实上|但是?|然而|可是|不过|而是|恰恰|"
                       r"\b(?:actually|in fact|in reality|but|however|instead)\b)")


def _tail(t: str, n: int) -> str:
    """The last ``n`` words of ``t``, and what follows them."""
    starts = [m.start() for m in _GAP_UNIT.finditer(t)]
    return t[starts[-n]:] if len(starts) >= n else t


def _head(t: str, n: int) -> str:
    """The first ``n`` words of ``t`` (a Chinese character is a word): "I explained why that's incorrect" is as near
    as "我跟他解释了为什么不对"."""
    ends = [m.end() for m in _GAP_UNIT.finditer(t)]
    return t[:ends[n - 1]] if len(ends) >= n else t


_BUT = re.compile(r"但是|但|然而|不过|可是|\bbut\b|\bhowever\b")
_PRONOUN = re.compile(r"它们?|(?:^|(?<=[,;:]))\s*(?:it|this)\b")


def _anaphora(part: Part, text: Text, span: Span, s: str) -> List[PartMatch]:
    """"FlashAttention 快的原因是…。它是一种近似算法": a 它 / clause-initial "it" stands for the
    first part of an asserted pattern when the answer named that part before it."""
    out = []
    bounds = clause_bounds(s)
    starts = [a for a, _ in text.sentences if a <= span.start]
    since = starts[-2] if len(starts) >= 2 else 0          # the previous sentence or this one
    for m in _PRONOUN.finditer(s):
        # "它们拿什么数来算都无所谓——但是读的时候照样不能越界": the sentence itself denies the referent's view
        but = _BUT.search(s, m.end())
        if but and any(pm.negated for pm in part_matches(part, s[but.end():])):
            continue
        # a pronoun deep inside a sentence, after clauses of its own, names something of that sentence: in
        # "原地调用时 out 就是 inp，…，所以它一定是错误" 它 is not what the previous sentence was about
        # (one adverbial clause before it, "但是为了保持一致，它们也计入平均", still leaves it the subject)
        before = [x for x in bounds if x <= m.start()] + [m.start()]
        mid = sum(1 for x, y in zip(before, before[1:]) if units(s[x:y]) >= 3) >= 2
        if _IF_OPENER.search(s, 0, m.start()):
            continue      # "If HS were tiny, e.g. 1, it becomes a normal transpose": "it" is the supposed case
        if part.regex.search(text.norm, span.start if mid else since, span.start + m.start()):
            cs = max(x for x in bounds if x <= m.start())
            neg = _negation_at(s, m.start(), cs)
            out.append(PartMatch(m.start(), m.end(), neg >= 0, False, neg))
    return sorted(out, key=lambda x: x.start)


_ASIDE = re.compile(r"\([^()]*\)")


def gap_units(s: str, a: int, b: int, span: Span) -> int:
    """Words between two parts of a pattern at ``s[a:b]``.  An aside in parentheses does not separate
    what it sits between ("原地调用（gelu_forward(x, x, n)，推理时很常见）时…"), and a sentence that
    continues the one before it ("…S 是线程总数。这样一来…") links to that sentence as a whole, so
    across the boundary only the words of the continuing sentence count."""
    if span.kind == "window" and a < span.first_end - span.start <= b:
        a = span.first_end - span.start
    gap = s[a:b]
    for _ in range(3):                                        # nested asides
        gap = _ASIDE.sub(" ", gap)
    return units(gap)


def _in_order(pattern: Sequence[Part], ms: List[List[PartMatch]], span: Span, span_text: str,
              nearest: bool = False) -> Optional[int]:
    """Start of the earliest in-order match of the pattern's parts (greedy by earliest end), or None.
    Each occurrence of the first part is tried in turn: "m_new 取两边的最大值：……，m_o − m_new 都 <= 0"
    links its second mention of m_new to "<= 0" when the first mention is too far from it."""
    if len(pattern) < 2 or len(ms[0]) < 2:
        return _in_order_from(pattern, ms, span, span_text, nearest)
    for m0 in ms[0]:
        first = _in_order_from(pattern, [[m0]] + list(ms[1:]), span, span_text, nearest)
        if first is not None:
            return first
    return None


# a clause that opens with a subject of its own before its number ("朴素版是 12 字节", "the naive one moves 12 bytes"),
# not with a total or a restatement ("一共 12 字节", "所以是 12 字节", "每元素 12 字节")
_OWN_SUBJECT = re.compile(
    r"\s*(?!一共|总共|共|合计|加起来|也就是|即|就是|所以|因此|于是|那么|每|总|算下来|=|so\b|that\b|which\b|in total\b|total\b|per\b|each\b|it\b)"
    r"(?:[\u4e00-\u9fff]{2,6}|[a-z][a-z0-9_-]*(?:\s+[a-z][a-z0-9_-]*){0,2})\s*(?:的)?\s*"
    r"(?:是|为|要|需要|只要|只有|有|只读|读|写|搬|\bis\b|\bare\b|\bneeds?\b|\bmoves?\b|\btakes?\b|\bhas\b|\bgets?\b)\s*(?:约|大约|about|only|just)?\s*$")


def _owned_elsewhere(s: str, after: int, at: int) -> bool:
    """The number at ``at`` lies in a later clause than ``after`` that gives it to a subject of its own."""
    starts = [b for b in clause_bounds(s) if after < b <= at]
    return bool(starts) and bool(_OWN_SUBJECT.fullmatch(s, starts[-1], at))


def _in_order_from(pattern: Sequence[Part], ms: List[List[PartMatch]], span: Span, span_text: str,
                   nearest: bool = False) -> Optional[int]:
    pos, first, prev = 0, None, None
    for i, (part, cands) in enumerate(zip(pattern, ms)):
        ok = [m for m in cands if m.start >= pos and not (i == 0 and m.compared)]
        if i == 0 and span.kind == "window":
            ok = [m for m in ok if span.start + m.start < span.first_end]
        if i == len(pattern) - 1 and span.asked:
            ok = [m for m in ok if span.start + m.start >= span.first_end]
        if part.regex is None and (nearest or any(n.other for n in part.numbers)):
            ok = ok[:1]      # what is asserted about X is the nearest number after X
            # unless a later clause gives it to a subject of its own: "三遍 kernel 的访存最多，朴素版是 12 字节"
            if ok and prev is not None and _owned_elsewhere(span_text, prev.end, ok[0].start):
                ok = []
        ok = [m for m in ok if m.value_ok and _polarity_ok(part, m, prev)
              and (first is None or gap_units(span_text, pos, m.start, span) <= MAX_GAP)]
        if not ok:
            return None
        m = min(ok, key=lambda x: x.end)
        pos, prev = m.end, m
        first = m.start if first is None else first
    return first


_CONSEQUENCE = re.compile(r"\s*(?:所以|因此|因而|从而|于是|导致|就会|才会|结果|进而|以致|使得|\bso\b|\bthus\b|\bhence\b|"
                         r"(?:是|就是|正是)?因为|是由于|\bbecause\b|"      # "X 之所以快，是因为 Y": Y is what X is said to rest on
                         r"\btherefore\b|\bwhich (?:means|makes|causes|gives)\b)")


def _in_one_clause(pattern: Sequence[Part], ms: List[List[PartMatch]], span: Span, s: str,
                   consequence: bool = False) -> Optional[int]:
    """An asserted relation sits in one clause, or in a clause and the consequence that follows it
    ("每个线程读的是连续地址，所以访问是合并的": the 所以 clause says what the first one causes)."""
    bounds = clause_bounds(s) + [len(s) + 1]
    ranges = list(zip(bounds, bounds[1:]))
    if consequence:
        ranges += [(a, c) for (a, b), (_, c) in zip(ranges, ranges[1:]) if _CONSEQUENCE.match(s, b)
                   # "步长要是写小了，会有元素被跳过": the clause after a conditional's antecedent is its consequence
                   or _IF_OPENER.search(s, a, b) and not _IF_OPENER.search(s, b, c)]
    for a, b in ranges:
        sub = [[m for m in cands if a <= m.start < b] for cands in ms]
        first = _in_order(pattern, sub, span, s)
        if first is not None:
            return first
    return None


def _reversed(pattern: Sequence[Part], ms: List[List[PartMatch]], s: str) -> Optional[int]:
    """"B because A" for a two-part pattern [A, B]."""
    for b in ms[1]:
        if not (b.value_ok and _polarity_ok(pattern[1], b)):
            continue
        for a in ms[0]:
            if b.end <= a.start and not a.compared and a.value_ok and _polarity_ok(pattern[0], a) \
                    and _BECAUSE.search(s[b.end:a.start]):
                return b.start
    return None
