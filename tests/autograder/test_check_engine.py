"""End to end through the judge: ``autograder check`` / ``check.grade_notebook`` return one Verdict.

Uses the fixture lesson "98_plain" (a pure Python ``test`` item, run in the sandbox, + written answers), so
most of it needs no CUDA; the LayerNorm lesson's real-kernel path is at the bottom.
"""
from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from autograder import check, cli, hints
from autograder import notebook as nbio

FIXTURES = Path(__file__).parent / "fixtures"


def _meta(cell, gid, *, solution=False, grade=False, locked=False, points=None):
    cell.metadata["nbgrader"] = {"grade_id": gid, "solution": solution, "grade": grade, "locked": locked,
                                 "schema_version": 3, **({"points": points} if points is not None else {})}
    return cell


Q1 = "因为 E[x^2] 与 E[x]^2 是两个相近大数相减，有效数字被抵消，所以舍入误差会让方差变成负数。"
Q2 = "Welford 更稳定，但代价是每次合并要多传一个标量，因此寄存器和指令数都会增加。"
Q3 = "未实测，仅静态审查：Welford 的指令数更多所以时间会略长。"


def solution_nb():
    nb = new_notebook()
    nb.cells = [
        new_code_cell('from autograder import lesson\nL = lesson.load("98_plain")'),
        _meta(new_code_cell("def total(xs):\n    ### BEGIN SOLUTION\n    return sum(xs)\n    ### END SOLUTION"),
              "code_sum", solution=True),
        _meta(new_code_cell("assert total([1, 2, 3]) == 6\n### BEGIN HIDDEN TESTS\nassert total([]) == 0\n"
                            "assert total([5]) == 5\n### END HIDDEN TESTS"),
              "test_code_sum", grade=True, locked=True, points=4),
        new_code_cell("assert abs(total([1.5, 2.5]) - 4.0) < 1e-6, '自检失败'"),
        _meta(new_markdown_cell("### BEGIN SOLUTION\n" + Q1 + "\n### END SOLUTION"), "q1", solution=True, grade=True,
              points=2),
        _meta(new_markdown_cell(Q2), "q2", solution=True, grade=True, points=2),
        _meta(new_markdown_cell(Q3), "q3", solution=True, grade=True, points=2),
        new_code_cell('L.hint("code_sum")\nL.self_check()'),
    ]
    return nb


@pytest.fixture
def root(tmp_path, monkeypatch):
    """A course root: rubric + solutions/ (lessons/ generated on the fly from solutions/)."""
    shutil.copy(FIXTURES / "grading_rubric.yaml", tmp_path / "grading_rubric.yaml")
    (tmp_path / "solutions").mkdir()
    nbformat.write(solution_nb(), str(tmp_path / "solutions" / "98_plain.ipynb"))
    monkeypatch.setenv("AUTOGRADER_RUBRIC", str(tmp_path / "grading_rubric.yaml"))
    monkeypatch.delenv("AUTOGRADER_SEED", raising=False)
    monkeypatch.setenv("KERNELS_BACKEND", "cpu")
    return tmp_path


def student(root, edit=None, name="student.ipynb"):
    """The released notebook with the learner's answers; ``edit(cells)`` changes it further."""
    nb = nbio.released(solution_nb())
    cells = nbio.cells_by_grade_id(nb)
    cells["code_sum"].source = "def total(xs):\n    s = 0\n    for x in xs:\n        s += x\n    return s"
    cells["q1"].source, cells["q2"].source, cells["q3"].source = Q1, Q2, Q3
    if edit:
        edit(nb)
    d = root / "submissions"
    d.mkdir(exist_ok=True)
    nbformat.write(nb, str(d / name))
    return d / name


def test_solution_notebook_scores_full_marks_via_cli(root, capsys):
    rc = cli.main(["check", str(root / "solutions" / "98_plain.ipynb"), "--json", "--seed", "5"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0, out
    assert out["score"] == out["max_score"] == 10 and out["passed"] and out["vetoes"] == []
    assert out["seed"] == 5 and out["backend"] == "cpu"
    assert {i["id"] for i in out["items"]} == {"code_sum", "q1", "q2", "q3"}


def test_student_with_problems_gets_vetoes_and_hidden_tests_restored(root):
    def edit(nb):
        cells = nbio.cells_by_grade_id(nb)
        # a learner who "fixes" the test cell, drops their own check, claims GPU timings, lists terms
        cells["code_sum"].source = "def total(xs):\n    return sum(xs) if xs else None"
        cells["test_code_sum"].source = "pass"
        nb.cells[3].source = "print('no check')"
        cells["q1"].source = "相减、抵消、负数、精度"
        cells["q3"].source = "我在 H100 上实测，耗时 0.12 ms。"
    res = check.grade_notebook(student(root, edit), seed=1)
    assert res.item("code_sum").points == 0           # hidden test total([]) == 0 ran again
    assert res.item("q1").points <= 1 and "最多 1 分" in res.item("q1").message
    ids = sorted(v.id for v in res.vetoes)
    assert ids == ["assert_removed", "gpu_claim"], res.vetoes
    assert not res.passed and res.backend == "cpu"


def test_good_student_passes_and_hint_penalty_applies(root):
    path = student(root)
    hints.record(path, "98_plain", "code_sum", 3)     # level 3 costs 0.5 in the fixture settings
    res = check.grade_notebook(path, seed=2)
    assert res.item("code_sum").points == 3.5 and "提示" in res.item("code_sum").message
    assert res.hints_used == {"code_sum": 3}
    assert res.score == 9.5 and res.passed and res.vetoes == ()


def test_hanging_notebook_fails_with_reason_and_does_not_hang(root):
    def edit(nb):
        nbio.cells_by_grade_id(nb)["code_sum"].source = "import time\nwhile True:\n    time.sleep(0.1)"
    started = time.monotonic()
    res = check.grade_notebook(student(root, edit), seed=3, timeout=8)
    assert time.monotonic() - started < 60
    assert not res.passed and res.item("code_sum").points == 0
    assert "时间限制" in res.item("code_sum").message
    assert res.item("q1").points == 2             # the written answers are scored all the same


def test_outputs_in_the_submission_decide_nothing(root):
    """Forged outputs: a recorded cupy backend, a passing grade record, a clean test cell. The judge reads the
    sources and answers, never what the notebook claims to have printed."""
    def edit(nb):
        cells = nbio.cells_by_grade_id(nb)
        cells["code_sum"].source = "def total(xs):\n    return 0"
        nb.cells[0].outputs = [nbformat.v4.new_output("display_data", data={
            nbio.LESSON_MIME: {"lesson": "98_plain", "backend": "cupy", "device": "H200"}, "text/plain": "x"})]
        nb.cells[0].execution_count = 1
        cells["test_code_sum"].outputs = [nbformat.v4.new_output("display_data", data={
            nbio.GRADE_MIME: {"item": "code_sum", "passed": True, "seed": 1, "families": []}, "text/plain": "ok"})]
        cells["test_code_sum"].execution_count = 2
        cells["q3"].source = "我在 H100 上实测，耗时 0.12 ms。"
    res = check.grade_notebook(student(root, edit), seed=4)
    assert res.item("code_sum").points == 0
    assert res.backend == "cpu" and "gpu_claim" in [v.id for v in res.vetoes]


def test_hint_cli_and_ladder(root, capsys, tmp_path):
    nbp = tmp_path / "n.ipynb"
    assert cli.main(["hint", "98_plain", "code_sum", "--notebook", str(nbp)]) == 0
    assert "第 1 级 · 概念区域" in capsys.readouterr().out
    assert cli.main(["hint", "98_plain", "code_sum", "--notebook", str(nbp)]) == 0
    assert "第 2 级" in capsys.readouterr().out
    assert hints.read_sidecar(nbp) == {"code_sum": 2}
    assert cli.main(["hint", "98_plain", "nope"]) == 2


# ----------------------------------------------------------------------------- lesson 5 with real kernels

def test_layernorm_lesson_grades_with_real_kernels(root, monkeypatch):
    from test_cases import LAYERNORM_CU, _real_backend_or_skip
    _real_backend_or_skip()
    sol = new_notebook()
    src = LAYERNORM_CU.replace("VAR_EXPR", "/*BEGIN SOLUTION*/ sq_sum / static_cast<float>(N) - mean * mean "
                                           "/*END SOLUTION*/")
    sol.cells = [
        new_code_cell('from autograder import lesson\nL = lesson.load("05_layernorm")'),
        _meta(new_code_cell(f'LAYERNORM_CU = r"""{src}"""'), "layernorm_src", solution=True),
        new_code_cell("mod = L.compile(LAYERNORM_CU)\nassert mod is not None"),
        _meta(new_code_cell('### BEGIN HIDDEN TESTS\nL.grade("code_normal")\n### END HIDDEN TESTS'),
              "test_code_normal", grade=True, locked=True, points=2),
        _meta(new_code_cell('### BEGIN HIDDEN TESTS\nL.grade("code_boundary")\n### END HIDDEN TESTS'),
              "test_code_boundary", grade=True, locked=True, points=1),
        _meta(new_markdown_cell("var 由 sq_sum / N 减去 mean² 得到，因为相减可能得到负数，所以要 fmaxf 截断。"),
              "explain_code", solution=True, grade=True, points=1),
        _meta(new_markdown_cell("方差为负会导致 rsqrt 得到 NaN，NaN 会传播到整行输出，所以用 fmaxf 截断。"),
              "q2", solution=True, grade=True, points=2),
    ]
    nbformat.write(sol, str(root / "solutions" / "05_layernorm.ipynb"))
    res = check.grade_notebook(root / "solutions" / "05_layernorm.ipynb", seed=4)
    assert res.score == res.max_score == 6 and not res.vetoes, res.to_json(indent=1)   # pass_score is 8


@pytest.mark.gpu
def test_repository_lesson5_solution_on_gpu(monkeypatch):
    """On a GPU machine: the real solutions/05 notebook scores full marks on cupy and records the GPU."""
    monkeypatch.delenv("AUTOGRADER_RUBRIC", raising=False)
    monkeypatch.setenv("KERNELS_BACKEND", "cupy")
    path = Path(__file__).resolve().parents[2] / "solutions" / "05_layernorm.ipynb"
    if not path.exists():
        pytest.skip("solutions/05_layernorm.ipynb not present")
    res = check.grade_notebook(path, seed=7)
    assert res.backend == "cupy" and res.passed and res.score == res.max_score, res.to_json(indent=1)
