"""Vetoes: edits outside blanks, asserts removed/loosened, GPU claims, misconceptions."""
from __future__ import annotations

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from autograder import notebook as nbio
from autograder import vetoes

SOLUTION_CELL = '''LAYERNORM_CU = r"""
__global__ void k(const float* x, float* out, int N, float eps) {
    float mean = sum / static_cast<float>(N);
    // 方差：E[x^2] - E[x]^2
    float var = /*BEGIN SOLUTION*/ sq_sum / static_cast<float>(N) - mean * mean /*END SOLUTION*/;
    float inv_std = rsqrtf(fmaxf(var, 0.0f) + eps);
    if (threadIdx.x == 0) {
        // BEGIN SOLUTION
        out[0] = inv_std;
        out[1] = mean;
        // END SOLUTION
    }
}
"""'''


def _cell(src, gid=None, **meta):
    c = new_code_cell(src)
    if gid:
        c.metadata["nbgrader"] = {"grade_id": gid, "solution": True, "grade": False, "locked": False,
                                  "schema_version": 3, **meta}
    return c


def _nb(*cells):
    nb = new_notebook()
    nb.cells = list(cells)
    return nb


LESSON = {"sources": {"layernorm_src": {"var": "LAYERNORM_CU"}}, "vetoes": {"template_edits": ["layernorm_src"]}}


def template():
    return nbio.released(_nb(_cell(SOLUTION_CELL, "layernorm_src")))


def student(src):
    return _nb(_cell(src, "layernorm_src"))


def filled_src():
    return nbio.filled(_nb(_cell(SOLUTION_CELL, "layernorm_src"))).cells[0].source


def test_released_template_has_blanks_and_no_solution():
    src = template().cells[0].source
    assert "float var = ______;" in src and "sq_sum / static_cast" not in src
    assert "out[1] = mean" not in src and "______" in src.split("if (threadIdx.x == 0) {")[1]


def test_filled_solution_passes_and_whitespace_comments_do_not_matter():
    assert vetoes.template_edit_vetoes(student(filled_src()), template(), LESSON) == []
    messy = filled_src().replace("float inv_std = rsqrtf(fmaxf(var, 0.0f) + eps);",
                                 "float   inv_std=rsqrtf( fmaxf(var,0.0f)+eps ); // 我的注释\n/* block */")
    messy = messy.replace("sq_sum / static_cast<float>(N) - mean * mean", "sq_sum/N - mean*mean  /* 填空 */")
    assert vetoes.template_edit_vetoes(student(messy), template(), LESSON) == []


def test_removed_fmaxf_outside_blank_is_vetoed_with_diff():
    src = filled_src().replace("fmaxf(var, 0.0f)", "var")
    (v,) = vetoes.template_edit_vetoes(student(src), template(), LESSON)
    assert v.id == "template_edit" and "______" in v.message
    assert "-" in v.evidence and "fmaxf" in v.evidence
    assert "+float inv_std = rsqrtf ( var + eps ) ;" in v.evidence


def test_changed_constant_outside_blank_is_vetoed():
    src = filled_src().replace("fmaxf(var, 0.0f)", "fmaxf(var, 1e-3f)")
    (v,) = vetoes.template_edit_vetoes(student(src), template(), LESSON)
    assert "1e-3f" in v.evidence


def test_deleted_source_cell_is_vetoed():
    (v,) = vetoes.template_edit_vetoes(_nb(_cell("x = 1", "other")), template(), LESSON)
    assert v.id == "template_edit"


TPL_CHECKS = '''y = layernorm(x)
assert np.allclose(y.mean(axis=1), 0.0, atol=1e-4), "均值归零校验失败！"
assert np.abs(y.var(axis=1) - 1).max() < 1e-3
np.testing.assert_allclose(y, ref, rtol=1e-5)
'''


def _asserts(student_src):
    return vetoes.assert_vetoes(_nb(new_code_cell(student_src)), _nb(new_code_cell(TPL_CHECKS)))


def test_unchanged_asserts_pass_even_with_reworded_message():
    assert _asserts(TPL_CHECKS.replace("均值归零校验失败！", "mean != 0")) == []


def test_deleted_assert_is_vetoed():
    vs = _asserts(TPL_CHECKS.replace('assert np.abs(y.var(axis=1) - 1).max() < 1e-3\n', ""))
    assert [v.id for v in vs] == ["assert_removed"]
    assert "1e-3" in vs[0].evidence or "0.001" in vs[0].evidence


def test_loosened_tolerance_is_vetoed_tightened_is_fine():
    vs = _asserts(TPL_CHECKS.replace("atol=1e-4", "atol=1e-1"))
    assert [v.id for v in vs] == ["tolerance_loosened"] and "0.1" in vs[0].evidence
    vs = _asserts(TPL_CHECKS.replace("< 1e-3", "< 0.5"))
    assert [v.id for v in vs] == ["tolerance_loosened"]
    vs = _asserts(TPL_CHECKS.replace("rtol=1e-5", "rtol=1e-2"))
    assert [v.id for v in vs] == ["tolerance_loosened"]
    assert _asserts(TPL_CHECKS.replace("atol=1e-4", "atol=1e-6")) == []


def test_commented_out_assert_is_vetoed():
    vs = _asserts(TPL_CHECKS.replace("assert np.allclose", "# assert np.allclose"))
    assert [v.id for v in vs] == ["assert_removed"]


def test_gpu_claims_only_without_gpu_and_not_when_negated():
    claim = {"q3": "我在 H100 上实测，Welford 版本慢了 20%。"}
    (v,) = vetoes.gpu_claim_vetoes(claim, "cpu")
    assert v.id == "gpu_claim" and "h100" in v.evidence
    assert vetoes.gpu_claim_vetoes(claim, "cupy") == []
    assert vetoes.gpu_claim_vetoes({"q3": "I measured a 1.3x speedup on an A100."}, "cpu")
    honest = {"q3": "环境不可用，仅静态审查，未实测。理论上 Welford 寄存器更多。",
              "q1": "没有在 GPU 上测得数据。", "q2": "If measured on a GPU it would be slower (not measured here)."}
    assert vetoes.gpu_claim_vetoes(honest, "cpu") == []
    assert vetoes.gpu_claim_vetoes(claim, None)       # no backend recorded counts as no GPU


def test_tokenizer_and_wildcard_matching():
    assert vetoes.tokens("a+=b; // c\n/* d */ x<<<1, 2>>>(y);") == \
        ["a", "+=", "b", ";", "x", "<<", "<", "1", ",", "2", ">>", ">", "(", "y", ")", ";"]
    assert vetoes.template_matches("float v = ______;", "float v = a * (b - c);")
    assert vetoes.template_matches("f(______);", "f();")              # a blank may be left empty
    assert not vetoes.template_matches("float v = ______; g();", "float v = 1; h();")
    assert vetoes.template_matches('s = "a // not a comment";', 's = "a // not a comment"; // real')


def test_accuracy_measurements_on_the_emulator_are_not_gpu_claims():
    fine = {"q1": "在 CPU 模拟器上实测最大误差 2e-4。", "q2": "实测最大误差 3e-4，在容差之内。",
            "q3": "用 numpy 测得误差很小。"}
    assert vetoes.gpu_claim_vetoes(fine, "cpu") == []
    for claim in ("实测 Welford 版本慢了 20%。", "在 GPU 上测得带宽 3 TB/s。", "ncu 显示 occupancy 只有 50%。",
                  "I benchmarked it: 2x faster than the naive kernel.", "耗时 0.12 ms，比两遍法更快。"):
        assert vetoes.gpu_claim_vetoes({"q3": claim}, "cpu"), claim


def test_no_gpu_claim_where_the_writer_says_there_is_no_run_of_their_own():
    honest = {"q1": "我这边只有 CPU 模拟器，GPU 计时单元直接打印了“跳过”，所以我没有自己的时间数据。",
              "q2": "I only have the emulator, so the GPU timing cell printed nothing; I have no timings of my own.",
              "q3": "计时单元在模拟器上只打印了模型的上界 0.25 FLOP/B，不是 GPU 实测。"}
    assert vetoes.gpu_claim_vetoes(honest, "cpu") == []
    assert vetoes.gpu_claim_vetoes({"q1": "我用计时单元在 H200 上测得 3 ms。"}, "cpu")


def test_gpu_claim_without_spaces_between_chinese_and_the_gpu_name():
    # "在H200上实测" typed without spaces is the same claim as "在 H200 上实测"
    assert vetoes.gpu_claim_vetoes({"q3": "我在H200上实测，带宽3.9TB/s。"}, "cpu")
    assert vetoes.gpu_claim_vetoes({"q3": "我用H100测得耗时0.12ms。"}, "cpu")
    assert vetoes.gpu_claim_vetoes({"q3": "我在CPU模拟器上测得误差2e-4。"}, "cpu") == []


@pytest.mark.parametrize("text", [
    "亲测在 4090 上 float4 版本快 30%。",
    "在我的 A100 上，这个 kernel 只要 0.3 ms。",
    "On my H100 the fused kernel took 0.21 ms.",
    "放到 H200 上一跑，tiled 版本反而更慢。",
    "我这边 GPU 上的结果是 v6 最快，0.05 ms。",
])
def test_gpu_claim_forms_without_a_measuring_verb(text):
    # a GPU of the writer's own with a figure on it, 亲测, 一跑: first-person measurements however they are said
    assert vetoes.gpu_claim_vetoes({"q3": text}, "cpu")


@pytest.mark.parametrize("text", [
    "不同的 block 不一定同时在 GPU 上，有的已经跑完了，有的还没开始。",   # a block that ran to the end is no run
    "课程的 H200 表里 v6 是 0.05 ms。",
    "我的理解是：在 GPU 上它应该快 2 倍。",
    "我先试过只写 return blockIdx.x;",                          # ".x" of an identifier is no "N x" speedup
    "我试过用 float4.x 读一个分量。",
])
def test_gpu_claim_forms_that_are_not_claims(text):
    assert vetoes.gpu_claim_vetoes({"q3": text}, "cpu") == []
