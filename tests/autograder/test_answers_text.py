"""autograder.answers: what an answer is read as (normalise, visible text, sentences, term lists)."""
from __future__ import annotations

import pytest

from autograder.answers import claims as cm
from autograder.answers.normalise import normalise, sentences, tokens
from autograder.answers.visible import visible_text


@pytest.mark.parametrize("raw, want", [
    ("執行緒區塊裡的暫存器溢位", ["线程", "寄存器", "溢出"]),          # Taiwan phrases, not only characters
    ("記憶體頻寬、共用記憶體、規約", ["内存带宽", "归约"]),
    ("ＦＰ１６　最大值　６５５０４", ["fp16 最大值 65504"]),          # full-width letters, digits, space
    ("ε 在 √ 裡：1/√ε ≦ 316，∞ − ∞ ≠ 0", ["eps", "1/sqrt(eps) <= 316", "inf - inf != 0"]),
    (r"$\frac{1}{\sqrt{\epsilon}}$ 且 $x \leq 10^{-5}$，$a \to b$", ["(1)/(sqrt(eps))", "x <= 10^-5", "a → b"]),
    ("x² 和 10⁻⁵", ["x^2", "10^-5"]),
    ("三遍 kernel 每元素十六字节，两次 launch", ["3遍", "16字节", "2次"]),
    ("It doesn't overflow; eps is smaller than 1e-7", ["does not overflow", "eps < 1e-7"]),
    ("2 的 24 次方", ["2^24"]),
])
def test_normalise(raw, want):
    n = normalise(raw)
    for w in want:
        assert w in n, n


def test_numerals_only_before_measure_words():
    n = normalise("全零行一旦出现，一致地输出 0；一行一个 block")
    assert "全零行" in n and "一旦" in n and "一致" in n and "1行1个 block" in n


def test_markdown_markup_goes_identifiers_stay():
    n = normalise("**注意**：`__syncthreads()` 之后 *再* 读 `a * b`；__重点__\n> 引用\n- 列表")
    assert "注意" in n and "**" not in n and "__syncthreads()" in n and "a * b" in n and "重点" in n
    assert "__重点" not in n and "> " not in n


def test_sentences_and_course_dictionary():
    n = normalise("方差为负。于是 rsqrt 得到 NaN！Then it spreads. v = 1.5")
    assert [n[a:b] for a, b in sentences(n)] == ["方差为负", "于是 rsqrt 得到 nan", "then it spreads", "v = 1.5"]
    words = tokens(normalise("合并访存让带宽利用率变高，__syncthreads 之后 warp 0 再归约"))
    assert "合并访存" in words and "__syncthreads" in words and "归约" in words


def test_visible_text_drops_what_a_reader_cannot_see():
    md = ("答：全零行 **ms = 0**，$a_1 * b_2$ 得 NaN。<!-- 因为 所以 导致 根号里 -->\n"
          "<span style=\"display:none\">eps 在根号里 → 1/sqrt(eps)</span><div hidden>inf + eps</div>"
          "<font color=\"white\">白字关键词</font><p style=\"font-size:0\">零号字</p><script>var x;</script>"
          "<style>p{}</style>\n\n- 第一点 `rsqrtf(ms + eps)`\n\n```cuda\nfloat v = fmaxf(var, 0.f);\n```")
    seen = visible_text(md)
    for gone in ("因为 所以", "根号里", "inf + eps", "白字", "零号字", "var x", "p{}", "**"):
        assert gone not in seen, (gone, seen)
    for kept in ("全零行 ms = 0", "$a_1 * b_2$", "第一点 rsqrtf(ms + eps)", "float v = fmaxf(var, 0.f);"):
        assert kept in seen, (kept, seen)


@pytest.mark.parametrize("text, listy", [
    ("负方差、NaN、传播、fmaxf、截断", True),
    ("关键词：全零行 / padding、rsqrtf(0) → inf、NaN、1/√ε 上界、根号内", True),     # formulas are terms too
    ("- negative variance\n- NaN\n- propagation\n- fmaxf", True),
    ("负 negative NaN 传播 污染 fmaxf 截断 因为 所以 导致 方差 均值 归约 共享内存", True),   # keyword soup
    ("所以 kernel 把 FP16 先转成 FP32，max、exp、sum 跟除法都在 FP32 里做，最后写回时才转回去。", False),
    ("三遍版本（max、sum of exp、归一化）要读 3 次 x、写 1 次 y，每元素 16 字节。", False),
    ("v3 融合成一个 kernel，一个 warp 负责一行，mean 和 rstd 留在寄存器里，用 cg::reduce 做 warp 内归约。", False),
    ("朴素 12 B；缓存整行 8 B。", False),                                   # terse, but numbers are claims
])
def test_term_lists_and_prose(text, listy):
    assert (cm.analyse(text).listy_share >= 0.7) is listy


# round 7 (engine): the student's own formula built from identifiers the question lists is not a copy of it;
# the question's own sentence still is
def test_round7_own_formula_is_not_a_question_copy():
    from autograder.answers import drop_copied
    from autograder.answers.normalise import normalise
    prompt = "用两三句话说明：你在 `warp_row` 里怎样由 `blockIdx.x`、`warp.meta_group_size()`、`warp.meta_group_rank()` 得到行号。"
    own = normalise("warp_row = blockIdx.x * warp.meta_group_size() + warp.meta_group_rank()。每个 warp 负责一行。")
    kept, n = drop_copied(own, prompt)
    assert n == 0 and "meta_group_rank" in kept
    copy = normalise("你在 warp_row 里怎样由 blockIdx.x、warp.meta_group_size()、warp.meta_group_rank() 得到行号？每个 warp 负责一行。")
    assert drop_copied(copy, prompt)[1] == 1


# engine: an asterisk between two operands is multiplication; markdown must not read "a*b + c*d" as emphasis
def test_multiplication_asterisk_survives_markdown():
    md = "row = blockIdx.y*blockDim.y + threadIdx.y，col = blockIdx.x*blockDim.x + threadIdx.x"
    assert "blockidx.y*blockdim.y" in normalise(visible_text(md))
    assert "blockidx.x*blockdim.x" in normalise(visible_text(md))
    assert visible_text("x = a*b + c*d") == "x = a*b + c*d"
    assert visible_text("2**24 和 **粗体** 和 *斜体*") == "2**24 和 粗体 和 斜体"     # emphasis still goes


# engine: a copy of the question with a word dropped or changed is still a copy; the student's own sentence built on
# the question's words is not
def test_near_copy_of_the_question_is_a_copy():
    from autograder.answers import drop_copied
    prompt = "用两三句话说明：为什么 softmax 在求指数之前要先减去每一行的最大值？如果不减会发生什么？"
    for copy in ("为什么 softmax 在求指数前要先减去每行的最大值？减去最大值后 exp 不会上溢。",       # words dropped
                 "为什么 softmax 在求指数之前要先减掉每一行的最大值？减去最大值后 exp 不会上溢。"):   # a word changed
        kept, n = drop_copied(normalise(copy), prompt)
        assert n == 1 and kept == "减去最大值后 exp 不会上溢。"
    own = normalise("softmax 在求指数之前先减去最大值，这样 exp 的输入都 <= 0，不会上溢。如果不减会溢出成 inf。")
    assert drop_copied(own, prompt)[1] == 0


# round 10 (robustness: meaning-preserving rewrites of correctly scored answers must not move the score)
@pytest.mark.parametrize("raw, want, not_want", [
    ("模擬器按順序一個個線程執行", "顺序1个个线程执行", "运行"),       # 執行 stays 执行 (Taiwan phrase 运行 drifts)
    ("座標 (r, c)", "坐标", "座标"),
    ("每个线程做三遍嘛，算术量太大了啊。", "做3遍,算术量太大了。", "嘛"),  # chat particles are tone, not content
])
def test_round10_normalise_keeps_the_simplified_word(raw, want, not_want):
    n = normalise(raw)
    assert want in n and not_want not in n, n


def test_round10_a_leading_hedge_does_not_make_a_note_prose():
    assert cm.analyse("我觉得少了：减均值、beta。").listy_share == 1.0
    assert cm.analyse("少了：减均值、beta。").listy_share == 1.0


def test_round10_fillers_and_causal_shijde():
    assert normalise("嗯，RMSNorm 少做了减均值。就是说，它不用 beta。") == "rmsnorm 少做了减均值。它不用 beta。"
    # 使得 strings terms together like 导致: four connectives with a 使得 are a chain of pasted terms
    assert cm.analyse("由于 rsqrtf 除以 BLOCK_SIZE，因此 eps 在根号里，使得全零行正确，由于 shared memory 广播。").spans[0].kind == "soup"


def test_round10_a_hedged_copy_of_the_question_is_a_copy():
    from autograder.answers import drop_copied
    prompt = "RMSNorm 比 LayerNorm 少做了什么？为什么可以不减均值？"
    kept, n = drop_copied(normalise("我觉得为什么可以不减均值。因为缩放不变性够用。"), prompt)
    assert n == 1 and "缩放不变性" in kept


# round 11: terms strung by connectives stay a chain of pasted terms when full stops replace the commas before
# 所以 / 因此 / so; a reasoned answer that opens a sentence with 所以 stays prose
def test_round11_connective_soup_across_full_stops():
    text = "因为 rsqrtf 除以 BLOCK_SIZE。所以 eps 在根号里，导致全零行正确，因为 shared memory 广播 inv_rms。"
    assert cm.analyse(text.replace("。所以", "，所以")).spans[0].kind == "soup"
    kinds = [sp.kind for sp in cm.analyse(text).spans if sp.kind != "window"]
    assert kinds[:2] == ["soup", "soup"]
    reasoned = "全零行的平方和是 0。所以 rsqrt(0 + eps) 是有限的，输出为 0。"
    assert {sp.kind for sp in cm.analyse(reasoned).spans} <= {"prose", "window"}


# round 11: the converter's Taiwan "bit" (位元) does not eat 单位元 (identity element) or 位元素; 位元組 is a byte
@pytest.mark.parametrize("text, want", [
    ("max 初值 -inf（单位元）", "单位元"),
    ("單位元", "单位元"),
    ("高位元素是 0", "高位元素"),
    ("每個位元組", "字节"),
])
def test_round11_taiwan_bit_word_keeps_identity_element(text, want):
    assert want in normalise(text)


# round 11: an English clause with few function words is prose when it has a finite verb; a verb inside a comma
# list of notes keeps the notes a list
@pytest.mark.parametrize("text, kind", [
    ("expf overflows to inf once x exceeds ln(FLT_MAX), about 88.7.", "prose"),
    ("exp overflows once x is above 88.7, about ln(FLT_MAX).", "prose"),
    ("smem bottleneck, 2 loads per FMA, register pressure, occupancy down, spills to local memory.", "list"),
    ("rsqrt inf nan fmaxf clamp variance negative eps cancellation precision", "list"),
])
def test_round11_english_clause_with_a_finite_verb(text, kind):
    assert cm.analyse(text).spans[0].kind == kind


# round 12: an answer written as one template of short "因为 A，所以 B" bullets asserts every link and argues
# none: its sentences are a chain of pasted terms.  Two such sentences among others, or long sentences that say
# what each step rests on, stay prose.
def test_round12_an_answer_of_because_so_templates_is_soup():
    bullets = ("- 因为 shared memory 有 32 个 bank，所以会有 bank conflict\n"
               "- 因为 tile[32][32] 按列读，所以是 32 路冲突，所以慢\n"
               "- 因为 +1 padding，所以 tile[32][33] 没有冲突\n"
               "- 因为按行写是合并访存，所以没有 bank conflict\n")
    assert [sp.kind for sp in cm.analyse(bullets).spans if sp.kind != "window"] == ["soup"] * 4
    two = ("- 因为 shared memory 有 32 个 bank，所以会有 bank conflict\n"
           "- 列读时 32 个线程读 tile[t][k]，地址 32t+k 全落在 bank k\n"
           "- 因为 +1 padding，所以 tile[32][33] 没有冲突\n")
    assert "soup" not in {sp.kind for sp in cm.analyse(two).spans}
    reasoned = ("因为按列读时线程 t 读的是第 32t+k 个字，而 bank 号是字地址对 32 取模，所以 32 个线程全落在同一个 bank 上。"
                "因为同一个 bank 一次只能服务一个字，所以这 32 次访问被硬件拆成 32 个 wavefront 依次完成。"
                "因为加一列以后地址变成 33t+k，bank 号变成 (t+k) mod 32，所以 32 个线程各占一个 bank，一次就能读完。")
    assert "soup" not in {sp.kind for sp in cm.analyse(reasoned).spans}
