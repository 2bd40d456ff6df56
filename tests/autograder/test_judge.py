"""The judge: the released template, static source extraction, one verdict for every path.

Lesson 5 is the real lesson here; the cases run sandboxed where bubblewrap works (the default ``auto``).
"""
from __future__ import annotations

import copy
from pathlib import Path

import nbformat
import pytest

from autograder import check, config
from autograder import notebook as nbio
from autograder.judge import check_item, judge, sources, template

ROOT = Path(__file__).resolve().parents[2]
LESSON = "05_layernorm"
FILL = "sq_sum / static_cast<float>(N) - mean * mean"
BLANK_LINE = "float var = ______;"


def released(lesson=LESSON):
    return nbio.read(ROOT / "lessons" / f"{lesson}.ipynb")


def answers():
    sol = nbio.filled(nbio.read(ROOT / "solutions" / f"{LESSON}.ipynb"))
    return {g: c.source for g, c in nbio.cells_by_grade_id(sol).items() if g in ("explain_code", "q1", "q2", "q3")}


def student(fill=FILL, edit=None):
    nb = released()
    cells = nbio.cells_by_grade_id(nb)
    cells["layernorm_src"].source = cells["layernorm_src"].source.replace(BLANK_LINE, f"float var = {fill};")
    for gid, text in answers().items():
        cells[gid].source = text
    if edit:
        edit(nb, cells)
    return nb


@pytest.mark.parametrize("lesson", sorted(config.load(ROOT / "grading_rubric.yaml")["lessons"]))
def test_template_is_exactly_the_generated_release(lesson):
    cfg = config.load(ROOT / "grading_rubric.yaml")["lessons"][lesson]
    tpl = template.released_from_file(ROOT / "solutions" / cfg["notebook"])
    rel = nbio.read(ROOT / "lessons" / cfg["notebook"])
    assert [(c.cell_type, c.source) for c in tpl.cells] == [(c.cell_type, c.source) for c in rel.cells]


# ----------------------------------------------------------------------------- sources, read statically

def test_source_is_the_literal_not_what_the_cell_computes():
    src = 'X = r"""int a;"""\nX = X.replace("a", "b")\n'
    assert sources.extract(src, "X").code == "int a;"
    assert sources.extract('X = f"""{1}"""', "X").problem.startswith("X 必须直接赋值为一个字符串常量")
    assert "找不到 X" in sources.extract('Y = r"""int a;"""', "X").problem
    assert sources.extract("%%cuda X\nint a;\n", "X").code == "\nint a;\n"     # line numbers kept
    assert "应为 X" in sources.extract("%%cuda Y\nint a;\n", "X").problem
    assert "不是合法的 Python" in sources.extract('X = r"""int a;\n', "X").problem


def test_python_added_to_the_source_cell_is_a_template_edit_and_earns_nothing(tmp_path):
    def edit(nb, cells):   # seam 1's exploit: silence the hidden test from inside the source cell
        cells["layernorm_src"].source += "\nL.grade = lambda *a, **k: None\n"
    v = judge(student(fill="0.0f", edit=edit), LESSON, seed=3)
    assert "template_edit" in [x.id for x in v.vetoes]
    assert v.item("code_normal").points == 0 and not v.passed


# ----------------------------------------------------------------------------- one template, one verdict

def test_in_place_edit_outside_the_blank_fails_self_check_with_template_edit(tmp_path):
    """Issue 18: the learner edits lessons/05 in place, outside the blank. The template comes from
    solutions/ through nbgrader, so the self-check (``autograder check``) sees the edit."""
    nb = student()
    cells = nbio.cells_by_grade_id(nb)
    cells["layernorm_src"].source = cells["layernorm_src"].source.replace("fmaxf(var, 0.0f)", "var")
    path = tmp_path / f"{LESSON}.ipynb"
    nbformat.write(nb, str(path))
    v = check.grade_notebook(path, seed=5)
    ids = [x.id for x in v.vetoes]
    assert ids == ["template_edit"] and not v.passed
    assert "fmaxf" in v.vetoes[0].evidence


def test_hidden_html_is_not_an_answer():
    text = answers()["q2"]
    v = check_item(LESSON, "q2", text=f"不知道。<!-- {text} -->")
    assert v.points == 0
    v = check_item(LESSON, "q2", text=f"不知道。<span style='display:none'>{text}</span>")
    assert v.points == 0
    assert check_item(LESSON, "q2", text=text).points == 2


def test_check_item_cases_equals_the_judges_item():
    src = nbio.python_string_var(nbio.cells_by_grade_id(student())["layernorm_src"].source, "LAYERNORM_CU")
    one = check_item(LESSON, "code_boundary", src, seed=11)
    v = judge(student(), LESSON, seed=11)
    assert one.points == v.item("code_boundary").points == 1
    assert [f["family"] for f in one.families] == [f["family"] for f in v.item("code_boundary").families]
    bad = check_item(LESSON, "code_boundary", src.replace("fmaxf(var, 0.0f)", "var"), seed=11)
    assert bad.points == 0 and "失败" in bad.message


def test_forged_cupy_backend_output_does_not_lift_the_gpu_claim_veto():
    def edit(nb, cells):
        cells["q3"].source = "我在 H100 上实测，两矩法耗时 0.12 ms，Welford 慢了 2 倍。"
        setup = cells["setup"]
        setup.execution_count = 1
        setup.outputs = [nbformat.v4.new_output("display_data", data={
            nbio.LESSON_MIME: {"lesson": LESSON, "backend": "cupy", "device": "H100"}, "text/plain": "x"})]
    v = judge(student(edit=edit), LESSON, seed=1, backend="cpu")
    assert v.backend == "cpu" and "gpu_claim" in [x.id for x in v.vetoes]


def test_wrong_lesson_and_missing_template_are_errors_not_crashes(tmp_path):
    other = nbio.filled(nbio.read(ROOT / "solutions" / "04_rmsnorm.ipynb"))
    v = judge(other, LESSON, seed=1)
    assert not v.passed and v.score == 0 and "提交错了" in v.errors[0]
    from autograder.settings import CourseLayout
    lay = CourseLayout(root=tmp_path, rubric=ROOT / "grading_rubric.yaml")
    v = judge(student(), LESSON, seed=1, layout=lay)
    assert not v.passed and "找不到本课的模板来源" in v.errors[0]


def test_verdict_round_trips_as_json():
    from autograder.verdict import Verdict
    v = judge(student(), LESSON, seed=2)
    assert Verdict.from_dict(copy.deepcopy(v.to_dict())) == v


def test_output_files_that_cannot_be_read_say_why():
    """A kernel output the grader cannot read back is reported with the reason (the grader's problem to find)."""
    import io

    import numpy as np

    from autograder.judge.executor import _load_npz
    buf = io.BytesIO()
    np.savez(buf, y=np.arange(3, dtype=np.float32))
    got, why = _load_npz(buf.getvalue(), ["y"], {})
    assert why == "" and got["y"].tolist() == [0.0, 1.0, 2.0]
    assert _load_npz(buf.getvalue(), ["y", "mean"], {}) == (None, "missing mean")
    assert _load_npz(None, ["y"], {}) == (None, "no output file")
    got, why = _load_npz(b"\0" * 64, ["y"], {})
    assert got is None and why.startswith("BadZipFile")
