"""The student's loop in a real browser (JupyterLab 4 + the course extension, Debian's headless Chromium).

Lessons 04 and 05, as released: Run All on an untouched lesson, a wrong answer, a compile error, a protected
edit made in place, the hint buttons, an answer typed and not saved. Screenshots go to out/e2e_*.png.
"""
from __future__ import annotations

import json

import nbformat
import pytest

from conftest import ROOT

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CUDA_BLANK_04 = "float inv_rms = ______;"
WRONG_04 = "float inv_rms = rsqrtf(sq_sum / BLOCK_SIZE + eps);"
RIGHT_04 = "float inv_rms = rsqrtf(sq_sum / static_cast<float>(N) + eps);"


def _expect():
    from playwright.sync_api import expect
    return expect


def _cuda_04() -> str:
    nb = nbformat.read(ROOT / "lessons" / "04_rmsnorm.ipynb", as_version=4)
    return next(c.source for c in nb.cells if c.source.startswith("%%cuda RMSNORM_CU"))


def _notebook_text(lab) -> str:
    return lab.notebook.inner_text()


def test_untouched_run_all_reaches_the_self_check(open_lesson):
    expect = _expect()
    lab = open_lesson("04_rmsnorm")
    # The CUDA cell reads like CUDA: C++ mode, line numbers, the blank marked.
    cuda = lab.notebook.locator(".jp-CodeCell.ag-cuda-cell").first
    expect(cuda).to_be_visible(timeout=30_000)
    expect(cuda.locator(".cm-lineNumbers")).to_be_attached()
    # CodeMirror lays out only the lines near the viewport: bring the blank's line into view first
    lab.js("""() => {
        const cell = window.jupyterapp.shell.currentWidget.content.widgets
            .find(c => c.node.classList.contains('ag-cuda-cell'));
        const pos = cell.editor.getPositionAt(cell.model.sharedModel.getSource().indexOf('______'));
        cell.editor.revealPosition(pos);
        cell.node.querySelector('.cm-content').scrollIntoView({block: 'nearest'});
    }""")
    blank = cuda.locator(".ag-blank")
    blank.first.scroll_into_view_if_needed(timeout=10_000)
    expect(blank).to_have_count(1)
    expect(blank).to_have_text("______")
    mime = lab.js("() => window.jupyterapp.shell.currentWidget.content.widgets"
                  ".find(c => c.node.classList.contains('ag-cuda-cell')).model.mimeType")
    assert mime == "text/x-c++src"
    lab.screenshot("e2e_04_cuda_cell.png")

    lab.command("notebook:run-all-cells")
    out = lab.cell("L.self_check()").locator(".jp-OutputArea")
    expect(out).to_contain_text("自检结果", timeout=600_000)
    expect(out).to_contain_text("先补齐填空")
    compile_out = lab.cell("mod = L.compile(RMSNORM_CU)").locator(".jp-OutputArea")
    expect(compile_out).to_contain_text("这里还没有填空")
    expect(lab.cell('L.check("code")').locator(".jp-OutputArea")).to_contain_text("先补齐填空")
    expect(lab.cell("L.hints()").locator(".jp-OutputArea button").first).to_be_visible()
    text = _notebook_text(lab)
    assert "Traceback" not in text and "----> " not in text, "a raw Python traceback reached the page"
    lab.screenshot("e2e_04_run_all_self_check.png", lab.cell("L.self_check()"))


def test_wrong_answer_compile_error_and_protected_edit(open_lesson):
    expect = _expect()
    lab = open_lesson("04_rmsnorm")
    page = lab.page
    lab.run(lab.cell("from autograder import lesson"))
    expect(lab.cell("from autograder import lesson").locator(".jp-OutputArea")).to_contain_text("后端", timeout=90_000)

    # 1. A wrong answer typed into the blank (BLOCK_SIZE instead of N): the check under the exercise shows the
    #    failing family, the input, the first mismatching element, expected vs got.
    src = _cuda_04()
    row = next(i for i, ln in enumerate(src.splitlines()) if CUDA_BLANK_04 in ln)
    col = src.splitlines()[row].index("______")
    cuda = lab.notebook.locator(".jp-CodeCell.ag-cuda-cell").first   # (its first line leaves the layout when scrolled)
    cuda.evaluate("c => c.scrollIntoView({block: 'start'})")
    cuda.locator(".cm-content").click()
    page.keyboard.press("Control+Home")
    for _ in range(row):
        page.keyboard.press("ArrowDown")
    for _ in range(col):
        page.keyboard.press("ArrowRight")
    for _ in range(len("______")):
        page.keyboard.press("Shift+ArrowRight")
    page.keyboard.insert_text("rsqrtf(sq_sum / BLOCK_SIZE + eps)")
    page.keyboard.press("Shift+Enter")                       # runs the %%cuda cell
    expect(cuda.locator(".jp-OutputArea")).to_contain_text("没有未填的空", timeout=60_000)
    lab.run(lab.cell("mod = L.compile(RMSNORM_CU)"))
    expect(lab.cell("mod = L.compile(RMSNORM_CU)").locator(".jp-OutputArea")).to_contain_text("编译成功",
                                                                                            timeout=120_000)
    check = lab.cell('L.check("code")')
    lab.run(check)
    out = check.locator(".jp-OutputArea")
    expect(out).to_contain_text("seed=", timeout=300_000)
    for word in ("未通过", "N 为 block 整数倍", "第一个不符的位置", "期望", "实际", "容差", "M=", "N="):
        expect(out).to_contain_text(word)
    assert "平方和溢出" not in out.inner_text()           # no guessed cause
    lab.screenshot("e2e_04_wrong_answer_check.png", check)

    # 2. A compile error (a missing ';'): the student's own line, its number, a caret.
    bad = _cuda_04().replace(CUDA_BLANK_04, RIGHT_04).replace(
        "float x = __half2float(row_in[col]);\n        local_sq_sum", "float x = __half2float(row_in[col])\n"
        "        local_sq_sum", 1)
    bad_line = next(i + 1 for i, ln in enumerate(bad.splitlines()) if ln.rstrip().endswith("row_in[col])"))
    lab.set_source("rmsnorm_src", bad)
    lab.run(cuda)
    expect(cuda.locator(".jp-OutputArea")).to_contain_text("没有未填的空", timeout=60_000)
    comp = lab.cell("mod = L.compile(RMSNORM_CU)")
    lab.run(comp)
    cout = comp.locator(".jp-OutputArea")
    expect(cout).to_contain_text("编译失败", timeout=120_000)
    expect(cout).to_contain_text(f"第 {bad_line} 行")
    expect(cout).to_contain_text("float x = __half2float(row_in[col])")
    expect(cout).to_contain_text("^")
    lab.screenshot("e2e_04_compile_error.png", comp)

    # 3. A protected-code edit made in place (outside the blank), saved: the self-check fails with template_edit.
    edited = _cuda_04().replace(CUDA_BLANK_04, RIGHT_04).replace("col += BLOCK_SIZE) {\n        float x = "
                                                                 "__half2float(row_in[col]);\n        row_out",
                                                                 "col += BLOCK_SIZE) {\n        float x = "
                                                                 "__half2float(row_in[col]) * 1.0f;\n        row_out")
    assert edited != _cuda_04().replace(CUDA_BLANK_04, RIGHT_04)
    lab.set_source("rmsnorm_src", edited)
    lab.run(cuda)
    selfc = lab.cell("L.self_check()")
    lab.run(selfc)
    sout = selfc.locator(".jp-OutputArea")
    expect(sout).to_contain_text("自检结果", timeout=600_000)
    expect(sout).to_contain_text("template_edit")
    expect(sout).to_contain_text("未通过")
    lab.screenshot("e2e_04_template_edit.png", selfc)


def test_hint_buttons_wait_for_the_student(open_lesson):
    expect = _expect()
    lab = open_lesson("05_layernorm")
    lab.run(lab.cell("from autograder import lesson"))
    hints_cell = lab.cell("L.hints()")
    lab.run(hints_cell)
    out = hints_cell.locator(".jp-OutputArea")
    button = out.locator("button", has_text="提示 code：看第")
    expect(button).to_be_visible(timeout=60_000)
    for level in (1, 2, 3):
        expect(button).to_contain_text(f"看第 {level} 级")
        button.click()
        expect(out).to_contain_text(f"提示 code · 第 {level} 级")
    for level in (1, 2, 3):                          # every level seen stays visible
        expect(out).to_contain_text(f"提示 code · 第 {level} 级")
    expect(button).to_contain_text("看第 4 级")
    button.click()
    expect(out).to_contain_text("是完整答案")          # asks before level 4
    expect(out.get_by_role("button", name="确定，看完整答案")).to_be_visible()   # hidden ones are not in the a11y tree
    assert "提示 code · 第 4 级" not in out.inner_text()
    lab.screenshot("e2e_05_hint_confirm.png", hints_cell)
    out.get_by_role("button", name="先不看").click()
    assert "提示 code · 第 4 级" not in out.inner_text()

    sidecar = json.loads((lab.folder / ".hints" / "05_layernorm.json").read_text())
    assert sidecar["levels"]["code"] == 3
    # the records are in the notebook itself too (appended by the extension)
    recorded = lab.js("""() => {
        const nb = window.jupyterapp.shell.currentWidget.content;
        const cell = nb.widgets.find(c => (c.model.getMetadata('nbgrader') || {}).grade_id === 'hints');
        const outs = cell.model.outputs.toJSON();
        return outs.filter(o => o.data && o.data['application/vnd.autograder.hint+json'])
                   .map(o => o.data['application/vnd.autograder.hint+json'].level);
    }""")
    assert sorted(recorded) == [1, 2, 3], recorded
    # running the cell again (as Run All does) consumes nothing
    lab.run(hints_cell)
    expect(out.locator("button", has_text="提示 code：看第")).to_contain_text("看第 4 级", timeout=60_000)
    assert json.loads((lab.folder / ".hints" / "05_layernorm.json").read_text())["levels"]["code"] == 3


def test_unsaved_answer_is_checked_as_on_screen_and_saved_before_the_self_check(open_lesson):
    expect = _expect()
    lab = open_lesson("05_layernorm")
    sol = nbformat.read(ROOT / "solutions" / "05_layernorm.ipynb", as_version=4)
    answer = next(c.source for c in sol.cells if (c.metadata.get("nbgrader") or {}).get("grade_id") == "q1")
    lab.run(lab.cell("from autograder import lesson"))
    expect(lab.cell("from autograder import lesson").locator(".jp-OutputArea")).to_contain_text("后端", timeout=90_000)

    # type the answer into the q1 cell, do not save
    lab.set_source("q1", answer)        # the cell's text changes as typing would; nothing is saved
    assert lab.js("() => window.jupyterapp.shell.currentWidget.context.model.dirty")
    check = lab.cell('L.check("q1")')
    lab.run(check)
    cout = check.locator(".jp-OutputArea")
    expect(cout).to_contain_text("屏幕上的答案", timeout=120_000)
    assert "还没有作答" not in cout.inner_text()
    lab.screenshot("e2e_05_check_unsaved_answer.png", check)

    selfc = lab.cell("L.self_check()")
    lab.run(selfc)
    sout = selfc.locator(".jp-OutputArea")
    expect(sout).to_contain_text("自检结果", timeout=600_000)
    expect(sout).to_contain_text("已保存")
    row = sout.locator("tr", has_text="q1")
    assert "未作答" not in row.inner_text(), row.inner_text()
    saved = nbformat.read(lab.folder / "05_layernorm.ipynb", as_version=4)
    assert any(answer.strip()[:40] in c.source for c in saved.cells), "the self-check did not save the answer"
    lab.screenshot("e2e_05_self_check_after_save.png", selfc)
