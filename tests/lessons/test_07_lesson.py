"""Lesson 7 (Softmax2D) end to end on the CPU emulator: every kernel of the solution
passes its case families, typical wrong (max, sum) merges fail the families that target
them, the solution notebook scores 10/10, and the released notebook runs and scores 0
for code."""
from pathlib import Path

import nbformat
import pytest

from autograder import cases, check, config, generate
from autograder import notebook as nbio

LESSON = "07_softmax2d"
SRC_ID, VAR = "softmax_src", "SOFTMAX_CU"
ROOT = Path(__file__).resolve().parents[2]
SOLUTION = ROOT / "solutions" / f"{LESSON}.ipynb"
RIGHT_MAX = "fmaxf(m, m_o)"
RIGHT_SUM = "s * __expf(m - m_new) + s_o * __expf(m_o - m_new)"


@pytest.fixture(autouse=True)
def cpu_backend(monkeypatch):
    monkeypatch.setenv("KERNELS_BACKEND", "cpu")


def _solution_cuda() -> str:
    cell = nbio.cells_by_grade_id(nbio.read(SOLUTION))[SRC_ID]
    return nbio.python_string_var(nbio._fill(cell.source), VAR)


def _families(item_id, sum_fill=RIGHT_SUM, max_fill=RIGHT_MAX, seed=1234):
    src = _solution_cuda()
    assert src.count(RIGHT_SUM) == 1 and src.count(RIGHT_MAX) == 1
    src = src.replace(RIGHT_SUM, sum_fill).replace(RIGHT_MAX, max_fill)
    res = cases.run_item(config.lesson(LESSON), item_id, {SRC_ID: src}, seed=seed)
    return {f.family: f.passed for f in res.families}


def test_released_notebook_blanks_the_merge_and_leaks_no_answer():
    solution = nbio.read(SOLUTION)
    student = generate.student_notebook(SOLUTION)
    src = nbio.cells_by_grade_id(student)[SRC_ID].source
    assert src.count("______") == 2 and RIGHT_SUM not in src
    assert generate.find_leaks(solution, student) == []


def test_reference_fill_passes_every_family():
    # seed 1234 here; the notebook tests below grade with seed 7
    for item in ("code_normal", "code_boundary"):
        fams = _families(item)
        assert len(fams) >= 8 and all(fams.values()), (item, fams)


def test_merge_without_rescaling_fails_every_path_but_equal_rows():
    normal = _families("code_normal", sum_fill="s + s_o")
    assert not any(normal.values()), normal
    boundary = _families("code_boundary", sum_fill="s + s_o")
    # every partial sum of an all-equal row has the same max, so skipping the rescale goes unnoticed there
    assert boundary["全相等的行（输出 1/K）"] is True, boundary
    assert boundary["大正数（不减最大值会溢出）"] is False, boundary
    assert boundary["mask + 两阶段（有的 chunk 整段被屏蔽）"] is False, boundary


def test_rescaling_only_one_side_fails():
    fams = _families("code_normal", sum_fill="s * __expf(m - m_new) + s_o")
    assert fams["warp 一行（小 K，K 不是 32 的整数倍）"] is False, fams
    assert fams["多 block 两阶段（大 K，多个 chunk）"] is False, fams


def test_taking_the_smaller_max_overflows_on_wide_rows():
    # any common base is algebraically fine; only the max keeps every exp <= 1
    normal = _families("code_normal", max_fill="fminf(m, m_o)")
    assert normal["较大的数值范围（logits 在 ±50）"] is False, normal
    boundary = _families("code_boundary", max_fill="fminf(m, m_o)")
    assert boundary["大正数（不减最大值会溢出）"] is False, boundary


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
    assert "______" in src and RIGHT_SUM not in src
    res = check.grade_notebook(student, LESSON, seed=7)
    pts = {e["id"]: e["points"] for e in res.items}
    assert pts["code_normal"] == 0 and pts["code_boundary"] == 0, res.items
    assert res.score == 0 and not res.passed
    assert not [v for v in res.vetoes if v["id"] in ("template_edit", "assert_removed", "tolerance_loosened")], res.vetoes


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
