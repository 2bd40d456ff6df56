"""nbgrader configuration for the course: one place, used by generation,
batch grading and the instructor's own ``nbgrader`` / formgrader commands.

``make_config()`` returns a traitlets Config for in-process use;
``write_course_config(course_dir)`` writes the same settings as
``nbgrader_config.py`` so ``nbgrader formgrader`` etc. run from the course dir
see the same pipeline.
"""
from __future__ import annotations

from pathlib import Path

from nbgrader.converters import GenerateAssignment
from nbgrader.preprocessors import ClearSolutions
from traitlets.config import Config

from .clear_cuda_solutions import ClearCudaSolutions

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


def make_config(course_dir: str | Path | None = None, cell_timeout_s: int = 120) -> Config:
    c = Config()
    if course_dir is not None:
        c.CourseDirectory.root = str(Path(course_dir).resolve())
    c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback", ".autograder"]
    c.GenerateAssignment.preprocessors = generate_preprocessors()
    c.ClearSolutions.text_stub = TEXT_STUB
    c.ClearSolutions.code_stub = {"python": CODE_STUB}
    c.Execute.timeout = int(cell_timeout_s)
    # A failing grade cell must not stop the run: later cells are still graded.
    c.Execute.allow_errors = True
    c.Execute.kernel_name = "python3"
    # nbgrader zeroes a test cell that wrote anything to stderr; Python/numpy warnings (e.g. a
    # RuntimeWarning from a reference computed on NaN rows) are harmless: drop them before grading.
    c.IgnorePattern.pattern = r"\b[A-Za-z]*Warning\b"
    return c


_CONFIG_TEMPLATE = '''\
# Written by autograder (autograder/nbgrader_ext/config.py); regenerated on every batch run.
# Instructor UI: run `jupyter lab` in this directory, then open /formgrader.
import sys
sys.path.insert(0, {repo!r})
from autograder.nbgrader_ext.config import make_config

c = get_config()  # noqa: F821
c.merge(make_config({course!r}, cell_timeout_s={timeout!r}))
'''


_MARKER = "# Written by autograder"


def write_course_config(course_dir: str | Path, cell_timeout_s: int = 120) -> Path:
    """Write nbgrader_config.py into the course dir, unless the instructor already
    has one of their own there (then it is left alone; our settings still apply
    to everything autograder runs in-process)."""
    course_dir = Path(course_dir).resolve()
    path = course_dir / "nbgrader_config.py"
    if path.exists() and not path.read_text(encoding="utf-8").startswith(_MARKER):
        return path
    path.write_text(_CONFIG_TEMPLATE.format(repo=str(REPO_ROOT), course=str(course_dir),
                                            timeout=int(cell_timeout_s)), encoding="utf-8")
    return path


def prepare_environment(env: dict | None = None) -> dict:
    """nbgrader shells out to ``alembic`` and starts Jupyter kernels by name:
    both must come from this interpreter's environment, and the kernel must be
    able to ``import autograder`` / ``kernels``.  Updates ``env`` (default
    ``os.environ``) in place and returns it."""
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
