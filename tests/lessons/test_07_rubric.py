"""Lesson 7 (Softmax2D) written-answer rubrics: the reference answers in the solution
notebook score full marks; term-only and wrong-causality answers do not."""
from pathlib import Path

import pytest

from autograder import config, notebook, rubric

LESSON = "07_softmax2d"
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
    "q1": "平移不变、exp(0)、溢出、inf、下溢、0/0、NaN、88.7。",
    "q2": "K 个正数累加、11 位有效位、大数吃小数、65504、FP32、__float2half 写回。",
    "q3": "填不满 SM、串行、部分结果、chunk、合并、重新缩放、launch、往返。",
    "explain_code": "fmaxf、重新缩放、基准、结合律、warp、两阶段。",
}


@pytest.mark.parametrize("item_id", sorted(TERM_ONLY))
def test_term_only_answer_scores_at_most_one(cfg, item_id):
    res = _score(cfg, item_id, TERM_ONLY[item_id])
    assert res.term_only
    assert res.points <= 1, res.message
    if cfg["items"][item_id]["points"] == 1:
        # 1-point items need a causal chain for their only point
        assert res.points == 0, res.message


def test_empty_and_off_topic_answers_score_zero(cfg):
    assert _score(cfg, "q1", "").points == 0
    assert _score(cfg, "q3", "我觉得这题要看具体情况，以后再想。").points == 0


def test_one_idea_with_a_chain_is_partial(cfg):
    res = _score(cfg, "q1", "不减最大值时大正数会上溢成 inf，所以 inf/inf 得到 NaN。")
    assert res.points == 1, res.message


@pytest.mark.parametrize("item_id, text", [
    ("q1", "减去最大值是为了更快，因为 exp 的参数变小了。"),
    ("q1", "减去最大值会改变结果，所以要再加回来。"),
    ("q2", "FP32 累加可以节省带宽，因此更快。"),
    ("q3", "阶段 2 把各 chunk 的部分和直接相加，因为每段都算过 exp。"),
    ("explain_code", "两个部分和可以直接相加即可，因为它们都是 exp 的和。"),
])
def test_wrong_causal_chain_is_a_misconception(cfg, item_id, text):
    assert _score(cfg, item_id, text).misconceptions


def test_negated_misconception_is_not_flagged(cfg):
    res = _score(cfg, "q1", "减去最大值不是为了更快，而是因为分子分母同乘 exp(-c) 比例不变，"
                            "减后指数 <= 0，所以 exp 不会溢出成 inf，也就不会出现 inf/inf = NaN。")
    assert not res.misconceptions, res.misconceptions
    assert res.points == 2, res.message
