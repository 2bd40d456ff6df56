"""autograder.answers.score_answer on the course's own rubric: points, vetoes, review routing, the GPU claim."""
from __future__ import annotations

import pytest

from autograder import config
from autograder import notebook as nbio
from autograder.answers import score_answer
from autograder.answers.gpu_claims import gpu_claim
from autograder.verdict import ItemScore


def item(lesson, iid):
    return config.lesson(lesson)["items"][iid]


def score(lesson, iid, text, backend="cpu", prompt=None):
    it = item(lesson, iid)
    return score_answer(text, it["rubric"], it["points"], item=iid, prompt=prompt, backend=backend)


L4_Q2 = ("全零行的均方值是 0，没有 eps 时 rsqrtf(0) = inf，0 × inf = NaN，整行变 NaN。eps 放在根号里，被开方数至少是 eps，"
         "缩放系数最多 1/sqrt(eps)，输出 0。写成 rsqrtf(ms) + eps 的话 inf + eps 还是 inf，放在外面没用。")


def reference(lesson, iid):
    return nbio.markdown_answers(nbio.read(config.REPO_ROOT / "solutions" / f"{lesson}.ipynb"))[iid]


def test_a_full_answer_records_its_claims():
    s = score("04_rmsnorm", "q2", reference("04_rmsnorm", "q2"))
    assert isinstance(s, ItemScore) and s.kind == "rubric" and s.points == s.max_points == 2
    assert {c.id for c in s.claims if c.status == "established"} == \
        {"zero_row_inf", "inf_nan", "inside_bounded", "outside_useless"}
    assert all(c.evidence for c in s.claims if c.status == "established")
    assert not s.vetoes and not s.needs_review and s.confidence >= 0.9
    assert s.message.startswith("2/2 分")


def test_one_false_claim_zeroes_the_item_and_says_which_sentence():
    s = score("04_rmsnorm", "q2", L4_Q2.replace("0 × inf = NaN，整行变 NaN", "但 0 × inf = 0，所以输出也是 0"))
    assert s.points == 0
    (c,) = [c for c in s.claims if c.status == "contradicted"]
    assert c.id == "inf_nan" and "0 * inf = 0" in c.evidence
    assert "与正确结论相反" in s.message and not s.vetoes      # a false claim, not a listed misconception


def test_swapped_cases_score_nothing():
    swapped = ("eps 放在外面时，缩放系数最多 1/sqrt(eps)，所以全零行输出 0；eps 放在根号里的话 inf + eps 还是 inf，"
               "因此导致 NaN。")
    assert score("04_rmsnorm", "q2", swapped).points == 0


def test_listed_misconception_vetoes_with_evidence_and_is_reviewed():
    s = score("05_layernorm", "q3", "大均值、小方差时两矩法会灾难性消减，所以用 Welford，因为 Welford 更快。")
    (v,) = s.vetoes
    assert v.id == "misconception" and v.item == "q3" and "welford 更快" in v.evidence.lower()
    assert "Welford 换来的是数值稳定" in v.message
    assert s.points == 0 and s.needs_review and "veto" in s.review_reasons


@pytest.mark.parametrize("text", [
    "常有人说 Welford 更快，其实相反：它每个元素多一次除法，还要三个状态量，指令更多。",
    "It is a myth that Welford is faster: it keeps three running values and divides per element.",
    "两矩法比 Welford 更快，但大均值时会发生消减。",
])
def test_quoted_or_compared_misconception_is_no_veto(text):
    s = score("05_layernorm", "q3", text)
    assert not s.vetoes, s.vetoes


def test_quoted_rejection_goes_to_review():
    s = score("05_layernorm", "q3", "常有人说 Welford 更快，其实相反：Welford 要维护三个状态量、每个元素做除法，指令更多。")
    assert "quoted_misconception" in s.review_reasons and s.needs_review


@pytest.mark.parametrize("text", [
    "同学跟我说步长写成 blockDim.x 也没关系，这个说法站不住。",
    "同桌说步长写成 blockDim.x 也没关系，因为他跑出来是对的。这个说法站不住。",
])
def test_a_rejected_wrong_view_cancels_no_claim(text):
    # the same rule as for a vetoing view: a wrong claim reported in order to reject it is not the student's
    s = score("01_elementwise", "q1", text)
    assert not [c for c in s.claims if c.status == "contradicted"], s.claims
    assert "quoted_misconception" in s.review_reasons


@pytest.mark.parametrize("text, status", [
    ("步长要是写小了比如只用 blockDim.x，我觉得是会有一部分元素跳过去没人管。", "contradicted"),
    ("如果步长写小了，会重复处理同一个元素。", "established"),
])
def test_the_clause_after_an_antecedent_is_its_consequence(text, status):
    s = score("01_elementwise", "q1", text)
    assert next(c.status for c in s.claims if c.id == "short_stride_twice") == status


@pytest.mark.parametrize("text", [
    "我不认为方差会是负的，所以 fmaxf 可以删掉。",       # disbelief that states the misconception itself
    "我不相信方差会小于 0，fmaxf 多余。",
])
def test_disbelief_that_states_the_misconception_still_vetoes(text):
    assert [v.id for v in score("05_layernorm", "q2", text).vetoes] == ["misconception"]


def test_term_lists_are_capped():
    two = score("04_rmsnorm", "q2", "全零行、ms = 0、rsqrtf(0) = inf、0 × inf = NaN、根号里、1/sqrt(eps)、inf + eps")
    assert two.points == 1 and "关键词堆砌" in two.message
    one = score("06_softmax", "explain_code", "expf、x − row_max ≤ 0、平移不变性、不溢出、-inf → 0")
    assert one.points == 0                     # a 1-point explanation needs its reason in a sentence


def test_a_copy_of_the_question_earns_nothing():
    nb = nbio.read(config.REPO_ROOT / "solutions" / "07_softmax2d.ipynb")
    prompt = nbio.template_prompt(nb, "q1")
    copy = prompt.split("\n", 2)[-1].strip() + "——可以减最大值，不减会出问题。"
    assert score("07_softmax2d", "q1", copy, prompt=prompt).points == 0
    only = score("07_softmax2d", "q1", prompt.split("\n", 2)[-1].strip(), prompt=prompt)
    assert only.points == 0 and "复制了题目" in only.message


def test_blank_and_placeholder():
    for text in ("", "   ", "YOUR ANSWER HERE", "请在此作答"):
        s = score("06_softmax", "q1", text)
        assert s.points == 0 and s.message == "未作答" and all(c.status == "missing" for c in s.claims)


def test_hidden_keywords_earn_nothing():
    hidden = '<span style="display:none">' + L4_Q2 + "</span>我觉得 eps 很重要。"
    assert score("04_rmsnorm", "q2", hidden).points == 0


def test_full_score_in_rubric_vocabulary_only_goes_to_review():
    terse = ("全零行 ms = 0 → rsqrtf(0) = inf → 0 × inf = NaN。eps 在根号里 → 被开方数 >= eps → 1/sqrt(eps) 有限。"
             "rsqrtf(ms) + eps → inf + eps 仍是 inf。")
    s = score("04_rmsnorm", "q2", terse)
    assert s.points == 2 and "vocabulary" in s.review_reasons


def test_scoring_is_deterministic():
    a = [score("04_rmsnorm", "q2", L4_Q2).to_dict() for _ in range(3)]
    assert a[0] == a[1] == a[2]


@pytest.mark.parametrize("text", [
    "我在 H100 上实测，Welford 版本慢了 20%。",
    "I measured a 1.3x speedup on an A100.",
    "我自己在 H200 上用 Nsight Compute 测过，v1 的 DRAM 吞吐只有 6%。",
    "在 GPU 上测得带宽 3 TB/s。",
    "我自己用 ncu 看过，occupancy 只有 25%。",
    "我在 H200 上跑了，CPU 模拟器上也跑了，GPU 版本 52us。",
    "我在 H200 上 profile 过 K = 4096：三遍版 61 us。",
    "I actually tested this on an A100 in our lab: the FP16 version lost accuracy.",
    "On my machine's GPU the fused version took 120 us.",           # a GPU of one's own with a figure on it
    "我电脑的显卡上融合版只要 120 us。",
    # probe 12 (8 claims, all vetoed before and after)
    "I ran both kernels on my own RTX 3080 at home and the shared-memory version came out about 2.3x faster.",
    "说实话我一开始不信，就拿宿舍那台 2060 跑了下，结果真香，合并访存的版本直接快了将近三倍。",
    "我在 A100 上跑了以后发现快了 2 倍。",                          # 以后 after a run is no plan
    "I benchmarked it on my 3090 and you will see it is 2x faster.",
])
def test_gpu_claim_vetoes_only_without_a_gpu(text):
    assert gpu_claim(text, "cpu") and gpu_claim(text, None)
    assert gpu_claim(text, "cupy") is None
    s = score("05_layernorm", "q3", text, backend="cpu")
    assert [v.id for v in s.vetoes] == ["gpu_claim"] and s.needs_review


@pytest.mark.parametrize("text", [
    "课程给出的 H200 表里 softmax fp32 在 61440×1024 时是 123.2 us、96.7% of copy。",
    "According to the course's published table, the cached path reaches 96.7% of copy on an H200.",
    "在 GPU 上应该会快 2 倍左右。",
    "If measured on a GPU it would be slower.",
    "我在模拟器上测得最大误差 1e-6。",
    "没有在 GPU 上实测，仅静态分析。",
    "有人说他在 A100 上测过 FP16 累加更快，但这不影响结论。",      # someone else's run, reported
    "老师在 H200 上测得 v6 比 torch 快 1.3 倍。",
    # emulator runs that name a GPU only to say they were not on one, or elsewhere in the sentence
    "我在 CPU 上跑了课里那个带计数器的单元（不是 GPU），数出来三遍版每元素 16 字节，所以耗时多 1/3。",
    "我在 CPU 模拟器上跑了课里的回放：不做 FMA 时 var 是 0，按 GPU 默认的 FMA 收缩回放是 -0.25。",
    "I ran the counting cell on the CPU, not on a GPU: the naive kernel reads 78.8x the minimum.",
    "Had I measured it on an H100, I'd expect roughly 3x.",        # an inverted conditional
    # one's own card named with its data sheet, an estimate from it, or next to the course's figure
    "我的显卡理论带宽 1 TB/s，所以应该在 1 ms 左右。",
    "My GPU's peak is 1 TB/s, so it should take about 1 ms.",
    "我的显卡是 4090，课程表里 H200 是 81 us。",
    # probe 12: a run meant and not made, one still to come, a roommate's run in English
    "我本来想在宿舍的 3060 上跑一下，结果驱动装不上，最后没测成，所以这里的 1.6 倍是按讲义推出来的。",
    "等我拿到 4090 之后打算 benchmark 一下 warp shuffle 版本，预计 latency 能降 30%。",
    "My roommate benchmarked it on his RTX 3070 and saw a 1.7x speedup, which matches my reasoning.",
])
def test_citations_hypotheticals_and_emulator_runs_are_no_gpu_claim(text):
    assert gpu_claim(text, "cpu") is None, text


@pytest.mark.parametrize("text, wrong", [
    ("FP16 的最大值是 65536，所以会溢出。", True),
    ("FP16 有 16 位有效位。", True),
    ("FP16 的最大有限值是 65504，FP32 约 3.4e38。", False),
    ("FP16 只有 11 位有效位，FP32 有 24 位。", False),
    # a bandwidth ceiling written next to a format is not that format's maximum
    ("表里 fp32、C=768 的 LayerNorm 达到 4084 GB/s，约为拷贝上限 4223 GB/s 的 96.7%。", False),
    ("fp32 时 max 是 3.1 ms，fp16 时上限 2 倍。", False),
    ("FP16 能表示的最大数就是 2^11 = 2048，所以会溢出。", True),
    # the size of one value, not a traffic count per element
    ("FP32 每个 2 字节，一个 [N, V] 张量约 0.77 GiB。", True),
    ("FP32 是 4 字节，FP16 和 BF16 都是 2 字节。", False),
    ("fp32 每元素 12 字节（读两遍写一遍）。", False),
    # a format named as what another is compared with is not the subject
    ("BF16 的指数位跟 FP32 一样是 8 位，但只有 8 位有效位。", False),
])
def test_a_course_constant_with_a_wrong_value_is_a_false_claim(text, wrong):
    from autograder.answers.facts import false_facts
    from autograder.answers.normalise import normalise
    assert bool(false_facts(normalise(text), lambda i: False)) is wrong, text


# engine: a misconception in the antecedent of a conditional (如果 / 要是 / 假如 / if …) is supposed, not held: no veto;
# the same view stated after the antecedent has closed still vetoes
@pytest.mark.parametrize("text, vetoed", [
    ("如果 Welford 更快，那大家早就只用它了；实际上它多一次除法，慢一些。", False),
    ("要是 Welford 更快的话，两矩法就没有存在的理由了，其实它换来的是数值稳定。", False),
    ("If Welford were faster, nobody would use the two-moment form; it is chosen for stability.", False),
    ("如果数据量很大，就用 Welford，因为 Welford 更快。", True),
    ("大均值时用 Welford，因为 Welford 更快。", True),
])
def test_hypothetical_misconception_is_no_veto(text, vetoed):
    s = score("05_layernorm", "q3", text)
    assert bool(s.vetoes) is vetoed, s.vetoes


# engine: a misconception's ``unless`` (what makes the view right when said first) counts only when asserted: a denied
# condition ("不用每一轮都同步") leaves the conditional-sufficiency clause that follows it (只要…就行 / 就可以) a veto,
# while the condition stated ("每一轮只要一次 __syncthreads 就够了") still spares it
@pytest.mark.parametrize("text, vetoed", [
    ("不用每一轮都同步，只要在最后一轮之后同步一次就行。", True),
    ("其实不必每轮同步，只要最后一轮结束后同步一次就可以。", True),
    ("每一轮都要同步：每轮只需要一次 __syncthreads 就够了。", False),
])
def test_a_denied_unless_condition_does_not_spare_the_misconception(text, vetoed):
    s = score("02_reduction", "explain_code", text)
    assert bool(s.vetoes) is vetoed, s.vetoes


# engine (round 9): a claim's contradiction wholly inside a conditional's antecedent (如果 … / a clause closed by 的话
# with no opener: "只乘 l 的话，…") is supposed: no false claim, no veto; said as the student's own it still vetoes
@pytest.mark.parametrize("text, contradicted", [
    ("alpha = exp(m - base)，l 和 acc 都要乘 alpha；只乘 l 的话 acc 和 l 的基准就对不上。", False),
    ("l 和 acc 都要乘同一个 alpha = exp(m - base)，如果只乘 l，acc 的基准就错了。", False),
    ("alpha = exp(m - base)，只乘 l 就行，acc 不用管。", True),
])
def test_a_contradiction_in_an_antecedent_is_supposed(text, contradicted):
    s = score("10_flash_attention", "explain_code", text)
    assert bool(s.vetoes) is contradicted, s.vetoes


def test_de_hua_closes_an_antecedent_without_an_opener():
    from autograder.answers import claims as cm
    s = "只乘 l 的话 acc 和 l 的基准就对不上"
    assert cm.antecedent_end(s, 0) == s.index("的话")
    assert cm.antecedent_end(s, s.index("acc")) is None       # the consequence is asserted
    assert cm.antecedent_end("只乘 l，acc 就对不上，老师的话题是别的", 0) is None
    assert cm.antecedent_end("如果只乘 l,acc 就错了", 2) == len("如果只乘 l")   # normalised text


def _status(s, claim_id):
    return {c.id: c.status for c in s.claims}[claim_id]


# rubric (round 9): lesson 07 q2's write-back claim needs what the write-back does (converts back to the input type),
# not a bare 写回 ("写回时也做了相应处理" restates the question); lesson 10 q1's state claim is stated with
# 维护 / maintains as with 保存 / keeps
@pytest.mark.parametrize("text, established", [
    ("输入是 FP16 时不能在 FP16 里累加 row_sum，本课 kernel 对精度做了处理，写回时也做了相应处理。", False),
    ("sum 在 FP32 里累加，写回时再用 __float2half 转回 FP16。", True),
    ("sum 在 FP32 里累加，最后写回 FP16。", True),
    ("sum 在 FP32 里累加，写回前才转换成输入类型。", True),
])
def test_round9_rubric_07_writeback_needs_the_conversion(text, established):
    assert (_status(score("07_softmax2d", "q2", text), "writeback") == "established") is established


@pytest.mark.parametrize("text", [
    "每个 query row 只维护 m（目前最大分数）、l（以 m 为基准的 Σexp）、acc（以 m 为基准的 Σexp·v），都在寄存器里。",
    "Each query row maintains m (the running max), l (the sum of exponentials) and acc (the weighted sum of V) in registers.",
])
def test_round9_rubric_10_state_maintained(text):
    assert _status(score("10_flash_attention", "q1", text), "state") == "established"


# round 11: a number contradiction is a side number only where the sentence states the claim with its own number;
# a pattern without a number slot ("block 一行 … 分摊") does not hide a wrong count
def test_a_wrong_count_is_not_hidden_by_a_pattern_without_a_number():
    from autograder.answers import score_answer
    spec = {
        "parts": {"block": ["block 一行", "block per row"], "share": ["分摊", "share"],
                  "most": ["最多", "at most"]},
        "claims": [{"id": "c", "says": [["block", "share"], ["block", "most", {"num": 1024, "unit": ["个线程", "threads"]}]],
                    "contradicts": [["block", "most", {"num_not": 1024, "unit": ["个线程", "threads"]}]]}],
        "points": {"full": 1},
    }
    assert score_answer("block 一行最多 1024 个线程分摊一行。", spec, 2, item="q3").points == 2
    assert score_answer("block 一行最多 512 个线程分摊一行。", spec, 2, item="q3").points == 0


# round 12: one asked part answered by a note among reasoned sentences that already pass the full count is an
# answer in shorthand; the same note with too little prose around it stays capped
def test_round12_one_part_in_a_note_among_enough_prose():
    text = ("忽略的行：loss 0、梯度 0、不进平均。平均是除以有效行数，所以每行导数 = 1/有效行数；用 1/N 梯度会随 padding "
            "比例变小。不先判断就会读 x[−100] 越界、还写出非零梯度；整个 block 一起走 ignore 分支，所以不会有人漏掉 __syncthreads。")
    assert score("12_cross_entropy", "q2", text).points == 2
    thin = "忽略的行：loss 0、梯度 0、不进平均。平均是除以有效行数，所以每行导数 = 1/有效行数。"
    assert score("12_cross_entropy", "q2", thin).points <= 1


# round 12: a question the answer poses is the topic of the sentence that answers it; what the question alone
# says is asked, not asserted
@pytest.mark.parametrize("text", [
    "如果把 eps 放在根号外，会怎样？全零行时它还是 inf，没用。",
    "What if eps goes outside the square root? On an all-zero row the result is still inf, so it does nothing.",
])
def test_round12_a_posed_question_and_its_answer(text):
    s = score("04_rmsnorm", "q2", text)
    assert "outside_useless" in {c.id for c in s.claims if c.status == "established"}


def test_round12_a_posed_question_asserts_nothing():
    s = score("04_rmsnorm", "q2", "eps 放在根号外面和里面效果一样吗？我下面来分析。")
    assert not s.vetoes and all(c.status != "contradicted" for c in s.claims)


# round 12: "别人写的结果" is data another thread wrote, not hearsay: the sentence is the student's own claim
def test_round12_another_threads_write_is_no_hearsay():
    s = score("02_reduction", "q1", "树用上一轮别人写的结果，不等写完就读会读到旧值。")
    assert "stale_race" in {c.id for c in s.claims if c.status == "established"}
