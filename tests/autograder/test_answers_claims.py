"""autograder.answers: claims matched with direction, polarity, numbers and quotes (one small spec)."""
from __future__ import annotations

import pytest

from autograder.answers import SpecError, claims as cm, spec as sp, validate

SPEC = {
    "parts": {
        "zero_row": ["全零行", "zero row"],
        "removed": ["不用", "去掉", "without"],
        "mean_sub": ["减均值", "mean subtraction"],
        "three": ["三遍", "three-pass"],
        "welford": ["welford"],
        "fast": ["更快", "faster"],
    },
    "claims": [
        {"id": "row_nan", "says": [["zero_row", "nan"]]},
        {"id": "no_overflow", "says": [["zero_row", "not:overflow"]]},
        {"id": "drops_mean", "says": [["removed", "mean_sub"]]},
        {"id": "bytes", "says": [["three", {"num": 16, "unit": "bytes"}]],
         "contradicts": [["three", {"num_not": 16, "unit": "bytes"}]]},
        {"id": "fp16_max", "says": [[{"num": 65504, "tol": 0.01}]]},
        {"id": "mantissa", "says": [[{"num": 2 ** 24}]]},
        {"id": "eps", "says": [[{"num": 1e-5}]]},
        {"id": "welford_fast", "says": [["welford", "fast"]]},
        {"id": "no_mean_fast", "says": [["not:mean_sub", "fast"]]},
    ],
}
COMPILED = sp.compile_spec(SPEC)


def holds(claim_id, text, which="says"):
    claim = next(c for c in COMPILED.claims if c.id == claim_id)
    t, cache = cm.analyse(text), {}
    hits = [cm.find(p, t, cache, assertion=which == "contradicts") for p in getattr(claim, which)]
    return next((h for h in hits if h), None)


@pytest.mark.parametrize("text, found", [
    ("全零行的输出是 NaN", True),
    ("输出是 NaN，因为这是全零行", True),                  # reversed across "because": direction kept
    ("NaN 出现后，全零行被跳过", False),                   # reversed without a "because": not this relation
    ("全零行。于是输出 NaN", True),                        # the next sentence continues the first
    ("全零行。NaN 另有原因", False),
    ("全零行、NaN", True),                                 # in a term list it is found (it counts only as a term)
    ("the output is NaN when it is a zero row", True),     # "B when A" is "A -> B"
    ("the output is NaN, even when it is a zero row", False),   # a concession is no cause
])
def test_direction(text, found):
    assert bool(holds("row_nan", text)) is found


@pytest.mark.parametrize("text, found", [
    ("全零行不会溢出", True),
    ("全零行会溢出", False),                               # a "not:" part must be negated
    ("全零行不会是 NaN", False),                           # plain parts must not be
    ("没有 eps 时全零行的输出是 NaN", True),                # a negation far before a part does not negate it
    ("RMSNorm 不用减均值", True),                          # a negation inside the previous part belongs to it
    ("RMSNorm 去掉了，但也不减均值", False),                # a negation between the parts negates the later one
])
def test_polarity(text, found):
    claim = "no_overflow" if "溢出" in text else "drops_mean" if "均值" in text else "row_nan"
    assert bool(holds(claim, text)) is found


@pytest.mark.parametrize("text, found", [
    ("不减均值更快", True),                                # the negation of a "not:" part is that part's own
    ("不减均值不会更快", False),                           # a second negation still negates the next part
    ("减均值更快", False),
])
def test_polarity_after_a_negated_part(text, found):
    assert bool(holds("no_mean_fast", text)) is found


def test_comparison_object_is_not_the_subject():
    assert holds("welford_fast", "Welford 更快")
    assert not holds("welford_fast", "两矩法比 Welford 更快")
    assert not holds("welford_fast", "two-pass is faster than welford")


@pytest.mark.parametrize("text, says, contradicts", [
    ("三遍 kernel 每元素 16 字节，朴素版 12 字节", True, False),
    ("三遍 kernel 每元素 12 字节", False, True),
    ("三遍：每次 4 bytes，3 读 1 写共 16 B/元素", True, True),      # policy drops this side number (test below)
    ("three-pass: 16b per element", True, False),
    # round 11: a later clause with a subject of its own owns its number; a total or restatement does not
    ("三遍 kernel 的访存最多，朴素版是 12 字节", False, False),
    ("three-pass reads most, the naive one moves 12 bytes", False, False),
    ("三遍 kernel 读三次写一次，一共 12 字节", False, True),
    ("三遍 kernel 读三次写一次，所以是 12 字节", False, True),
])
def test_numbers_compared_as_numbers(text, says, contradicts):
    assert bool(holds("bytes", text)) is says
    assert bool(holds("bytes", text, "contradicts")) is contradicts


@pytest.mark.parametrize("claim, text", [
    ("fp16_max", "最大 65504"), ("fp16_max", "最大 6.5504e4"), ("fp16_max", "最大 65,504"), ("fp16_max", "约 6.55e4"),
    ("mantissa", "2^24"), ("mantissa", "2**24"), ("mantissa", "2 的 24 次方"), ("mantissa", "16777216"),
    ("eps", "eps = 1e-5"), ("eps", "eps = 10^-5"), ("eps", "eps = 10⁻⁵"), ("eps", "eps = 0.00001"),
])
def test_number_spellings(claim, text):
    assert holds(claim, text)


@pytest.mark.parametrize("claim, text", [("fp16_max", "最大 32768"), ("eps", "eps = 1e-8"), ("mantissa", "2^23")])
def test_other_numbers_do_not_count(claim, text):
    assert not holds(claim, text)


@pytest.mark.parametrize("text, quoted", [
    ("有人说 Welford 更快，其实不对", True),
    ("常有人说 Welford 更快。其实相反", True),
    ("It is a myth that Welford is faster.", True),
    ("很多人误以为 Welford 更快", True),
    ("网上常见一种说法：“Welford 更快”。这句话只对了一小半。", True),
    ("Welford 更快", False),
    ("我认为 Welford 更快", False),                        # the student's own view
    # round 7: written sources, negated frames, a question answered no, hedges inside the view, long quotes
    ("网上有教程写 Welford 更快——错的。", True),
    ("不要以为 Welford 更快。", True),
    ("Don't think that Welford is faster.", True),
    ("Welford 更快？不对。", True),
    ("有人说「其实 Welford 更快」，其实不对。", True),
    ("很多同学以为 Welford 其实更快，这是误解。", True),
    ("常见的误区是：Welford 数学上其实更快。事实上恰恰相反。", True),
    ("我一开始也以为 Welford 更快，但它要多算除法，后来发现不是这样。", True),
    ("“" + "两矩法要读两遍，" * 12 + "所以 Welford 更快”——这句话是错的。", True),
    ("Welford 更快吗？是的，因为它只读一遍。", False),      # a question answered yes: the student's claim
    ("有人说两矩法更准，其实 Welford 更快。", False),        # the view after the rejection is the student's own
    # round 7 (engine): heard-say frames, single quotes, "说反了 / 搞反了"
    ("常听人说'Welford 更快'，这其实说反了。", True),
    ("听说 ‘Welford 更快’，其实搞反了：它要多算除法。", True),
    ("据说 Welford 更快，这是弄反了。", True),
    ("我听说 Welford 更快，后来发现不是这样。", True),
    ("据说 Welford 更快。", False),                          # a hearsay the student does not reject: asserted
])
def test_quoted_to_reject(text, quoted):
    h = holds("welford_fast", text)
    # a quoted view is reported as quoted, or not found at all ("不要以为 Welford 更快": 不 negates it)
    assert (h is not None and not h.quoted) is (not quoted)
    assert h is not None or quoted


@pytest.mark.parametrize("bad, where", [
    ({"claims": []}, "claims"),
    ({"claims": [{"id": "a", "says": [["nope"]]}]}, r"claims\[0\]\.says\[0\]\[0\]: 'nope' is not one of parts"),
    ({"claims": [{"id": "a", "says": [["nan"]], "core": True}]}, r"claims\[0\]\.core"),
    ({"claims": [{"id": "a", "says": [[["re:(unclosed"]]]}]}, "bad regex"),
    ({"claims": [{"id": "a", "says": [[{"num_not": 3}]]}]}, "num_not needs a unit"),
    ({"claims": [{"id": "a", "says": [["nan"]]}], "points": {"full": 2}}, "points"),
    ({"claims": [{"id": "a", "says": [["nan"]]}], "concepts": {}}, "concepts: unknown key"),
    ({"claims": [{"id": "a", "says": [["nan"]]}], "misconceptions": [{"says": [["nan"]]}]}, r"misconceptions\[0\]\.why"),
    ({"parts": {"x": ["x"]}, "claims": [{"id": "a", "says": [[["not:x", "y"]]]}]},
     r"claims\[0\]\.says\[0\]\[0\]\[0\]: 'not:x' in a list of paraphrases is literal"),
])
def test_validate_names_the_key(bad, where):
    with pytest.raises(SpecError, match=where):
        validate(bad)


# round 6 (engine): "!=" is not a sentence end; an English arrow chain of phrases is a link, not keyword soup;
# four or more predicate-free comma-separated noun phrases are bare facts side by side (a list); a 、 item
# with 要 states something; "我以为 X，后来发现…" retracts the student's own earlier view.
@pytest.mark.parametrize("text,kinds", [
    ("n % 4 ≠ 0 → 末尾凑不满 → 要标量尾部", ["prose"]),
    ("misaligned pointer → float4 load faults → fall back to the scalar loop", ["prose"]),
    ("cuda graph kernel launch overhead dominant small shapes memory bound fused", ["list"]),
    ("标准：S、P 写进显存，4T² 个 float，访存受限，O(T²) 显存", ["list"]),
    ("标准实现把 S 写进显存，再读回来，共 4T² 个 float，所以访存受限", ["prose"]),
    ("代价：第二遍要重新算 exp、多读一遍 logits、原地写后 logits 丢了", ["prose"]),
])
def test_round6_span_kinds(text, kinds):
    t = cm.analyse(text)
    assert [s.kind for s in t.spans if s.kind != "window"] == kinds


@pytest.mark.parametrize("text,quoted", [
    ("我一开始以为减最大值会改变结果，后来才发现分子分母同乘一个常数会约掉。", True),
    ("起初我以为 atomicAdd 是确定的，后来看明白了：模拟器按固定顺序执行。", True),
    ("我以为减最大值会改变结果。", False),
    ("我认为减最大值不改变结果，因为分子分母同乘一个常数。", False),
])
def test_round6_retracted_own_view(text, quoted):
    assert bool(cm.analyse(text).quoted) == quoted


# round 7 (engine): an apostrophe inside a word opens no quotation
def test_round7_apostrophe_is_not_a_quote():
    assert not cm.analyse("the row's max is the tile's max, which is wrong to skip").quoted


# round 7 (engine): a 它 deep inside a sentence, after clauses with subjects of their own, names something of
# that sentence, not what the previous sentence was about; at a sentence's start (or after one adverbial
# clause) it still names the previous sentence's subject
@pytest.mark.parametrize("text, found", [
    ("我们用的是 Welford 算法。它会更快。", True),
    ("我们用的是 Welford 算法。但是为了省寄存器，它会更快。", True),
    ("我们用的是 Welford 算法；两矩法要读两遍，三遍 kernel 要读三遍，所以它会更快。", False),
    # round 11: after an if-clause of its own sentence a pronoun stands for the supposed case
    ("我们用的是 Welford 算法。如果换成两矩法，它会更快。", False),
    ("We use Welford. If the row is short, it is faster.", False),
])
def test_round7_pronoun_deep_in_a_sentence(text, found):
    t, cache = cm.analyse(text), {}
    claim = next(c for c in COMPILED.claims if c.id == "welford_fast")
    assert (cm.find(claim.says[0], t, cache, assertion=True) is not None) is found


# round 7 (engine): terms separated by " / " or "|" are a list (a contradiction inside one asserts nothing);
# a formula with one slash is not
@pytest.mark.parametrize("text, kinds", [
    ("两阶段 / atomicAdd / kernel 边界 = 全局同步 / launch 开销 / 不确定性 / 争用 / CAS", ["list"]),
    ("shared memory | bank | 32 路冲突 | padding | occupancy", ["list"]),
    ("var = sq_sum / N - mean * mean，两个几乎相等的大数相减会消减", ["prose"]),
])
def test_round7_slash_lists(text, kinds):
    assert [s.kind for s in cm.analyse(text).spans if s.kind != "window"] == kinds


# round 7 (engine): connective-strung terms continued across semicolons are one chain (each segment with a
# connective is soup); two reasoned halves "因为 A，所以 B；因为 C，所以 D" are not; "leads to" counts as 导致
@pytest.mark.parametrize("text, kinds", [
    ("因为 shared memory 有 bank，所以每一轮要同步，导致 warp 同步；因为 shuffle 是 shared memory 操作，所以也要同步，"
     "但是 warp 内是 SIMT，所以不需要。", ["soup", "soup"]),
    ("因为每个线程只读一遍 x，所以流量减半；因为 exp 只算一次，所以计算也少。", ["prose", "prose"]),
    ("Register tiling is faster because registers are faster, therefore the intensity increases, which leads to "
     "higher occupancy, so bank conflicts disappear.", ["soup"]),
])
def test_round7_connective_chains_across_semicolons(text, kinds):
    assert [s.kind for s in cm.analyse(text).spans if s.kind != "window"] == kinds


# round 7 (engine): a naive view set up to be rejected (表面上看 / 看起来 … 其实), a rejection that limits the view
# (这个想法只在小位置成立), and a rejected quotation that closes a clause takes the clause with it
@pytest.mark.parametrize("text, quoted", [
    ("表面上看 Welford 像是“更快”，其实不是：它要多算除法。", True),
    ("看起来 Welford 更快，其实它每个元素多一次除法。", True),
    ("“Welford 更快”——这个想法只在小数据上成立。", True),
    ("看起来 Welford 更快。", False),                     # no rejection: the student's own view
])
def test_round7_naive_views_rejected(text, quoted):
    h = holds("welford_fast", text)
    assert (h is not None and not h.quoted) is (not quoted)


# round 7 (engine): "位有效数字" is also said of decimal digits (FP32 about 7), which is right
@pytest.mark.parametrize("text, wrong", [
    ("FP32 有 7 位有效数字，算个角度足够了", False),
    ("FP16 只有 3 位有效数字", False),
    ("FP32 有 7 位有效位", True),
    ("FP16 有 16 位有效数字", True),
    # round 11: a limit of exp's argument written after the format is not the format's largest value
    ("FP32 里 exp 的参数上限大约 88.7，exp(100) 是 inf", False),
    ("FP32 的 exp(100) 直接是 inf（上限大约 88.7）", False),
    ("FP32 的最大值是 65504", True),
])
def test_round7_decimal_significant_digits(text, wrong):
    from autograder.answers.facts import false_facts
    from autograder.answers.normalise import normalise
    assert bool(false_facts(normalise(text), lambda pos: False)) is wrong


# round 7 (engine): three or more lines of step notes, none with a verb of claim or a connective, are graded as a
# term list; notes with a reason in them ("→ 因为…" / "所以") or fewer lines are not
@pytest.mark.parametrize("text, listy", [
    ("输入：1 block/行，tid stride 读 → 合并\n累加：local_sum, local_sq_sum (寄存器)\nwarp shfl → smem → warp0 → sum\n"
     "输出：第二遍 y=(x-mean)*inv_std", True),
    ("交错：c0=2p, c1=2p+1\n半分：c0=p, c1=p+D/2\n写反 → 不报错", True),
    ("交错：c0=2p, c1=2p+1\n半分：c0=p, c1=p+D/2\n写反不会报错，因为两种都是合法的旋转", False),
    ("输入：1 block/行 → 合并\n输出：第二遍写回", False),
])
def test_round7_step_notes(text, listy):
    assert (cm.analyse(text).listy_share >= 0.7) is listy


# round 7 (lead): a retracted view rejected with 现在知道 / 完全不是; a term in quotation marks is mentioned, not
# asserted; a negation inside a regex paraphrase's gap negates it, unless the paraphrase opens with it
@pytest.mark.parametrize("text,quoted", [
    ("以前我以为 Welford 更快，现在知道完全不是：它要多算除法。", True),
    ("I used to think Welford is faster, now I know it is slower.", True),
])
def test_round7_retracted_with_now_i_know(text, quoted):
    assert bool(cm.analyse(text).quoted) == quoted


# round 9 (engine): "a common explanation / view is that X — that is not it": a neutral English frame rejected by
# "that's not it / that is not the reason"; the frame alone, unrejected, quotes nothing
@pytest.mark.parametrize("text, quoted", [
    ("A common explanation is that Welford is faster — that's not it; it does an extra division.", True),
    ("The usual view is that Welford is faster, but that is not the reason it is used.", True),
    ("A common explanation is that Welford is faster.", False),
])
def test_round9_common_explanation_rejected(text, quoted):
    h = holds("welford_fast", text)
    assert (h is not None and not h.quoted) is (not quoted)


def test_round7_a_quoted_term_is_mentioned_not_asserted():
    spec = sp.compile_spec({"parts": {"welford": ["welford"], "fast": ["更快"]},
                            "claims": [{"id": "c", "says": [["welford", "not:fast"]],
                                        "contradicts": [["welford", "fast"]]}]})
    pat = spec.claims[0].contradicts[0]
    assert cm.find(pat, cm.analyse("Welford 会更快。"), {}, assertion=True)
    assert not cm.find(pat, cm.analyse("Welford 和“更快”这两个字沾不上边，它只是更准。"), {}, assertion=True)


@pytest.mark.parametrize("text,negated", [
    ("两个部分和不能直接相加", True),
    ("两个部分和可以直接相加", False),
    # round 11: a negation inside an aside that closes within the match is the aside's own
    ("部分和（没有缩放过的那种）直接相加", False),
])
def test_round7_a_negation_the_gap_swallowed(text, negated):
    spec = sp.compile_spec({"parts": {"add": [r"re:部分和.{0,12}直接相加"]}, "claims": [{"id": "c", "says": [["add"]]}]})
    part = spec.claims[0].says[0][0]
    assert [m.negated for m in cm.part_matches(part, cm.normalise(text))] == [negated]


@pytest.mark.parametrize("syn,text", [
    ("exp(m ?- ?m_new)", "exp(m - m_new)"), ("exp(m ?- ?m_new)", "exp(m-m_new)"),
    (r"p ?\+ ?d/2", "p + d/2"), (r"x\[t\]", "x[t]"), ("rsqrtf(0)", "rsqrtf(0)"),
])
def test_light_notation_inside_plain_parentheses_and_escaped_signs(syn, text):
    # " ?" inside plain parentheses is still an optional space; "\+" means the sign itself
    spec = sp.compile_spec({"parts": {"f": [syn]}, "claims": [{"id": "c", "says": [["f"]]}]})
    assert cm.part_matches(spec.claims[0].says[0][0], cm.normalise(text))


def test_light_notation_inside_a_group_and_a_count_after_an_identifier():
    spec = sp.compile_spec({"parts": {"f": ["(32 ?路)?冲突"], "g": ["float4"]}, "claims": [{"id": "c", "says": [["f"], ["g"]]}]})
    assert cm.part_matches(spec.claims[0].says[0][0], cm.normalise("32 路冲突"))
    # "float4一条指令" keeps float4 a word: the count 一条 becomes " 1条", not "float41条"
    assert cm.part_matches(spec.claims[0].says[1][0], cm.normalise("float4一条指令搬 16 字节"))


# round 11: groups nest ("(偏(一点|一些)?|不准)"); a bare | between two words outside any group is a spec error, not
# a literal that silently matches nothing ("|x|" stays an absolute value)
@pytest.mark.parametrize("syn,text", [
    ("结果(会|就)?(偏(一点|一些|差)?|不准)", "结果会偏一点"), ("结果(会|就)?(偏(一点|一些|差)?|不准)", "结果不准"),
    ("must (store|materiali(s|z)e) (the )?probabilities", "must materialize the probabilities"),
    ("|x| > 256", "|x| > 256"),
])
def test_light_notation_nested_groups(syn, text):
    spec = sp.compile_spec({"parts": {"f": [syn]}, "claims": [{"id": "c", "says": [["f"]]}]})
    assert cm.part_matches(spec.claims[0].says[0][0], cm.normalise(text))


@pytest.mark.parametrize("syn", ["导致|造成", "slow|fast"])
def test_a_bare_bar_between_words_is_a_spec_error(syn):
    with pytest.raises(SpecError, match="outside parentheses"):
        sp.compile_spec({"parts": {"f": [syn]}, "claims": [{"id": "c", "says": [["f"]]}]})


@pytest.mark.parametrize("text", ["没有 eps 的话全零行会变成 NaN", "没有 eps → 全零行 → NaN"])
def test_a_negation_ends_at_de_hua_and_at_an_arrow(text):
    # "没有 eps 的话 | 全零行…" negates eps, not what follows the condition
    assert holds("row_nan", text)


# engine: an aside in parentheses, commas included, belongs to the clause it sits in, so a relation asserted around
# it is stated in one clause; a negation inside the aside does not reach out of it
@pytest.mark.parametrize("text", ["Welford（比如 a、b，c）会更快", "Welford (e.g. a, b, c) is faster"])
def test_parenthetical_aside_with_commas_is_one_clause(text):
    claim = next(c for c in COMPILED.claims if c.id == "welford_fast")
    t, cache = cm.analyse(text), {}
    assert cm.find(claim.says[0], t, cache, assertion=True)


def test_negation_inside_an_aside_stays_there():
    assert holds("row_nan", "全零行（padding 不算）NaN")


# engine: a short English paraphrase is a whole word with its inflections (-s / -es / -ed / -er / -ing, a dropped e,
# y -> ies, a doubled consonant); function words and symbols are not inflected ("not" is not "noted")
@pytest.mark.parametrize("syn, hits, misses", [
    ("slow", ["slows", "slowed", "slower", "slowing"], ["slowly", "slowness"]),
    ("use", ["uses", "used", "using"], ["useful"]),
    ("copy", ["copies", "copied", "copying"], []),
    ("stop", ["stopped", "stopping", "stops"], []),
    ("not", [], ["noted", "notes"]),
    ("nan", ["nan"], ["nano", "nanoseconds"]),
    ("reduce", ["reducing", "reduced", "reduces"], []),
])
def test_short_english_paraphrases_keep_their_inflections(syn, hits, misses):
    import re
    rx = re.compile(sp._paraphrase_regex(syn, "t"))
    for w in hits:
        assert rx.search(f"x {w} y"), (syn, w)
    for w in misses:
        assert not rx.search(f"x {w} y"), (syn, w)


# engine: keyword-stuffing shapes read as term lists — six or more 、-enumerated terms framed by one short predicate,
# and terms summed as a formula; an enumeration with a count, a real formula and an arrow chain of claims stay prose
@pytest.mark.parametrize("text, listy", [
    ("warp、shuffle、寄存器、共享内存、合并访问、带宽、归约都会让它更快。", True),
    ("关键是 warp、shuffle、寄存器、共享内存、合并访问、带宽、归约。", True),
    ("速度 = 合并访问 + 带宽 + 寄存器 + 共享内存", True),
    ("fused kernel = kernel fusion + online softmax + in-place + memory-bound", True),
    ("代价是每个线程要记 n、mean、M2 三个数。", False),
    ("每个线程要维护 n、mean、M2、delta、delta2、count 六个量。", False),
    ("y = (x - mean) * rstd * gamma + beta，每行约零均值、单位方差。", False),
    ("全零行 ms = 0 → rsqrtf(0) = inf → 0 × inf = NaN，所以整行变 NaN。", False),
])
def test_stuffing_shapes_are_term_lists(text, listy):
    assert (cm.analyse(text).listy_share >= 0.7) is listy


# round 10 (engine): a question asserts nothing, unless the next sentence answers it yes; a rhetorical one asserts
@pytest.mark.parametrize("text, found", [
    ("Welford 为什么更快？这题问的是原因。", False),
    ("Why is Welford faster? The question asks for the reason.", False),
    ("Welford 更快吗？是的，因为它只读一遍。", True),
    ("难道 Welford 不就是更快吗？", True),
])
def test_round10_a_question_asserts_nothing(text, found):
    assert bool(holds("welford_fast", text)) is found
    assert bool(holds("welford_fast", text, "says")) is found


# round 10: telegraphic notes strung by semicolons are a term list; an update rule spelled as assignments is an
# algorithm, and two or three halves of a thought joined by a semicolon stay prose
@pytest.mark.parametrize("text, listy", [
    ("24 位有效位；ulp 随数值增大；pos·θ 大 → 舍入大；1e5：角度误差 ~5e-3；与位置成正比；double 算角度 + FP32 缓存", True),
    ("m_new = max(m, tile_max)；alpha = e^(m − m_new)；l = alpha·l + Σ p；acc = alpha·acc + Σ p·v；m = m_new", False),
    ("读的值是上一轮别的线程写的；只有栅障保证写完才读", False),
    ("bank conflict，32 个 bank，每个 4 字节，32 路冲突，padding +1，按行写无冲突，occupancy 影响小。", True),
    ("the threads of a warp diverge, the warps of a block stall, the memory of an sm idles, the bandwidth of hbm drops, "
     "the kernel of the lesson slows, the grid of blocks waits.", False),       # English clauses: function words
])
def test_round10_notes_and_bare_terms(text, listy):
    assert (cm.analyse(text).listy_share >= 0.7) is listy


# round 10: English rejections of a reported view
@pytest.mark.parametrize("text, quoted", [
    ("The idea that 'Welford 更快' does not survive a look at the instruction count.", True),
    ("Some notes say 'Welford 更快' - no. It does an extra division per element.", True),
    ("Some tutorials claim Welford is faster, but that is wrong.", True),
    ("Welford is faster, no doubt.", False),
])
def test_round10_english_rejections(text, quoted):
    h = holds("welford_fast", text)
    assert (h is not None and not h.quoted) is (not quoted)


def test_round10_a_claim_counts_in_prose_where_one_of_its_patterns_holds_there():
    # the first pattern holds only in a term list, the second in a sentence: the claim is established in prose
    from autograder.answers import policy
    spec = sp.compile_spec({"parts": {"zero_row": ["全零行"], "nan": ["nan"], "row": ["整行"]},
                            "claims": [{"id": "c", "says": [["zero_row", "nan"], ["row", "nan"]]}],
                            "points": {"full": 1}})
    out = policy.evaluate(spec, cm.analyse("全零行、NaN、inf、eps。rsqrt(0) 是 inf，乘 0 以后整行都是 NaN。"), 2)
    assert out.results[0].hit.span.kind == "prose" and out.points == 2


def test_round10_side_number_exemption_needs_a_number():
    # a contradiction whose number-bearing part matched a word, not a number, is not a "side number": it stands
    from autograder.answers import policy
    spec = sp.compile_spec({"parts": {"neg": ["大负数", {"num": -1000}], "over": ["溢出"], "under": ["下溢"]},
                            "claims": [{"id": "c", "says": [["neg", "under"]], "contradicts": [["neg", "over"]]}],
                            "points": {"full": 1}})
    out = policy.evaluate(spec, cm.analyse("大负数会溢出，大负数也会下溢成 0。"), 2)
    assert out.results[0].status == "contradicted"


@pytest.mark.parametrize("text, listy", [
    ("- shift invariance: the e^{-c} cancels top and bottom -> same softmax for ANY c -> pick c = row max\n"
     "- after subtracting: every exponent <= 0 -> each exp in (0, 1], the max element gives e^0 = 1 -> no overflow\n"
     "- no subtract + big positive: FP32 exp overflows once x > 88.7 -> inf, and inf / inf = NaN -> whole row NaN",
     False),
    ("- 平移不变 → 选 max\n- 指数 ≤ 0 → (0, 1]\n- 不减 → inf → NaN", True),        # Chinese step notes stay notes
    ("所以 fp16 一读进来就变成 FP32，max / exp / sum / 除法全在 FP32 做", False),      # a slash enumeration inside prose
    ("两阶段 / atomicAdd / kernel 边界 / launch 开销 / CAS", True),
])
def test_round10_english_arrow_lines_and_slash_enumerations(text, listy):
    assert (cm.analyse(text).listy_share >= 0.7) is listy


def test_round10_an_english_arrow_chain_with_a_formula_step_is_prose():
    t = cm.analyse("either misaligned → n4 = 0 → everything goes through the scalar grid-stride loop → still correct")
    assert t.spans[0].kind == "prose"


def test_round10_all_parts_named_but_capped_goes_to_review():
    # every asked part is named, one of them only in a note: capped below full, and a person decides
    from autograder.answers import policy
    spec = sp.compile_spec({"parts": {"zero_row": ["全零行"], "nan": ["nan"], "eps": ["eps"], "inside": ["根号里"]},
                            "claims": [{"id": "a", "asks": "a", "says": [["zero_row", "nan"]]},
                                       {"id": "b", "asks": "b", "says": [["eps", "inside"]]}],
                            "points": {"full": 2}})
    out = policy.evaluate(spec, cm.analyse("全零行的输出会变成 NaN，因为 0 乘 inf。eps、根号里。"), 2)
    assert out.points == 1 and out.capped and "notes_capped" in out.review


# round 12: an English consequence without a comma opens with its own subject and a modal; it is asserted, the
# antecedent before it is supposed
def test_round12_english_if_without_a_comma():
    s = "if the layouts were swapped the kernel would produce nan, so it's easy to detect."
    assert cm.hypothetical(s, s.find("swapped")) and not cm.hypothetical(s, s.find("produce"))
    assert cm.hypothetical("if it would overflow, we clamp.", len("if it would o"))
