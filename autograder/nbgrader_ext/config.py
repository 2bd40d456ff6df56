"""nbgrader configuration for the course: one place, used by generation, batch grading and the
instructor's own ``nbgrader`` commands and formgrader.

An instructor merges it into their own ``nbgrader_config.py`` (course id, ``db_url``, exchange stay theirs)::

    c = get_config()
    c.CourseDirectory.course_id = "cuda-course"          # yours
    from autograder.nbgrader_ext.config import configure
    configure(c)                                          # our pipeline on top

``configure`` touches only the generate / autograde pipelines, their preprocessors' options, the feedback
HTML and the export plugin:

* ``GenerateAssignment.preprocessors``: ClearSolutions swapped for ClearCudaSolutions (inline CUDA markers);
* ``Autograde.autograde_preprocessors``: Execute swapped for SandboxedExecute, JudgeVerdict after
  SaveAutoGrades (so ``nbgrader autograde`` and formgrader's button record the judge's verdict),
  SanitizeLearnerHTML last (formgrader and the feedback show a learner's HTML as text, never run it);
* ``ExportApp.plugin_class``: VerdictCsvExport (``passed``, ``vetoes``, ``needs_review`` columns);
* ``HTMLExporter.sanitize_html``: feedback HTML never carries a learner's ``<script>``.

``make_config()`` is the same as a traitlets Config for in-process use; ``write_course_config`` writes a
course directory's ``nbgrader_config.py`` for course dirs autograder creates itself.
"""
from __future__ import annotations

from pathlib import Path

from nbgrader.converters import Autograde, GenerateAssignment
from nbgrader.preprocessors import ClearSolutions, Execute, SaveAutoGrades
from traitlets.config import Config

from .clear_cuda_solutions import ClearCudaSolutions
from .export import VerdictCsvExport
from .preprocessors import JudgeVerdict, SandboxedExecute, SanitizeLearnerHTML

REPO_ROOT = Path(__file__).resolve().parents[2]

# Student-facing stubs (lesson text is Chinese).
TEXT_STUB = "YOUR ANSWER HERE（请在此作答）"
CODE_STUB = "# YOUR CODE HERE（在此补全代码）\nraise NotImplementedError()"


def generate_preprocessors() -> list:
    """nbgrader's default GenerateAssignment pipeline with ClearSolutions swapped
    for ClearCudaSolutions (same position, so LockCells runs before and the
    checksums after it)."""
    default = GenerateAssignment.class_traits()["preprocessors"].make_dynamic_default()
    swapped = [ClearCudaSolutions if pp is ClearSolutions else pp for pp in default]
    assert ClearCudaSolutions in swapped, "nbgrader pipeline changed: ClearSolutions not found"
    return swapped


def autograde_preprocessors() -> list:
    """nbgrader's default autograde pipeline with Execute swapped for SandboxedExecute, JudgeVerdict right
    after SaveAutoGrades (which creates the grade rows JudgeVerdict fills) and SanitizeLearnerHTML last."""
    default = Autograde.class_traits()["autograde_preprocessors"].make_dynamic_default()
    assert Execute in default and SaveAutoGrades in default, "nbgrader autograde pipeline changed"
    out = [SandboxedExecute if pp is Execute else pp for pp in default]
    out.insert(out.index(SaveAutoGrades) + 1, JudgeVerdict)
    return out + [SanitizeLearnerHTML]


def configure(c: Config, cell_timeout_s: int | None = None) -> Config:
    """Put the course's pipeline into ``c`` (an instructor's config or a fresh one); returns ``c``."""
    c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback", ".autograder", ".hints"]
    c.GenerateAssignment.preprocessors = generate_preprocessors()
    c.Autograde.autograde_preprocessors = autograde_preprocessors()
    c.ClearSolutions.text_stub = TEXT_STUB
    c.ClearSolutions.code_stub = {"python": CODE_STUB}
    if cell_timeout_s is not None:
        c.Execute.timeout = int(cell_timeout_s)
    # A failing grade cell must not stop the run: later cells are still graded.
    c.Execute.allow_errors = True
    c.Execute.kernel_name = "python3"
    # nbgrader zeroes a test cell that wrote anything to stderr; Python/numpy warnings (e.g. a
    # RuntimeWarning from a reference computed on NaN rows) are harmless: drop them before grading.
    c.IgnorePattern.pattern = r"\b[A-Za-z]*Warning\b"
    c.ExportApp.plugin_class = VerdictCsvExport
    c.HTMLExporter.sanitize_html = True
    return c


def make_config(course_dir: str | Path | None = None, cell_timeout_s: int = 120, base: Config | None = None) -> Config:
    """``base`` (e.g. an instructor's loaded nbgrader_config.py) with the course pipeline on top."""
    c = Config()
    if base is not None:
        c.merge(base)
    if course_dir is not None:
        c.CourseDirectory.root = str(Path(course_dir).resolve())
    return configure(c, cell_timeout_s)


def load_course_config(course_dir) -> Config | None:
    """The ``nbgrader_config.py`` in a course directory, loaded as nbgrader loads it (None if absent)."""
    from traitlets.config.loader import PyFileConfigLoader
    path = Path(course_dir) / "nbgrader_config.py"
    if not path.exists():
        return None
    return PyFileConfigLoader(path.name, path=str(path.parent)).load_config()


_CONFIG_TEMPLATE = '''\
# Written by autograder (autograder/nbgrader_ext/config.py); regenerated on every batch run.
# Instructor UI: run `jupyter lab` in this directory, then open /formgrader.
import sys
sys.path.insert(0, {repo!r})
from autograder.nbgrader_ext.config import configure

c = get_config()  # noqa: F821
c.CourseDirectory.root = {course!r}
configure(c, cell_timeout_s={timeout!r})
'''


_MARKER = "# Written by autograder"


def write_course_config(course_dir: str | Path, cell_timeout_s: int = 120) -> Path:
    """Write nbgrader_config.py into the course dir, unless the instructor already
    has one of their own there (then it is left alone and merged in at run time)."""
    course_dir = Path(course_dir).resolve()
    path = course_dir / "nbgrader_config.py"
    if path.exists() and not path.read_text(encoding="utf-8").startswith(_MARKER):
        return path
    path.write_text(_CONFIG_TEMPLATE.format(repo=str(REPO_ROOT), course=str(course_dir),
                                            timeout=int(cell_timeout_s)), encoding="utf-8")
    return path


def is_ours(course_dir) -> bool:
    path = Path(course_dir) / "nbgrader_config.py"
    return not path.exists() or path.read_text(encoding="utf-8").startswith(_MARKER)


def prepare_environment(env: dict | None = None) -> dict:
    """nbgrader shells out to ``alembic``: it must come from this interpreter's environment.
    Updates ``env`` (default ``os.environ``) in place and returns it."""
    import os
    import sys

    env = os.environ if env is None else env
    bindir = str(Path(sys.executable).parent)
    path = env.get("PATH", "")
    if bindir not in path.split(os.pathsep):
        env["PATH"] = bindir + (os.pathsep + path if path else "")
    pp = env.get("PYTHONPATH", "")
    if str(REPO_ROOT) not in pp.split(os.pathsep):
        env["PYTHONPATH"] = str(REPO_ROOT) + (os.pathsep + pp if pp else "")
    return env
