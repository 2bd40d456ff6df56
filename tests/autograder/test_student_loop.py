"""The student's loop without a browser: the %%cuda cell form, compile/runtime messages, hint buttons,
the self-check's stale-file refusal, and one grader run of a wrong lesson-4 answer."""
from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from autograder import config, cuda_cell, frontend, hints, lesson, messages
from autograder import notebook as nbio

REPO = Path(__file__).resolve().parents[2]
BLANK_LINE = "float inv_rms = ______;"


def _cell(nb, gid):
    return next(c for c in nb.cells if nbio.grade_id(c) == gid)


def test_cuda_cell_lines_match_the_cell_and_the_grader_reads_it_statically():
    nb = nbio.read(REPO / "lessons" / "04_rmsnorm.ipynb")
    src_cell = _cell(nb, "rmsnorm_src")
    assert src_cell.source.startswith("%%cuda RMSNORM_CU\n")
    text = nbio.python_string_var(src_cell.source, "RMSNORM_CU")
    assert text == cuda_cell.source_of(src_cell.source, "RMSNORM_CU")
    cell_lines, text_lines = src_cell.source.splitlines(), text.splitlines()
    row = next(i for i, ln in enumerate(cell_lines) if BLANK_LINE in ln)
    assert text_lines[row] == cell_lines[row]               # line k of the cell = line k of the source
    assert cuda_cell.blanks(text) == [(row + 1, cell_lines[row].index("______"))]
    assert nbio.python_string_var(src_cell.source, "OTHER_CU") is None
    assert nbio.python_string_var('X = r"""\nint a;\n"""', "X") == "\nint a;\n"   # the older form still reads


class _Exc:
    def __init__(self, diags):
        self.diagnostics, self.log = diags, ""


def test_compile_problems_place_a_caret_on_the_students_line():
    src = "\nint f() {\n    int x = 1\n    return x;\n}\nfloat g(float n) { return ______; }\nfloat h() { return n; }\n"
    blank = messages.blank_problems(src)
    assert blank == [messages.Problem(6, src.splitlines()[5].index("______"), 6, "这里还没有填空")]
    semi = messages.compile_problems(_Exc([(4, "error", 'expected a ";"')]), src)[0]
    assert (semi.line, semi.col) == (3, len("    int x = 1"))           # the line that lacks it, at its end
    undef = messages.compile_problems(_Exc([(7, "error", 'identifier "n" is undefined')]), src)[0]
    assert undef.col == src.splitlines()[6].index("n;") and "未定义" in undef.text    # the word, not the n in "return"
    filled = messages.compile_problems(_Exc([(6, "error", 'identifier "______" is undefined')]), src)[0]
    assert filled.text == "这里还没有填空"


def test_runtime_facts_are_chinese_and_drop_addresses():
    oob = {"kind": "out_of_bounds", "message": "out-of-bounds read of 2 bytes at 0x619000000490: array 'gamma' "
                                               "(1040 bytes), 0 bytes past the end", "line": 84}
    fact = messages.runtime_fact(oob)
    assert "数组 gamma 共 1040 字节" in fact and "0x" not in fact
    dead = {"kind": "deadlock", "message": "divergent __syncthreads(): 1 thread(s) wait at line 77, but 255 "
                                           "thread(s) of the block have already exited (e.g. thread (1, 0, 0))"}
    assert "第 77 行的 __syncthreads()" in messages.runtime_fact(dead)
    assert messages.diagnostic_title("race").startswith("数据竞争")


def test_hint_buttons_consume_on_click_only_and_ask_before_the_answer(tmp_path, monkeypatch):
    pytest.importorskip("ipywidgets")
    from autograder import hint_buttons
    nb_path = tmp_path / "04_rmsnorm.ipynb"
    nb_path.write_text("{}")
    sent = []
    monkeypatch.setattr(frontend, "append_output", lambda cid, out: sent.append((cid, out)) or True)
    L = lesson.Lesson("04_rmsnorm", config.lesson("04_rmsnorm"), "cpu", "cpu")
    h = hint_buttons.HintItem(L, "code", nb_path, "cell-1", used=0)
    assert hints.read_sidecar(nb_path) == {}                    # drawing the button consumed nothing
    for level in (1, 2, 3):
        h.button.click()
        assert hints.read_sidecar(nb_path)["code"] == level
        assert f"第 {level} 级" in h.seen.value
    assert all(f"第 {k} 级" in h.seen.value for k in (1, 2, 3))   # seen levels stay
    h.button.click()                                            # level 4: a question first
    assert h.confirm.layout.display == "flex" and "完整答案" in h.question.value
    assert hints.read_sidecar(nb_path)["code"] == 3
    h.no.click()
    assert hints.read_sidecar(nb_path)["code"] == 3 and h.confirm.layout.display == "none"
    h.button.click()
    h.yes.click()
    assert hints.read_sidecar(nb_path)["code"] == 4 and "第 4 级" in h.seen.value
    levels = [out["data"]["application/vnd.autograder.hint+json"]["level"] for cid, out in sent]
    assert levels == [1, 2, 3, 4] and {cid for cid, _ in sent} == {"cell-1"}
    # the records the extension appends are what the grader reads from a notebook
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("L.hints()", outputs=[
        nbformat.from_dict(out) for _, out in sent])])
    assert hints.usage_from_notebook(nb) == {"code": 4}


def test_self_check_refuses_a_file_older_than_the_screen(tmp_path, monkeypatch):
    cfg = config.lesson("04_rmsnorm")
    nb = nbio.read(REPO / "lessons" / "04_rmsnorm.ipynb")
    path = tmp_path / "04_rmsnorm.ipynb"
    nbformat.write(nb, path)
    screen = [{"grade_id": nbio.grade_id(c), "source": c.source, "cell_type": c.cell_type, "id": c.get("id")}
              for c in nb.cells if nbio.grade_id(c)]
    q1 = next(c for c in screen if c["grade_id"] == "q1")
    q1["source"] = "RMSNorm 去掉了减均值和 beta……"
    monkeypatch.setattr(frontend, "current_cell_id", lambda: "self")
    frontend._state["snapshot"] = {"cells": screen, "cell_id": "self", "will_save": False}
    shown = []
    monkeypatch.setattr(lesson.display, "show_panel", lambda kind, title, lines, code=None: shown.append(title))
    try:
        ok, _ = lesson.ensure_saved(cfg, path, {}, wait_s=0)
        assert not ok and shown and "比屏幕上的旧" in shown[-1]
        assert lesson.differing_cells(cfg, nbio.read(path), frontend.screen_cells(frontend.snapshot())) == ["q1"]
        _cell(nb, "q1").source = q1["source"]              # saved: now they agree
        nbformat.write(nb, path)
        ok, notes = lesson.ensure_saved(cfg, path, {}, wait_s=0)
        assert ok and any("已保存" in n for n in notes)
        # without the extension: the CUDA the kernel ran is compared with the file
        frontend._state["snapshot"] = None
        ran = nbio.python_string_var(_cell(nb, "rmsnorm_src").source, "RMSNORM_CU").replace("______", "0.0f")
        ok, _ = lesson.ensure_saved(cfg, path, {"RMSNORM_CU": ran}, wait_s=0)
        assert not ok and "比内核运行的旧" in shown[-1]
    finally:
        frontend._state["snapshot"] = None


def test_extension_disables_nbgraders_validate_button():
    pkg = json.loads((REPO / "autograder" / "labextension" / "package.json").read_text())
    assert "@jupyter/nbgrader:validate-assignment" in pkg["jupyterlab"]["disabledExtensions"]
    assert (REPO / "autograder" / "labextension" / pkg["jupyterlab"]["_build"]["load"]).exists()


@pytest.mark.slow
def test_a_failing_visible_check_still_fails_under_the_grader(tmp_path):
    """The failure panels replace the traceback, not the error: a wrong answer scores 0 when graded."""
    from autograder import check
    nb = nbio.read(REPO / "lessons" / "04_rmsnorm.ipynb")
    c = _cell(nb, "rmsnorm_src")
    c.source = c.source.replace(BLANK_LINE + "  // TODO", "float inv_rms = rsqrtf(sq_sum / BLOCK_SIZE + eps);")
    path = tmp_path / "04_rmsnorm.ipynb"
    nbformat.write(nb, path)
    res = check.grade_notebook(path, "04_rmsnorm", seed=7)
    items = {i.item: i for i in res.items}                      # the Verdict's ItemScores
    assert items["code_normal"].points == 0 and items["code_boundary"].points == 0
    assert "期望" in items["code_normal"].message and "实际" in items["code_normal"].message
    # no guessed cause (the family names themselves may say 溢出: "FP16 里平方会溢出的大数值")
    assert "溢出？" not in items["code_boundary"].message and "溢出?" not in items["code_boundary"].message
