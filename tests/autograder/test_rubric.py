"""Free-text scoring: concepts, causal chains, term-only cap, negation, misconceptions."""
from __future__ import annotations

from pathlib import Path

import pytest

from autograder import config, rubric

FIXTURES = Path(__file__).parent / "fixtures"

Q2 = {
    "concepts": {
        "negative_var": {"label": "方差为负", "any": ["负", "negative", "-1e-7", "re:小于\\s*0"]},
        "nan": {"label": "NaN", "any": ["nan", "非数", "not a number"]},
        "spread": {"label": "污染后续", "any": ["传播", "扩散", "污染", "propagat", "整行"]},
        "clamp": {"label": "fmaxf 截断", "any": ["fmaxf", "截断", "clamp"]},
    },
    "full": {"concepts": 3, "chains": 1},
    "partial": {"concepts": 2},
    "chains": [["negative_var", "nan"], ["nan", "spread"]],
    "misconceptions": [
        {"pattern": "fmaxf.{0,20}(加速|更快|性能|speed|faster)", "why": "fmaxf 是为了截断负方差，不是为了速度"},
        {"pattern": "为了速度", "why": "截断是为了正确性"},
    ],
    "nudge": "说明负方差 → NaN → 整行污染",
}


def score(text, points=2):
    return rubric.score(text, Q2, points)


@pytest.mark.parametrize("text", [
    "方差为负时 rsqrtf 会返回 NaN，随后 NaN 会传播到整行输出。所以要用 fmaxf 截断。",
    "由于舍入误差 var 可能是 -1e-7，导致 rsqrt 得到 NaN；NaN 会污染这一整行。",
    "If the variance is negative, then rsqrt returns NaN, which propagates to the whole row; clamp it with fmaxf.",
    "var < 0 (negative) → rsqrtf 得到 **NaN** → 整行输出都被污染，所以需要 `fmaxf(var, 0.0f)`。",
    "方差小于 0 的时候，rsqrt 会产生 not a number，因此整行结果都被污染。",
])
def test_full_marks_for_causal_answers_zh_en_mixed(text):
    r = score(text)
    assert r.points == 2, r.message
    assert r.chains_found and not r.term_only and not r.misconceptions


def test_fullwidth_markdown_latex_and_code_spans():
    text = ("## 回答\n> 当 $\\text{var} = -10^{-7}$ 为**负**数时，`rsqrtf(var + eps)` 会返回 ＮａＮ，"
            "进而整行输出都被污染；用 `fmaxf` 截断即可。")
    r = score(text)
    assert r.points == 2, r.message


@pytest.mark.parametrize("text", [
    "负方差、NaN、传播、fmaxf",
    "- negative variance\n- NaN\n- propagation\n- fmaxf",
    "关键词：负数；NaN；整行；截断。",
])
def test_term_only_answers_get_at_most_one_point(text):
    r = score(text)
    assert r.term_only
    assert r.points <= 1
    assert "最多 1 分" in r.message


def test_partial_credit_two_concepts_with_chain():
    r = score("方差为负会导致 NaN。")
    assert r.points == 1 and r.chains_found and "污染后续" in r.concepts_missed


def test_empty_and_placeholder_answers_score_zero():
    assert score("").points == 0
    assert score("   ").message == "未作答"
    assert score("YOUR ANSWER HERE").points == 0


def test_misconception_found_with_evidence():
    r = score("fmaxf 可以让 kernel 更快。方差为负 → NaN → 整行被污染。")
    assert r.misconceptions and r.misconceptions[0]["why"].startswith("fmaxf 是为了截断负方差")
    assert "fmaxf 可以让 kernel 更快" in r.misconceptions[0]["evidence"]
    assert "概念错误" in r.message


@pytest.mark.parametrize("text", [
    "fmaxf 不是为了速度，而是为了截断负方差，否则 rsqrt 会得到 NaN。",
    "这里用 fmaxf 并非为了速度：负方差会让 rsqrt 输出 NaN。",
    "fmaxf is not there to make it faster; a negative variance causes NaN.",
    "截断并不是为了速度。",
])
def test_negated_misconceptions_do_not_trigger(text):
    assert score(text).misconceptions == []


def test_nano_does_not_hit_nan_and_usage_is_case_insensitive():
    r = rubric.score("nanoseconds matter", {"concepts": {"nan": {"any": ["nan"]}}}, 1)
    assert r.concepts_hit == []
    r = rubric.score("We get NaN here because of a bug", {"concepts": {"nan": {"any": ["nan"]}}}, 1)
    assert r.concepts_hit == ["nan"]


def test_chain_needs_both_concepts_in_one_sentence():
    r = score("方差可能为负。所以结果是 NaN。")   # connective present but concepts in different sentences
    assert not any(c["cause"] == "方差为负" and c["effect"] == "NaN" for c in r.chains_found)


def test_message_lists_hits_misses_and_nudge():
    r = score("方差为负会导致 NaN。")
    assert "命中概念：方差为负、NaN" in r.message and "提示：说明负方差" in r.message


def test_validate_names_bad_key(monkeypatch, tmp_path):
    bad = dict(Q2, chains=[["negative_var", "nope"]])
    with pytest.raises(config.RubricError, match="chains"):
        rubric.validate(bad)
    with pytest.raises(config.RubricError, match="misconceptions"):
        rubric.validate(dict(Q2, misconceptions=[{"pattern": "(unclosed"}]))
    with pytest.raises(config.RubricError, match="concepts"):
        rubric.validate({"concepts": {}})


def test_fixture_rubric_loads_and_errors_name_the_key(monkeypatch, tmp_path):
    monkeypatch.setenv("AUTOGRADER_RUBRIC", str(FIXTURES / "grading_rubric.yaml"))
    cfg = config.lesson("05_layernorm")
    assert cfg["settings"]["pass_score"] == 8 and "q2" in cfg["items"]
    text = (FIXTURES / "grading_rubric.yaml").read_text(encoding="utf-8")
    broken = tmp_path / "r.yaml"
    broken.write_text(text.replace('grid: "(M,)"', 'gridd: "(M,)"', 1), encoding="utf-8")
    with pytest.raises(config.RubricError, match=r"lessons\.05_layernorm\.kernels\.layernorm\.gridd"):
        config.load(broken)
    broken.write_text(text.replace("kind: rubric", "kind: essay", 1), encoding="utf-8")
    with pytest.raises(config.RubricError, match=r"items\.explain_code\.kind"):
        config.load(broken)
    broken.write_text(text.replace("reference: layernorm", "reference: layernorm_v9", 1), encoding="utf-8")
    with pytest.raises(config.RubricError, match="layernorm_v9"):
        config.load(broken)
    broken.write_text(text.replace("kernel: layernorm,", "kernel: layernorm_x,", 1), encoding="utf-8")
    with pytest.raises(config.RubricError, match=r"items\.code_normal\.cases\[0\]\.kernel: unknown kernel"):
        config.load(broken)
    broken.write_text(text.replace("dist: {constant: {value: 3.0}}", "dist: {gauss: {value: 3.0}}", 1),
                      encoding="utf-8")
    with pytest.raises(config.RubricError, match=r"cases\[1\]\.arrays\.x\.dist"):
        config.load(broken)
    monkeypatch.setenv("AUTOGRADER_RUBRIC", str(FIXTURES / "grading_rubric.yaml"))
    with pytest.raises(config.RubricError, match="no such lesson"):
        config.lesson("42_nope")


def test_repo_rubric_is_valid():
    # the real grading_rubric.yaml (lesson authors' entries) must always validate
    data = config.load(config.REPO_ROOT / "grading_rubric.yaml")
    assert "settings" in data


def test_connective_must_link_the_two_concepts():
    # both concepts and a connective in one sentence, but the connective links neither of them
    r = score("NaN 和负数都见过，所以要多测试。")
    assert not any(c["cause"] == "方差为负" and c["effect"] == "NaN" for c in r.chains_found)
    # reversed order with "because", and a leading "因为"
    assert score("rsqrt returns NaN because the variance is negative.").chains_found
    assert score("因为方差为负，rsqrt 的结果就是 NaN。").chains_found


def test_latex_arrows_fractions_and_operators():
    n = rubric.normalize(r"$\frac{\sum x^2}{N} - \mu^2 < 0 \Rightarrow$ NaN, $a \cdot b \geq c$")
    assert "( sum x^2)/(n)" in n and "→" in n and " * " in n and ">=" in n
    assert score(r"方差为负 $\to$ rsqrt 得到 NaN $\Rightarrow$ 整行被污染，需要 fmaxf").points == 2


def test_cuda_identifiers_with_underscores_survive_markdown_stripping():
    spec = {"concepts": {"sync": {"any": ["__syncthreads"]}, "shfl": {"any": ["__shfl_down_sync"]}}}
    r = rubric.score("写完 smem 后要 `__syncthreads()`，warp 内用 __shfl_down_sync；__重点__", spec, 2)
    assert sorted(r.concepts_hit) == ["shfl", "sync"]
    assert "重点" in rubric.normalize("__重点__") and "__" not in rubric.normalize("__重点__")


def test_comparisons_and_templates_are_not_mistaken_for_html():
    n = rubric.normalize("static_cast<float>(N)；当 var < 0 且 x > eps 时<br/>会出错<b>!</b>")
    assert "static_cast<float>(n)" in n and "var < 0 且 x > eps" in n and "<br" not in n and "<b>" not in n


def test_bare_bu_negates_but_not_buguang_or_bujin():
    assert score("fmaxf 不加速，只是截断。").misconceptions == []
    assert score("fmaxf 不仅截断负数，还能让程序更快。").misconceptions      # "不仅" is not a negation


def test_misconception_that_itself_spells_a_negation():
    spec = {"concepts": {"v": {"any": ["方差"]}},
            "misconceptions": [{"pattern": "方差.{0,4}(不可能|cannot be).{0,4}(为负|negative)", "why": "会为负"}]}
    assert rubric.score("方差不可能为负，所以不用管。", spec, 2).misconceptions
    assert rubric.score("并不是说方差不可能为负。", spec, 2).misconceptions == []
