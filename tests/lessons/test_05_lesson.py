"""Lesson 5 (LayerNorm) end to end on the CPU emulator: the solution notebook scores
10/10, the generated student notebook runs and scores 0 for code, and each common
wrong fill-in of `float var = ______;` fails the case family that targets it."""
from pathlib import Path

import nbformat
import pytest

from autograder import cases, check, config, generate
from autograder import notebook as nbio

LESSON = "05_layernorm"
SRC_ID, VAR = "layernorm_src", "LAYERNORM_CU"
ROOT = Path(__file__).resolve().parents[2]
SOLUTION = ROOT / "solutions" / f"{LESSON}.ipynb"
RIGHT = "sq_sum / static_cast<float>(N) - mean * mean"
CLAMP = "rsqrtf(fmaxf(var, 0.0f) + eps)"

# family names as written in grading_rubric.yaml
BLOCK_MULTIPLE = "N 为 block 整数倍"
NOT_MULTIPLE = "N > block 且不是整数倍"
SINGLE_ROW = "M = 1（单行）"
SMALL_N = "N < 32"
MID_OFFSET = "中等偏移（x≈100±1）"
NEGATIVE_VAR = "消减使朴素方差为负（fmaxf 必须生效，输出必须有限）"
TINY_EPS = "极小 eps（1e-12）"


@pytest.fixture(autouse=True)
def cpu_backend(monkeypatch):
    monkeypatch.setenv("KERNELS_BACKEND", "cpu")


def _solution_cuda() -> str:
    cell = nbio.cells_by_grade_id(nbio.read(SOLUTION))[SRC_ID]
    return nbio.python_string_var(nbio._fill(cell.source), VAR)


def _families(item_id, src, seed=1234):
    res = cases.run_item(config.lesson(LESSON), item_id, {SRC_ID: src}, seed=seed)
    return {f.family: f.passed for f in res.families}


def _with_fill(fill):
    src = _solution_cuda()
    assert RIGHT in src and CLAMP in src
    return src.replace(RIGHT, fill)


def test_boundary_families_are_the_ones_the_lesson_states():
    names = [c["family"] for c in config.lesson(LESSON)["items"]["code_boundary"]["cases"]]
    for fam in (SMALL_N, "N = 1", MID_OFFSET, NEGATIVE_VAR, TINY_EPS, "常数行（方差为 0）"):
        assert fam in names, names
    large = [c for c in config.lesson(LESSON)["items"]["code_boundary"]["cases"] if "1e4" in c["family"]]
    assert large and large[0]["tol"]["atol"] == 5.0  # the tolerance the lesson text states


@pytest.mark.parametrize("seed", [1234, 99])
def test_reference_fill_passes_every_family(seed):
    for item in ("code_normal", "code_boundary"):
        fams = _families(item, _with_fill(RIGHT), seed)
        assert fams and all(fams.values()), (item, fams)


# wrong fill-in -> (item, family that must fail)
WRONG_FILLS = [
    ("sq_sum / N - mean", "code_normal", BLOCK_MULTIPLE),             # forgot to square the mean
    ("sq_sum - mean * mean", "code_normal", NOT_MULTIPLE),            # forgot to divide by N
    ("sq_sum / N", "code_normal", SINGLE_ROW),                        # E[x^2] alone (x has nonzero mean)
    ("mean * mean", "code_normal", BLOCK_MULTIPLE),                   # E[x]^2 alone
    ("(sq_sum - sum * sum) / N", "code_normal", NOT_MULTIPLE),        # sum^2 instead of sum^2 / N
    ("sq_sum / (N - 1) - mean * mean", "code_boundary", SMALL_N),      # sample variance denominator
    ("sq_sum / BLOCK_SIZE - mean * mean", "code_boundary", SMALL_N),   # divides by the block, not N
    ("fabsf(sq_sum / N - mean * mean)", "code_boundary", NEGATIVE_VAR),  # |var| turns -16 into +16
]


@pytest.mark.parametrize("fill, item_id, family", WRONG_FILLS)
def test_wrong_fill_fails_its_family(fill, item_id, family):
    fams = _families(item_id, _with_fill(fill))
    assert family in fams, fams
    assert fams[family] is False, (fill, fams)


def test_removing_the_clamp_fails_only_where_variance_goes_negative():
    src = _with_fill(RIGHT).replace(CLAMP, "rsqrtf(var + eps)")
    assert all(_families("code_normal", src).values())
    fams = _families("code_boundary", src)
    assert fams[NEGATIVE_VAR] is False, fams
    assert fams[MID_OFFSET] and fams[SMALL_N], fams


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
    lesson_nb = nbformat.read(released, as_version=4)
    src = "\n".join(c.source for c in lesson_nb.cells)
    assert "float var = ______;" in src and RIGHT not in src
    nbformat.write(lesson_nb, student)
    res = check.grade_notebook(student, LESSON, seed=7)
    pts = {e["id"]: e["points"] for e in res.items}
    assert pts["code_normal"] == 0 and pts["code_boundary"] == 0, res.items
    assert res.score == 0 and not res.passed
    assert not [v for v in res.vetoes if v["id"] in ("template_edit", "assert_removed", "tolerance_loosened")], res.vetoes
