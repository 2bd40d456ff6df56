"""Lesson 6 (stable softmax) written-answer rubrics: the reference answers in the
solution notebook score full marks, term-only and wrong-causality answers do not."""
from pathlib import Path

import pytest

from autograder import config, notebook, rubric

LESSON = "06_softmax"
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
    "q1": "溢出、inf、NaN、88.7、平移不变、(0, 1]、下溢、0/0。",
    "q2": "三遍 16 字节、朴素 12 字节、缓存 8 字节、访存受限、带宽、耗时、occupancy、online。",
    "q3": "单位元 -inf、整数倍、初值为 0、NaN、mask、fmaxf、torch、策略。",
}


@pytest.mark.parametrize("item_id", sorted(TERM_ONLY))
def test_term_only_answer_scores_at_most_one(cfg, item_id):
    res = _score(cfg, item_id, TERM_ONLY[item_id])
    assert res.term_only
    assert res.points <= 1, res.message


def test_empty_answer_scores_zero(cfg):
    assert _score(cfg, "q1", "").points == 0
    assert _score(cfg, "explain_code", "减去最大值").points == 0


@pytest.mark.parametrize("item_id, text", [
    ("q1", "减去最大值会改变输出，但因为这样不溢出，所以可以接受。"),
    ("q1", "减去最大值是为了加速，因为 exp 的参数变小了。"),
    ("q2", "softmax 是计算受限的，因为 exp 很贵，所以流量不重要。"),
    ("q3", "整行都是 -inf 时输出为 0，因为 exp(-inf) = 0。"),
    ("q3", "fmaxf 会传播 NaN，所以 max 就是 NaN。"),
])
def test_wrong_causal_chain_is_a_misconception(cfg, item_id, text):
    assert _score(cfg, item_id, text).misconceptions


def test_correct_statements_near_misconception_patterns_are_not_flagged(cfg):
    res = _score(cfg, "q1", "减去最大值不会改变结果，因为分子分母同乘 exp(-max) 约掉；减后参数 <= 0，所以不会溢出成 inf。")
    assert not res.misconceptions and res.points == 2, res.message
    res = _score(cfg, "q3", "整行都是 -inf 时 max = -inf，-inf - (-inf) = NaN，因此整行输出 NaN（与 torch 的约定一致）；"
                            "初值为 0 会导致全负的行 0/0 = NaN。")
    assert not res.misconceptions, res.misconceptions


ENGLISH = {
    "q1": "In FP32 exp(x) overflows to inf once x exceeds about 88.7, so 1e4 inputs give inf / inf which produces NaN. "
          "Subtracting the row max does not change the result because exp(-c) cancels. After the shift every "
          "argument is <= 0, so each term is at most 1 and nothing can overflow.",
    "q2": "The three-pass kernel reads x 3 times and writes y once: 16 bytes per element, versus 12 bytes for the naive "
          "one and 8 bytes when the row is cached in shared memory. Softmax is memory-bound, so the time is "
          "proportional to this traffic. Caching costs K*4 bytes of shared memory per block, which lowers occupancy.",
    "q3": "Threads without elements join the reduction with the initial value, so the max must start at -inf, the "
          "identity. If the initial value is 0, a row of -1e4 gets max = 0, every exp underflows and 0/0 produces "
          "NaN. A NaN row: fmaxf ignores NaN but exp(NaN) makes the sum NaN, so the whole row is NaN (torch policy).",
}


@pytest.mark.parametrize("item_id", sorted(ENGLISH))
def test_english_paraphrase_scores_full_marks(cfg, item_id):
    res = _score(cfg, item_id, ENGLISH[item_id])
    assert res.points == 2 and not res.misconceptions, res.message
