"""One JupyterLab server and one headless Chromium (Debian's, driven by Playwright) for all browser tests.

Each test opens its own copy of a released lesson in its own folder under the server root, so tests do
not see each other's saves or hint records. Screenshots go to out/ at the repository root.
"""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "out"
sys.path.insert(0, str(ROOT / "tests"))
import jupyter_lab  # noqa: E402


@pytest.fixture(scope="session")
def lab_server(tmp_path_factory):
    jupyter_lab.need_browser()
    root = tmp_path_factory.mktemp("lab")
    # Render every cell (JupyterLab 4 virtualises long notebooks: off-screen cells are not laid out).
    settings = root / ".lab-settings" / "@jupyterlab" / "notebook-extension"
    settings.mkdir(parents=True)
    (settings / "tracker.jupyterlab-settings").write_text('{"windowingMode": "none"}')
    env = dict(os.environ, KERNELS_BACKEND="cpu", JUPYTER_CONFIG_DIR=str(root / ".jupyter"),
               JUPYTERLAB_SETTINGS_DIR=str(root / ".lab-settings"),
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    with jupyter_lab.lab_server(root, env, root / "jupyterlab.log", timeout_s=120,
                                extra_args=["--LabApp.expose_app_in_browser=True"]) as base:
        yield base, root


@pytest.fixture(scope="session")
def browser(lab_server):
    with jupyter_lab.chromium() as b:
        yield b


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
