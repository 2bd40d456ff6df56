"""Regressions found by running a held-out hostile corpus through ``autograder grade``: each test builds its
own small hostile submission and asserts what the instructor relies on (the attack gains nothing, nothing
is silently dropped, the reason is in Chinese)."""
from __future__ import annotations

import os
import re

import nbformat
import pytest

from autograder import batch, check

ROOT = check.lesson_root()
LESSON = "05_layernorm"
CJK = re.compile(r"[\u4e00-\u9fff]")


def _released():
    return nbformat.read(str(ROOT / "lessons" / f"{LESSON}.ipynb"), as_version=4)


# ----------------------------------------------------------------------------- linked submissions

@pytest.mark.parametrize("layout", ["file", "student_folder", "folder_of_links", "course_dir"])
def test_a_linked_submission_is_listed_invalid_with_a_reason_and_never_opened(tmp_path, layout):
    """A submission that is a symlink (to the instructor's solution, a secret, another student's file) is
    never read, and never silently dropped either: it gets a row saying why it earned nothing."""
    secret = tmp_path / "instructor" / "solution.ipynb"
    secret.parent.mkdir()
    nbformat.write(_released(), str(secret))
    src = tmp_path / "subs"
    honest = _released()
    if layout == "course_dir":
        for who, link in (("honest", False), ("linker", True)):
            d = src / "submitted" / who / LESSON
            d.mkdir(parents=True)
            if link:
                os.symlink(secret, d / f"{LESSON}.ipynb")
            else:
                nbformat.write(honest, str(d / f"{LESSON}.ipynb"))
    else:
        src.mkdir()
        nbformat.write(honest, str(src / "honest.ipynb"))
        if layout == "file":
            os.symlink(secret, src / "linker.ipynb")
        elif layout == "student_folder":
            os.symlink(secret.parent, src / "linker")
        else:
            (src / "linker").mkdir()
            os.symlink(secret, src / "linker" / f"{LESSON}.ipynb")
    subs = {s.student: s for s in batch.discover(src, LESSON, LESSON)}
    assert set(subs) == {"honest", "linker"}
    assert subs["honest"].problem == ""
    template = check.template_notebook(check.config.lesson(LESSON))
    text, problem, _ = batch.preflight(subs["linker"], LESSON, template)
    assert text is None and "符号链接" in problem and CJK.search(problem)
    text, problem, _ = batch.preflight(subs["honest"], LESSON, template)
    assert text is not None and problem == ""
