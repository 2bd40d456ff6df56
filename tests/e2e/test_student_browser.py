"""A student's path through lesson 5 in a real browser.

Starts JupyterLab on a copy of lessons/05_layernorm.ipynb and drives it with Playwright in Debian's headless
Chromium (no browser download): fill the blank by typing into the CUDA cell, save, Run All, ask for the first
hint, run the self-check cell, and read the score off the page.
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LESSON = ROOT / "lessons" / "05_layernorm.ipynb"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ANSWER = "sq_sum / static_cast<float>(N) - mean * mean"

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture()
def jupyterlab(tmp_path):
    if CHROMIUM is None:
        pytest.skip("Debian chromium is not installed (make test installs it when run as root)")
    pytest.importorskip("playwright.sync_api")
    shutil.copy(LESSON, tmp_path / LESSON.name)
    port = _free_port()
    # Render every cell (JupyterLab 4 virtualises long notebooks: off-screen cells are not laid out).
    settings = tmp_path / ".lab-settings" / "@jupyterlab" / "notebook-extension"
    settings.mkdir(parents=True)
    (settings / "tracker.jupyterlab-settings").write_text('{"windowingMode": "none"}')
    env = dict(os.environ, KERNELS_BACKEND="cpu", JUPYTER_CONFIG_DIR=str(tmp_path / ".jupyter"),
               JUPYTERLAB_SETTINGS_DIR=str(tmp_path / ".lab-settings"),
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    log = open(tmp_path / "jupyterlab.log", "w")
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--allow-root", f"--port={port}",
         "--ip=127.0.0.1", "--ServerApp.token=", "--ServerApp.password=", f"--ServerApp.root_dir={tmp_path}",
         "--ServerApp.disable_check_xsrf=True", "--LabApp.news_url=", "--LabApp.check_for_updates_class="
         "jupyterlab.NeverCheckForUpdate"],
        cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 120
        while True:
            try:
                urllib.request.urlopen(f"{base}/api/status", timeout=2)
                break
            except Exception:
                if time.time() > deadline or server.poll() is not None:
                    log.flush()
                    pytest.fail("JupyterLab did not start:\n" + (tmp_path / "jupyterlab.log").read_text()[-3000:])
                time.sleep(0.5)
        yield base, tmp_path
    finally:
        server.terminate()
        try:
            server.wait(15)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


def _blank_position():
    """(row, column) of the ______ placeholder inside the lesson's CUDA source cell."""
    import nbformat

    nb = nbformat.read(LESSON, as_version=4)
    src = next(c.source for c in nb.cells if c.cell_type == "code" and "LAYERNORM_CU" in c.source
               and "______" in c.source)
    for row, line in enumerate(src.splitlines()):
        if "float var = ______" in line:
            return row, line.index("______")
    raise AssertionError("the released lesson has no `float var = ______` blank")


def _cell(page, text):
    """The code cell whose source contains ``text``."""
    return page.locator(".jp-CodeCell", has=page.locator(".cm-content", has_text=text)).first


def _run_cell(page, cell):
    cell.evaluate("c => c.scrollIntoView({block: 'center'})")
    cell.locator(".cm-content").click()
    page.keyboard.press("Shift+Enter")


def test_student_fills_blank_gets_hint_and_self_checks(jupyterlab):
    from playwright.sync_api import expect, sync_playwright

    base, workdir = jupyterlab
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-sync",
            "--disable-background-networking", "--disable-component-update"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        try:
            page.goto(f"{base}/lab/tree/{LESSON.name}")
            page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=90_000)
            expect(page.locator(".jp-Notebook-ExecutionIndicator, #jp-main-statusbar").first).to_be_visible()
            page.wait_for_function("() => document.body.innerText.includes('Idle')", timeout=90_000)

            # 1. Fill the blank from the keyboard, as a student would: into the CUDA cell, down to the blank's line,
            #    select the ______ placeholder and type the expression. (CodeMirror only lays out lines near the
            #    viewport, so we navigate with the cursor rather than look the line up in the DOM.)
            row, col = _blank_position()
            cuda_cell = _cell(page, "LAYERNORM_CU")
            cuda_cell.evaluate("c => c.scrollIntoView({block: 'start'})")
            cuda_cell.locator(".cm-content").click()
            page.keyboard.press("Control+Home")
            for _ in range(row):
                page.keyboard.press("ArrowDown")
            for _ in range(col):  # ArrowDown from Ctrl+Home keeps column 0
                page.keyboard.press("ArrowRight")
            for _ in range(len("______")):
                page.keyboard.press("Shift+ArrowRight")
            page.keyboard.insert_text(ANSWER)
            expect(page.locator(".jp-CodeCell .cm-line", has_text=f"float var = {ANSWER};").first).to_be_attached()
            page.keyboard.press("Escape")
            page.keyboard.press("Control+s")
            page.wait_for_function("() => document.body.innerText.includes('Saving completed')", timeout=30_000)

            # 2. Run all cells from the menu.
            page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
            page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
            check_cell = _cell(page, "L.self_check()")
            expect(check_cell.locator(".jp-OutputArea")).to_contain_text("结果", timeout=600_000)

            # 3. Ask for the first hint of the code exercise.
            hint_cell = _cell(page, 'L.hint("code")')
            hint_cell.evaluate("c => c.scrollIntoView({block: 'center'})")
            hint_cell.locator(".cm-content").click()
            page.keyboard.press("Control+a")
            page.keyboard.insert_text('L.hint("code")')
            page.keyboard.press("Shift+Enter")
            expect(hint_cell.locator(".jp-OutputArea")).to_contain_text("第 1 级", timeout=60_000)

            # 4. Save and run the self-check cell again; read the score on the page.
            page.keyboard.press("Escape")
            page.keyboard.press("Control+s")
            _run_cell(page, check_cell)
            out = check_cell.locator(".jp-OutputArea")
            expect(out).to_contain_text("使用的提示", timeout=300_000)
            text = out.inner_text()
            page.screenshot(path=str(workdir / "lesson05.png"), full_page=False)
        finally:
            browser.close()

    # Code items pass with the filled blank; the unanswered questions keep the total below the pass line.
    assert "code_normal" in text and "2/2" in text, text
    assert "code_boundary" in text and "1/1" in text, text
    assert "3 / 10" in text or "3/10" in text, text
    assert "未通过" in text, text
