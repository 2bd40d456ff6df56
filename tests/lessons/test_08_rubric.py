"""Lesson 8 (LayerNorm optimisation path) written-answer rubrics: the reference answers
in the solution notebook score full marks; term-only and wrong-causality answers do not."""
from pathlib import Path

import pytest

from autograder import config, notebook, rubric

LESSON = "08_layernorm_opt"
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
    "q1": "相隔 C 个 float、事务、合并访问、i += block_size、带宽、树形归约。",
    "q2": "launch、全局内存往返、寄存器、融合、__syncthreads、占主导。",
    "q3": "32 个线程、串行、shuffle、N 很大、1024、shared memory、__syncthreads。",
    "explain_code": "meta_group_size、meta_group_rank、重复、float4、C % 4、指令数。",
}


@pytest.mark.parametrize("item_id", sorted(TERM_ONLY))
def test_term_only_answer_scores_at_most_one(cfg, item_id):
    res = _score(cfg, item_id, TERM_ONLY[item_id])
    assert res.term_only
    assert res.points <= 1, res.message
    if cfg["items"][item_id]["points"] == 1:
        assert res.points == 0, res.message


def test_empty_and_off_topic_answers_score_zero(cfg):
    assert _score(cfg, "q2", "").points == 0
    assert _score(cfg, "q1", "这个问题很复杂，取决于硬件。").points == 0


def test_one_idea_with_a_chain_is_partial(cfg):
    res = _score(cfg, "q1", "v1 中相邻线程的地址相隔 C 个 float，所以一次请求被拆成很多事务。")
    assert res.points == 1, res.message


@pytest.mark.parametrize("item_id, text", [
    ("q1", "v1 慢是因为算术更多，所以要减少计算。"),
    ("q2", "拆成三个 kernel 更快，因为每个 kernel 更简单。"),
    ("q3", "block 一行总是更快，因为线程更多。"),
    ("explain_code", "只写 blockIdx.x 也可以，因为每个 block 处理一行。"),
])
def test_wrong_causal_chain_is_a_misconception(cfg, item_id, text):
    assert _score(cfg, item_id, text).misconceptions


def test_negated_misconception_is_not_flagged(cfg):
    res = _score(cfg, "q3", "block 一行并不总是更快：warp 一行只用 shuffle、不需要 __syncthreads，"
                            "所以 N 很大、C 较小时 warp 一行更好；block 一行最多 1024 线程分摊，因此适合 C 大，"
                            "代价是 shared memory 归约和 __syncthreads 等待。")
    assert not res.misconceptions, res.misconceptions
    assert res.points == 2, res.message
