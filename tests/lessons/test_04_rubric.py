"""Lesson 4 (RMSNorm) written-answer rubrics: the reference answers in the solution
notebook score full marks, term-only and wrong-causality answers do not."""
from pathlib import Path

import pytest

from autograder import config, notebook, rubric

LESSON = "04_rmsnorm"
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
    "q1": "RMSNorm：均值、beta、缩放、一次归约、__syncthreads、shared memory、带宽。",
    "q2": "全零行、inf、NaN、根号里、1/sqrt(eps)、外面。",
    "q3": "FP16、65504、溢出、inf、有效位、舍入、FP32、带宽、__half2float、寄存器。",
}


@pytest.mark.parametrize("item_id", sorted(TERM_ONLY))
def test_term_only_answer_scores_at_most_one(cfg, item_id):
    res = _score(cfg, item_id, TERM_ONLY[item_id])
    assert res.term_only
    assert res.points <= 1, res.message


def test_empty_and_off_topic_answers_score_zero(cfg):
    assert _score(cfg, "q2", "").points == 0
    assert _score(cfg, "q3", "这道题我觉得很有意思，以后再想。").points == 0


def test_explanation_without_causality_scores_zero(cfg):
    res = _score(cfg, "explain_code", "rsqrtf(，均方值，全零行，整数倍")
    assert res.points == 0, res.message


@pytest.mark.parametrize("item_id, text", [
    ("q1", "RMSNorm 也需要减去均值，只是少了 beta，所以更便宜。"),
    ("q1", "RMSNorm 比 LayerNorm 更精确，因为它只做一次归约。"),
    ("q2", "eps 是为了加速 rsqrtf，因为除以零很慢。"),
    ("q3", "FP32 累加可以节省带宽，因此更快。"),
    ("explain_code", "应该除以 BLOCK_SIZE，因为每个线程算一部分，所以全零行不会 NaN。"),
])
def test_wrong_causal_chain_is_a_misconception(cfg, item_id, text):
    assert _score(cfg, item_id, text).misconceptions


def test_negated_misconception_is_not_flagged(cfg):
    res = _score(cfg, "q2", "eps 不是为了加速，而是因为全零行的均方值为 0 时 rsqrtf(0) = inf，导致 0 × inf = NaN。")
    assert not res.misconceptions
    assert res.points == 2, res.message


ENGLISH = {
    "q1": "RMSNorm drops the mean subtraction (re-centering) and beta, keeping only the re-scaling. Because it needs a "
          "single reduction of sum(x^2) instead of two, it saves one round of warp shuffles, shared memory and "
          "__syncthreads, so it is cheaper for a memory-bound kernel.",
    "q2": "For an all-zero row the mean square is 0, so without eps rsqrtf(0) = inf and 0 * inf produces NaN. With eps "
          "inside the sqrt the scale is bounded by 1/sqrt(eps), so the output stays finite.",
    "q3": "FP16 has a max value of 65504, so any |x| > 256 makes x*x overflow to inf, which leads to inv_rms = "
          "rsqrt(inf) = 0 and the row output becomes zeros. FP32 accumulation does not overflow; the cost is one "
          "__half2float conversion per element, bandwidth is unchanged.",
}


@pytest.mark.parametrize("item_id", sorted(ENGLISH))
def test_english_paraphrase_scores_full_marks(cfg, item_id):
    res = _score(cfg, item_id, ENGLISH[item_id])
    assert res.points == 2 and not res.misconceptions, res.message
