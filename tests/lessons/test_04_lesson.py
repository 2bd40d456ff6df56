"""Lesson 4 (RMSNorm) end to end on the CPU emulator: the solution notebook scores
10/10, the generated student notebook runs and scores 0 for code, and typical wrong
fill-ins fail the case family that targets them."""
from pathlib import Path

import nbformat
import pytest

from autograder import cases, check, config, generate
from autograder import notebook as nbio

LESSON = "04_rmsnorm"
SRC_ID, VAR = "rmsnorm_src", "RMSNORM_CU"
ROOT = Path(__file__).resolve().parents[2]
SOLUTION = ROOT / "solutions" / f"{LESSON}.ipynb"
RIGHT = "rsqrtf(sq_sum / static_cast<float>(N) + eps)"


@pytest.fixture(autouse=True)
def cpu_backend(monkeypatch):
    monkeypatch.setenv("KERNELS_BACKEND", "cpu")


def _solution_cuda() -> str:
    cell = nbio.cells_by_grade_id(nbio.read(SOLUTION))[SRC_ID]
    return nbio.python_string_var(nbio._fill(cell.source), VAR)


def _families(item_id, fill, seed=1234):
    src = _solution_cuda()
    assert RIGHT in src
    res = cases.run_item(config.lesson(LESSON), item_id, {SRC_ID: src.replace(RIGHT, fill)}, seed=seed)
    return {f.family: f.passed for f in res.families}


def test_reference_fill_passes_every_family():
    for item in ("code_normal", "code_boundary"):
        fams = _families(item, RIGHT)
        assert fams and all(fams.values()), (item, fams)


def test_missing_eps_fails_only_the_zero_row_family():
    assert all(_families("code_normal", "rsqrtf(sq_sum / static_cast<float>(N))").values())
    fams = _families("code_boundary", "rsqrtf(sq_sum / static_cast<float>(N))")
    assert fams["全零行（只剩 eps）"] is False, fams
    assert fams["FP16 里平方会溢出的大数值"] is True, fams


def test_eps_outside_the_square_root_fails_boundary():
    fams = _families("code_boundary", "rsqrtf(sq_sum / static_cast<float>(N)) + eps")
    assert fams["全零行（只剩 eps）"] is False, fams
    assert fams["均方值与 eps 同量级"] is False, fams


def test_dividing_by_block_size_fails_the_non_multiple_family():
    fams = _families("code_normal", "rsqrtf(sq_sum / static_cast<float>(BLOCK_SIZE) + eps)")
    assert fams["N 不是 block 整数倍"] is False, fams


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
    res = check.grade_notebook(student, LESSON, seed=7)
    assert not res.errors, res.errors          # no crash / timeout: only failing test cells
    pts = {e["id"]: e["points"] for e in res.items}
    assert pts["code_normal"] == 0 and pts["code_boundary"] == 0, res.items
    assert res.score == 0 and not res.passed
    assert not [v for v in res.vetoes if v["id"] in ("template_edit", "assert_removed", "tolerance_loosened")], res.vetoes
