"""Lesson 8 (LayerNorm optimisation path v1..v6) end to end on the CPU emulator: every
version passes its case families, wrong fill-ins of the two blanks (warp -> row mapping,
float4 row view) fail the families of the versions that use them, the solution notebook
scores 10/10 and shows v4's large-mean failure, and the released notebook runs and
scores 0 for code."""
from pathlib import Path

import nbformat
import pytest

from autograder import cases, check, config, generate
from autograder import notebook as nbio

LESSON = "08_layernorm_opt"
SRC_ID, VAR = "layernorm_opt_src", "LAYERNORM_OPT_CU"
ROOT = Path(__file__).resolve().parents[2]
SOLUTION = ROOT / "solutions" / f"{LESSON}.ipynb"
RIGHT_ROW = "return blockIdx.x * warp.meta_group_size() + warp.meta_group_rank();"
RIGHT_VIEW = "reinterpret_cast<const float4*>(inp + (long)idx * C)"


@pytest.fixture(autouse=True)
def cpu_backend(monkeypatch):
    monkeypatch.setenv("KERNELS_BACKEND", "cpu")


def _solution_cuda() -> str:
    cell = nbio.cells_by_grade_id(nbio.read(SOLUTION))[SRC_ID]
    return nbio.python_string_var(nbio._fill(cell.source), VAR)


def _families(item_id, row=RIGHT_ROW, view=RIGHT_VIEW, seed=1234):
    src = _solution_cuda()
    assert src.count(RIGHT_ROW) == 1 and src.count(RIGHT_VIEW) == 1, "solution source changed"
    src = src.replace(RIGHT_ROW, row).replace(RIGHT_VIEW, view)
    res = cases.run_item(config.lesson(LESSON), item_id, {SRC_ID: src}, seed=seed)
    return {f.family: f.passed for f in res.families}


def test_reference_fill_passes_every_family():
    # seed 1234 here; the notebook tests below grade with seed 7
    for item in ("code_normal", "code_boundary"):
        fams = _families(item)
        assert len(fams) >= 8 and all(fams.values()), (item, fams)


def test_row_equals_block_index_fails_the_warp_per_row_versions():
    fams = _families("code_normal", row="return blockIdx.x;")
    assert fams["v3：N 不是 4 的整数倍，C 任意"] is False, fams
    assert fams["v6：C 为 4 的整数倍（float4）"] is False, fams
    assert fams["其余版本：v5 block 一行"] is True, fams        # block per row does not use warp_row


def test_float4_view_with_float_offset_is_caught():
    # offsetting the float4 pointer by idx * C float4s runs 4x too far: out of bounds
    fams = _families("code_normal", view="reinterpret_cast<const float4*>(inp) + idx * C")
    assert fams["v6：C 为 128 的整数倍"] is False, fams
    assert fams["v3：C 为 32 的整数倍"] is True, fams


@pytest.mark.slow
def test_solution_notebook_scores_full_marks_on_cpu():
    res = check.grade_notebook(SOLUTION, LESSON, seed=7)
    assert res.backend == "cpu"
    assert not res.errors, res.errors
    assert not res.vetoes, res.vetoes
    assert res.score == res.max_score == 10, res.items
    assert res.passed


@pytest.mark.slow
def test_released_notebook_runs_and_scores_zero_for_code(tmp_path):
    released = generate.build_course(tmp_path / "course", SOLUTION)
    student = tmp_path / f"{LESSON}.ipynb"
    nbformat.write(nbformat.read(released, as_version=4), student)
    src = nbio.cells_by_grade_id(nbio.read(student))[SRC_ID].source
    assert src.count("______") == 2 and RIGHT_VIEW not in src
    res = check.grade_notebook(student, LESSON, seed=7)
    pts = {e["id"]: e["points"] for e in res.items}
    assert pts["code_normal"] == 0 and pts["code_boundary"] == 0, res.items
    assert res.score == 0 and not res.passed
    assert not [v for v in res.vetoes if v["id"] in ("template_edit", "assert_removed", "tolerance_loosened")], res.vetoes


def test_released_notebook_leaks_no_answer():
    # the row mapping is a helper shared by v3/v4/v6, so the answer is not visible in v4/v6
    assert generate.find_leaks(nbio.read(SOLUTION), generate.student_notebook(SOLUTION)) == []


@pytest.mark.gpu
def test_families_and_notebook_on_gpu(monkeypatch):
    # same families and the whole notebook (including the GPU-only cells) on the cupy backend
    monkeypatch.setenv("KERNELS_BACKEND", "cupy")
    for item in ("code_normal", "code_boundary"):
        fams = _families(item)
        assert fams and all(fams.values()), (item, fams)
    res = check.grade_notebook(SOLUTION, LESSON, seed=7)
    assert res.backend == "cupy" and not res.errors, res.errors
    assert res.score == 10 and res.passed, res.items
