"""One JupyterLab server and one headless Chromium (Debian's, driven by Playwright) for all browser tests.

Each test opens its own copy of a released lesson in its own folder under the server root, so tests do
not see each other's saves or hint records. Screenshots go to out/ at the repository root.
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
OUT = ROOT / "out"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def lab_server(tmp_path_factory):
    if CHROMIUM is None:
        pytest.skip("Debian chromium is not installed (make test installs it when run as root)")
    pytest.importorskip("playwright.sync_api")
    root = tmp_path_factory.mktemp("lab")
    # Render every cell (JupyterLab 4 virtualises long notebooks: off-screen cells are not laid out).
    settings = root / ".lab-settings" / "@jupyterlab" / "notebook-extension"
    settings.mkdir(parents=True)
    (settings / "tracker.jupyterlab-settings").write_text('{"windowingMode": "none"}')
    port = _free_port()
    env = dict(os.environ, KERNELS_BACKEND="cpu", JUPYTER_CONFIG_DIR=str(root / ".jupyter"),
               JUPYTERLAB_SETTINGS_DIR=str(root / ".lab-settings"),
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    log_path = root / "jupyterlab.log"
    log = open(log_path, "w")
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--allow-root", f"--port={port}",
         "--ip=127.0.0.1", "--ServerApp.token=", "--ServerApp.password=", f"--ServerApp.root_dir={root}",
         "--ServerApp.disable_check_xsrf=True", "--LabApp.news_url=", "--LabApp.expose_app_in_browser=True",
         "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
        cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
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
                    pytest.fail("JupyterLab did not start:\n" + log_path.read_text()[-3000:])
                time.sleep(0.5)
        yield base, root
    finally:
        server.terminate()
        try:
            server.wait(15)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


@pytest.fixture(scope="session")
def browser(lab_server):
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-sync",
            "--disable-background-networking", "--disable-component-update"])
        try:
            yield b
        finally:
            b.close()


class Lab:
    """One open notebook in the browser, with the helpers the tests share."""

    def __init__(self, page, folder: Path):
        self.page, self.folder = page, folder

    def cell(self, text: str):
        """The code cell whose source contains ``text``."""
        return self.notebook.locator(".jp-CodeCell", has=self.page.locator(".cm-content", has_text=text)).first

    @property
    def notebook(self):
        return self.page.locator(".jp-NotebookPanel:visible").first

    def run(self, cell):
        cell.evaluate("c => c.scrollIntoView({block: 'center'})")
        cell.locator(".cm-content").click()
        self.page.keyboard.press("Shift+Enter")

    def js(self, expr: str, arg=None):
        return self.page.evaluate(expr, arg)

    def set_source(self, grade_id: str, text: str) -> None:
        """Replace a cell's text in the notebook model, as typing would (the notebook becomes unsaved)."""
        self.js("""([gid, text]) => {
            const nb = window.jupyterapp.shell.currentWidget.content;
            const cell = nb.widgets.find(c => (c.model.getMetadata('nbgrader') || {}).grade_id === gid);
            cell.model.sharedModel.setSource(text);
        }""", [grade_id, text])

    def command(self, cmd: str) -> None:
        self.js("cmd => window.jupyterapp.commands.execute(cmd)", cmd)

    def screenshot(self, name: str, locator=None) -> Path:
        OUT.mkdir(exist_ok=True)
        path = OUT / name
        (locator or self.page).screenshot(path=str(path))
        return path


@pytest.fixture()
def open_lesson(lab_server, browser, request):
    """``open_lesson("04_rmsnorm") -> Lab``: a fresh copy of lessons/<id>.ipynb, opened, kernel idle."""
    base, root = lab_server
    pages = []

    def _open(lesson_id: str) -> Lab:
        folder = root / request.node.name
        folder.mkdir(exist_ok=True)
        shutil.copy(ROOT / "lessons" / f"{lesson_id}.ipynb", folder / f"{lesson_id}.ipynb")
        page = browser.new_page(viewport={"width": 1500, "height": 1100})
        pages.append(page)
        # ?reset: a fresh workspace, so the notebooks earlier tests opened are not restored behind this one
        page.goto(f"{base}/lab/tree/{request.node.name}/{lesson_id}.ipynb?reset")
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=90_000)
        page.wait_for_function("() => document.body.innerText.includes('Idle')", timeout=90_000)
        page.wait_for_function("() => window.cudaCourseLab !== undefined", timeout=30_000)
        return Lab(page, folder)

    yield _open
    for p in pages:
        p.close()
