"""Lesson 5 (LayerNorm) written-answer rubrics: the reference answers in the
solution notebook score full marks; term-only, eps-blind and wrong-causality
answers do not; the three vetoing misconceptions fire only when asserted."""
from pathlib import Path

import pytest

from autograder import config, notebook, rubric

LESSON = "05_layernorm"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cfg():
    return config.lesson(LESSON)


@pytest.fixture(scope="module")
def answers():
    return notebook.markdown_answers(notebook.read(ROOT / "solutions" / f"{LESSON}.ipynb"))


def _score(cfg, item_id, text):
    item = cfg["items"][item_id]
    return rubric.score(text, item["rubric"], item["points"])


@pytest.mark.parametrize("item_id", ["explain_code", "q1", "q2", "q3"])
def test_reference_answer_scores_full_marks(cfg, answers, item_id):
    res = _score(cfg, item_id, answers[item_id])
    assert res.points == cfg["items"][item_id]["points"], res.message
    assert not res.misconceptions, res.misconceptions
    assert not res.term_only


TERM_ONLY = {
    "q1": "合并读取、寄存器累加、local_sum、warp shuffle 归约、shared memory、__syncthreads、均值、方差、inv_std、写回、gamma、beta。",
    "q2": "负方差、-1e-7、eps = 1e-5、NaN、整行、传播、fmaxf、截断。",
    "q3": "大均值、小方差、灾难性消减、FP16、BF16、count、mean、M2、三元组、除法、Chan 合并公式、寄存器。",
}


@pytest.mark.parametrize("item_id", sorted(TERM_ONLY))
def test_term_only_answer_scores_at_most_one(cfg, item_id):
    res = _score(cfg, item_id, TERM_ONLY[item_id])
    assert res.term_only, res.message
    assert res.points <= 1, res.message


def test_term_only_explanation_scores_zero(cfg):
    res = _score(cfg, "explain_code", "sq_sum / N，mean * mean，相减，负数，NaN，fmaxf")
    assert res.points == 0, res.message


def test_empty_and_off_topic_answers_score_zero(cfg):
    assert _score(cfg, "q2", "").points == 0
    assert _score(cfg, "q3", "这道题我觉得很有意思，以后再想。").points == 0


def test_q2_answer_blind_to_eps_is_not_full_marks(cfg):
    # A fluent chain "negative -> NaN -> spreads, fmaxf fixes it" that never says the outcome depends on eps.
    text = ("方差为负时直接 rsqrt 会得到 NaN，因为负数不能开平方根；NaN 会传播到整行输出和后续层。"
            "所以要用 fmaxf 把方差截断为 0。")
    res = _score(cfg, "q2", text)
    assert res.points == 1, res.message
    assert "结果取决于 eps" in res.concepts_missed


def test_q2_english_answer_scores_full(cfg):
    text = ("It depends on eps: with eps = 1e-5, var + eps is still positive, so rsqrt is fine. "
            "If eps <= 1e-7, var + eps < 0 and rsqrt of a negative number produces NaN, which means the whole row "
            "becomes NaN and it propagates to later layers. Clamping with fmaxf(var, 0) keeps the radicand >= eps.")
    res = _score(cfg, "q2", text)
    assert res.points == 2, res.message


MISCONCEPTIONS = [
    ("explain_code", "var = sq_sum / N - mean * mean，因为两个大数相减可能为负；fmaxf 是为了加速 rsqrtf 的计算。"),
    ("q3", "当均值很大时会发生消减，所以用 Welford，因为 Welford 更快，寄存器也更少。"),
    ("q2", "方差不可能为负，所以 -1e-7 只是打印误差，rsqrt 会得到 NaN 的说法不对。"),
    ("q2", "The variance cannot be negative in float32, so the NaN never happens."),
]


@pytest.mark.parametrize("item_id, text", MISCONCEPTIONS)
def test_asserted_misconception_vetoes(cfg, item_id, text):
    res = _score(cfg, item_id, text)
    assert res.misconceptions, res.message


NEGATED = [
    ("explain_code", "fmaxf 不是为了加速，而是把舍入造成的负方差截断为 0，否则 rsqrtf 会得到 NaN。"),
    ("q3", "Welford 并不更快：它要维护三个状态量并做除法，所以指令更多。"),
    ("q3", "两矩法比 Welford 更快，因为每步只做加法；但大均值时会发生消减，所以要换 Welford。"),
    ("q2", "有人以为方差不可能为负，这是错的：在 float32 里舍入会导致方差为负。"),
    ("q2", "Some people think variance cannot be negative; in float32 rounding makes it negative, so fmaxf is needed."),
]


@pytest.mark.parametrize("item_id, text", NEGATED)
def test_negated_or_contrasted_misconception_does_not_veto(cfg, item_id, text):
    res = _score(cfg, item_id, text)
    assert not res.misconceptions, res.misconceptions
