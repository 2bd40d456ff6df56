"""Text normalisation shared by claim matching, the GPU-claim veto and the term counts.

One function, ``normalise``, turns an answer as students write it into one canonical form:
written Cantonese function words as Mandarin (係 -> 是, 冇 -> 没有, 喺 -> 在),
traditional -> simplified Chinese (OpenCC ``tw2sp``: characters *and* Taiwan phrases such as
執行緒 -> 线程, 暫存器 -> 寄存器, 溢位 -> 溢出), full-width -> half-width (NFKC), one spelling for
ε / ∞ / ≤ / × / → / √, LaTeX and markdown markup stripped, Chinese numerals before a measure
word as digits (三遍 -> 3遍), A-not-A questions as 是否 (会不会 -> 是否会), English contractions expanded, lower case.  Rubric paraphrases go
through the same function, so both sides always meet in the same form.

``sentences`` / ``clauses`` split normalised text; ``tokens`` segments it with jieba and the
course dictionary (course_terms.txt: CUDA terms jieba would otherwise cut apart).
"""
from __future__ import annotations

import functools
import logging
import re
import unicodedata
from pathlib import Path
from typing import List, Tuple

_HERE = Path(__file__).resolve().parent

# Before NFKC: superscripts would otherwise become plain digits (x² -> x2, 10⁻⁵ -> 10-5).
_SUPERSCRIPT = str.maketrans({"⁰": "0", "¹": "1", "²": "2", "³": "3", "⁴": "4", "⁵": "5", "⁶": "6",
                              "⁷": "7", "⁸": "8", "⁹": "9", "⁻": "-", "⁺": "+"})
_SUP_RUN = re.compile(r"[⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺]+")

# One spelling per symbol (after NFKC).  Order matters only where one is a prefix of another.
_SYMBOLS = [
    (r"\\(?:var)?epsilon\b|\b(?:var)?epsilon\b|[εϵ]", "eps"),
    (r"\\infty\b|∞", "inf"),
    (r"[−–—‒﹣]", "-"),
    (r"\\(?:leq?|leqslant)\b|[≤⩽≦]", "<="),
    (r"\\(?:geq?|geqslant)\b|[≥⩾≧]", ">="),
    (r"\\neq?\b|≠", "!="),
    (r"\\approx\b|≈|≃", "~"),
    (r"\\(?:times|cdot)\b|[×·∙⋅]", "*"),
    (r"\\(?:to|rightarrow|Rightarrow|longrightarrow|Longrightarrow|implies)\b|[⇒⟹⟶➜➔⇨]|->|=>", "→"),
    (r"√\s*([a-z0-9_.]+)", r"sqrt(\1)"),      # √ε -> sqrt(eps) (after ε -> eps above)
    (r"√", "sqrt"),
    (r"…+|\.{3,}", "…"),
]
_SYMBOL_RES = [(re.compile(p), r) for p, r in _SYMBOLS]

# Course terms with a second spelling OpenCC leaves alone (Taiwan / Hong Kong usage, a common variant):
# one spelling, so a rubric paraphrase lists each term once.
_VARIANTS = {"规约": "归约", "共用内存": "共享内存", "共享存储器": "共享内存", "全域内存": "全局内存", "线程区块": "线程块",
             "暂存器": "寄存器", "执行绪": "线程", "溢位": "溢出", "快取": "缓存", "位元组": "字节", "存取": "访问",
             "频宽": "带宽", "效能": "性能", "値": "值",          # 値: the Japanese form of 值 (OpenCC keeps it)
             "结合率": "结合律"}                  # a common homophone typo (率 / 律 are both lǜ)
_VARIANT_RE = re.compile("|".join(map(re.escape, sorted(_VARIANTS, key=len, reverse=True))))

# Written Cantonese (Hong Kong students write it with traditional characters): its function words
# as Mandarin, before OpenCC (which would turn 係 into 系 and 嗰 into a rare character).  Only
# characters Mandarin does not use this way; 關係 / 係數 keep their 係.
_CANTONESE = [(r"(?<![關关聯联])係(?!數|数)", "是"), (r"冇", "没有"), (r"喺", "在"), (r"嘅", "的"), (r"咗", "了"),
              (r"嗰", "那"), (r"佢", "它"), (r"啲", "些"), (r"唔", "不"), (r"咁", "这样"), (r"仲(?!裁)", "还"),
              (r"入面", "里面"), (r"出面", "外面"), (r"慳", "省"), (r"擺", "放"), (r"攞", "拿"), (r"睇", "看")]
_CANTONESE_RES = [(re.compile(p), r) for p, r in _CANTONESE]
# Traditional words whose Taiwan-phrase conversion drifts from the simplified word a rubric lists: 執行 (run code)
# would become 运行 and 座標 stay 座标, while the simplified answer says 执行 / 坐标
_TW_KEEP = [(re.compile(r"執行(?!緒)"), "执行"), (re.compile(r"座標|座标"), "坐标"), (re.compile(r"位元[組组]"), "字节")]
# 位元 is a Taiwan word for "bit", which the converter rewrites wherever it sees it, also inside 单位元 (identity
# element) and 位元素 ("高位元素"); those keep their 位 through the conversion
_TW_GUARD = re.compile(r"(?<=[单單])位(?=元)|位(?=元素)")
_GUARDED = "\ue001"
# interjections and fillers that open a sentence ("嗯，…", "就是说，…", "emm, …"): hesitation, not content
_FILLER = re.compile(r"(?:(?<=[。！？?!;；\n])|^)\s*(?:嗯+|呃+|额+|emm+|um+|uh+|就是说|我想想|怎么说呢)\s*[,，…]+\s*", re.I)
# sentence-final particles of chat-style Chinese ("做三遍嘛，", "会溢出啊。"): tone, not content
_PARTICLE = re.compile(r"(?<=[\u4e00-\u9fff\w)\]])(?:嘛|啊|呀|吧|呢|哦|喔|哈|啦|咯|噢)+(?=\s*(?:[,;:.!?。！？…]|$))")

_CN_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7,
              "八": 8, "九": 9}
# A Chinese numeral counts only before a measure word: 三遍 -> 3遍, 十六字节 -> 16字节; 一旦 / 一致 stay.
_CN_NUM = re.compile(r"(?<![零〇一二两三四五六七八九十百])(?![零〇][^零〇一二两三四五六七八九十百])"
                     r"([零〇一二两三四五六七八九十百]+)(?=\s*(?:遍|次|个|字节|位|倍|轮|步|行|列|级|阶段|种|份|"
                     r"条|趟|组|块|维|层|字|元素|kernel|warp|block|线程))")

_ONE_NOT_COUNT = set("同每任某哪唯另这那")

_CONTRACTIONS = [(r"\bcan't\b|\bcannot\b", "can not"), (r"\bwon't\b", "will not"), (r"\bshan't\b", "shall not"),
                 (r"\b(\w+)n't\b", r"\1 not"), (r"\bit's\b", "it is"), (r"\bthat's\b", "that is")]
_CONTRACTION_RES = [(re.compile(p, re.I), r) for p, r in _CONTRACTIONS]


@functools.lru_cache(maxsize=1)
def _opencc():
    import opencc
    return opencc.OpenCC("tw2sp")


def _cn_number(s: str) -> int:
    if s.strip("零〇十百") == "" and "十" not in s and "百" not in s:
        return 0
    if "百" not in s and "十" not in s:          # digit by digit: 二四 -> 24 (rare, but unambiguous)
        return int("".join(str(_CN_DIGITS[c]) for c in s))
    total, cur = 0, 0
    for ch in s:
        if ch in _CN_DIGITS:
            cur = _CN_DIGITS[ch]
        elif ch == "十":
            total += (cur or 1) * 10
            cur = 0
        elif ch == "百":
            total += (cur or 1) * 100
            cur = 0
    return total + cur


def _strip_latex(t: str) -> str:
    for _ in range(3):      # nested \frac{\sqrt{a}}{b}
        t = re.sub(r"\\d?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}", r"(\1)/(\2)", t)
        t = re.sub(r"\\sqrt\s*\{([^{}]*)\}", r"sqrt(\1)", t)
    t = re.sub(r"\\(?:mathbb|mathrm|text|textbf|textit|operatorname|mathbf|mathit|texttt|mathtt)\s*\{([^{}]*)\}",
               r"\1", t)
    t = re.sub(r"\\(?:left|right|big|Big|bigg|displaystyle|quad|qquad|,|;|!|:)", " ", t)
    t = re.sub(r"\^\{([^{}]*)\}", r"^\1", t)
    t = re.sub(r"_\{([^{}]*)\}", r"_\1", t)
    t = re.sub(r"\\(sum|max|min|exp|log|ln|sqrt|mu|sigma|gamma|beta|alpha|lambda|delta|ldots|cdots|dots)\b",
               r" \1 ", t)
    t = re.sub(r"\\([a-zA-Z]+)", r" \1 ", t)
    return t.replace("$", " ").replace("\\{", "{").replace("\\}", "}")


def _strip_markdown(t: str) -> str:
    t = re.sub(r"```[a-zA-Z0-9_+-]*\n?", " ", t)
    # links / images -> text; a target is a URL or path (no spaces, no Chinese): "tile[tx][ty+j]（按列读）"
    # is an index followed by an aside once NFKC has made its parenthesis ASCII, not a link
    t = re.sub(r"!?\[([^\]]*)\]\([^)\s\u4e00-\u9fff]*\)", r"\1", t)
    t = re.sub(r"</?(br|p|div|span|b|i|u|em|strong|sup|sub|code|pre|font|li|ul|ol|img|details|summary|mark)"
               r"(\s[^<>\n]*)?/?>", " ", t, flags=re.I)                           # tags (not static_cast<float>)
    t = t.replace("`", " ")
    t = re.sub(r"(?<![\w*])(\*\*|~~)(?=\S)(.+?)(?<=\S)\1(?![\w*])", r"\2", t)   # **bold**, not 2**24
    t = re.sub(r"(?<![\w*])\*(?!\s)([^*\n]+?)(?<!\s)\*(?![\w*])", r"\1", t)        # *emphasis*, not a * b
    t = re.sub(r"(?<!\w)__([^\s_][^_\n]*?[^\s_]|[^\s_])__(?!\w)", r"\1", t)      # __bold__, not __syncthreads
    t = re.sub(r"(?m)^\s{0,3}(#{1,6}|>+|[-*+]|\d+[.)])\s+", "", t)               # headings, quotes, list markers
    return t


def normalise(text: str) -> str:
    """Canonical form of an answer or a rubric paraphrase (see the module docstring)."""
    t = _SUP_RUN.sub(lambda m: "^" + m.group(0).translate(_SUPERSCRIPT), text or "")
    t = unicodedata.normalize("NFKC", t)
    for rx, rep in _CANTONESE_RES:
        t = rx.sub(rep, t)
    for rx, rep in _TW_KEEP:
        t = rx.sub(rep, t)
    t = _opencc().convert(_TW_GUARD.sub(_GUARDED, t)).replace(_GUARDED, "位")
    t = _VARIANT_RE.sub(lambda m: _VARIANTS[m.group(0)], t)
    t = _PARTICLE.sub("", t)
    t = _FILLER.sub("", t)
    t = _strip_markdown(t)
    for rx, rep in _SYMBOL_RES:      # before LaTeX stripping, which would turn \epsilon into a bare word
        t = rx.sub(rep, t)
    t = _strip_latex(t)
    # "同一个" / "每一个" / "这一个" name one thing, they count nothing ("同一个基准" = "同一基准")
    # after a letter or digit the count is a word of its own: "float4一条" -> "float4 1条", not "float41条"
    t = _CN_NUM.sub(lambda m: m.group(0) if m.group(1) == "一" and m.start() and t[m.start() - 1] in _ONE_NOT_COUNT
                    else (" " if m.start() and re.match(r"[a-z0-9_]", t[m.start() - 1], re.I) else "")
                    + str(_cn_number(m.group(1))), t)
    t = re.sub(r"(\d+(?:\.\d+)?)\s*的\s*([-+]?\d+)\s*次方", r"\1^\2", t)     # 2 的 24 次方 -> 2^24
    # an A-not-A question negates nothing: "它会不会是负数" asks, it does not say "不会是负数"
    t = re.sub(r"(会|是|能|有|要|可|用|对)(?:不|没)\1", r"是否\1", t)
    for rx, rep in _CONTRACTION_RES:
        t = rx.sub(rep, t)
    # English comparisons as symbols, so "smaller than 1e-7" meets the same paraphrase as "< 1e-7"
    t = re.sub(r"\b(?:is |are |was )?(?:smaller|less|lower) than\b", " < ", t, flags=re.I)
    t = re.sub(r"\b(?:is |are |was )?(?:greater|larger|bigger|higher) than\b", " > ", t, flags=re.I)
    t = t.replace("{", " ").replace("}", " ")
    t = re.sub(r"[ \t\u3000\xa0]+", " ", t)
    return t.lower().strip()


# ----------------------------------------------------------------------------- splitting

_SENTENCE_END = re.compile(r"(?:[。！？?;；\n]|!(?!=))+|(?<!\bi\.e)(?<!\be\.g)(?<!\bvs)(?<!\betc)(?<!\bcf)\.(?=\s|$)")   # not "i.e." / "e.g."
_CLAUSE_END = re.compile(r"[,，:：、]|\bbut\b|\bwhile\b|\bwhereas\b|\bhowever\b|但是|但|而是|然而")


def sentences(norm: str) -> List[Tuple[int, int]]:
    """(start, end) offsets of the sentences of normalised text (stripped, non-empty)."""
    out, pos = [], 0
    for m in list(_SENTENCE_END.finditer(norm)) + [None]:
        end = m.start() if m else len(norm)
        a, b = pos, end
        while a < b and norm[a].isspace():
            a += 1
        while b > a and norm[b - 1].isspace():
            b -= 1
        if b > a:
            out.append((a, b))
        pos = m.end() if m else len(norm)
    return out


def _paren_spans(s: str) -> List[Tuple[int, int]]:
    """(start, end) of each outermost balanced pair of parentheses (full-width ones are ASCII after NFKC)."""
    out, stack = [], []
    for i, ch in enumerate(s):
        if ch == "(":
            stack.append(i)
        elif ch == ")" and stack:
            a = stack.pop()
            if not stack:
                out.append((a, i + 1))
    return out


def clause_bounds(sentence: str) -> List[int]:
    """Offsets where a new clause starts inside one sentence (0 first).  An aside in parentheses belongs to the
    clause it sits in, its commas included: "X(比如 a、b,c)导致 Y" is one clause."""
    parens = _paren_spans(sentence) if "(" in sentence else []
    return [0] + [m.end() for m in _CLAUSE_END.finditer(sentence)
                  if not any(a < m.start() < b for a, b in parens)]


def squash(text: str) -> str:
    """Letters and digits only (for copy detection and blank checks)."""
    return re.sub(r"[\W_]+", "", text)


# ----------------------------------------------------------------------------- segmentation

@functools.lru_cache(maxsize=1)
def _jieba():
    import jieba
    jieba.setLogLevel(logging.WARNING)
    tok = jieba.Tokenizer()
    tok.load_userdict(str(_HERE / "course_terms.txt"))
    return tok


def tokens(norm: str) -> List[str]:
    """Words of normalised text (jieba, course dictionary); punctuation and spaces dropped."""
    return [w for w in _jieba().lcut(norm) if w.strip() and not re.fullmatch(r"[\W_]+", w)]
