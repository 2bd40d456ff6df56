"""The nbgrader course directory a batch grades into: set up, fed, and recorded through nbgrader itself.

* ours (``<out>/course``, made for a folder of submissions) or the instructor's (a course directory given
  as the source, with their ``nbgrader_config.py``: course id, ``db_url``, exchange are honoured, our
  pipeline is merged on top, their file is never rewritten);
* ``source/<lesson>/`` comes from ``solutions/``; an existing, different ``source/`` notebook is never
  overwritten without ``--force`` (then it is kept as ``*.ipynb.bak-<time>``);
* ``record``: nbgrader's own Autograde converter (``NbGraderAPI.autograde``) per student, fed the worker's
  results (``AUTOGRADER_PRECOMPUTED``), so the gradebook is written by this process alone and holds exactly
  what ``nbgrader autograde`` would write; then nbgrader's ``generate_feedback``.
"""
from __future__ import annotations

import filecmp
import os
import shutil
import time
from pathlib import Path
from typing import Iterable, Optional

from ..nbgrader_ext.config import (is_ours, load_course_config, make_config, prepare_environment,
                                   write_course_config)

RETRIES = 5
# Failures that say nothing about the submission, so the step is run again:
# - another process holds the gradebook's SQLite lock.
TRANSIENT = ("database is locked",)


class CourseError(RuntimeError):
    """The course directory cannot be used as it is; the message says what to do."""


class Course:
    def __init__(self, root: Path, *, instructor: bool, cell_timeout_s: int = 120):
        self.root = Path(root).resolve()
        self.instructor = instructor
        self.cell_timeout_s = cell_timeout_s
        self.root.mkdir(parents=True, exist_ok=True)
        if not self.instructor or is_ours(self.root):
            write_course_config(self.root, cell_timeout_s)
        self.config = make_config(self.root, cell_timeout_s, base=load_course_config(self.root))
        prepare_environment()

    # ------------------------------------------------------------------ nbgrader
    @property
    def db_url(self) -> str:
        from nbgrader.coursedir import CourseDirectory
        return CourseDirectory(config=self.config).db_url

    @property
    def course_id(self) -> str:
        return self.config.CourseDirectory.get("course_id", "") or "default_course"

    def api(self, log_level: str = "WARN"):
        from nbgrader.apps import NbGraderAPI
        from nbgrader.coursedir import CourseDirectory
        cfg = make_config(self.root, self.cell_timeout_s, base=self.config)
        cfg.NbGraderAPI.log_level = log_level
        return NbGraderAPI(coursedir=CourseDirectory(config=cfg), config=cfg)

    def _retry(self, fn):
        for attempt in range(RETRIES):
            res = fn()
            text = (res.get("error") or "") + (res.get("log") or "")
            if res.get("success") or not any(t in text for t in TRANSIENT):
                return res
            time.sleep(0.5 * (attempt + 1))
        return res

    # ------------------------------------------------------------------ source / release
    def source_notebook(self, lesson: str, notebook: str) -> Path:
        return self.root / "source" / lesson / notebook

    def set_source(self, lesson: str, solution: Path, *, force: bool = False) -> Optional[Path]:
        """``source/<lesson>/<nb>`` from ``solution``; returns the backup when one was made."""
        dest = self.source_notebook(lesson, solution.name)
        if dest.exists() and not filecmp.cmp(dest, solution, shallow=False):
            if not force:
                raise CourseError(f"{dest} differs from {solution}: it was edited in the course directory. "
                                  "Nothing was overwritten. Grade with that version by copying it into solutions/, "
                                  "or pass --force to replace it (your copy is kept as *.bak-<time>).")
            backup = dest.with_name(f"{dest.name}.bak-{time.strftime('%Y%m%d-%H%M%S')}")
            shutil.copyfile(dest, backup)
            shutil.copyfile(solution, dest)
            return backup
        dest.parent.mkdir(parents=True, exist_ok=True)
        if not dest.exists():
            shutil.copyfile(solution, dest)
        return None

    def generate(self, lesson: str) -> None:
        """``nbgrader generate_assignment`` (gradebook rows for the lesson's cells, release/)."""
        res = self._retry(lambda: self.api().generate_assignment(lesson, force=True, create=True))
        if not res.get("success"):
            raise CourseError(f"nbgrader generate_assignment failed for {lesson}:\n{res.get('error', '')}\n"
                              f"{(res.get('log') or '')[-3000:]}")

    def ensure_students(self, students: Iterable[str]) -> None:
        from nbgrader.api import Gradebook
        with Gradebook(self.db_url, self.course_id) as gb:
            for s in students:
                gb.update_or_create_student(s)

    def submitted(self, student: str, lesson: str, notebook: str) -> Path:
        return self.root / "submitted" / student / lesson / notebook

    def put_submission(self, student: str, lesson: str, notebook: str, text: str, hints_text: Optional[str]) -> Path:
        """Write a (repaired) submission into ``submitted/``, leaving an identical one untouched."""
        dest = self.submitted(student, lesson, notebook)
        dest.parent.mkdir(parents=True, exist_ok=True)
        if not dest.exists() or dest.read_text(encoding="utf-8") != text:
            dest.write_text(text, encoding="utf-8")
        side = dest.parent / ".hints" / f"{Path(notebook).stem}.json"
        if hints_text is not None:
            side.parent.mkdir(exist_ok=True)
            if not side.exists() or side.read_text(encoding="utf-8") != hints_text:
                side.write_text(hints_text, encoding="utf-8")
        elif side.exists():
            side.unlink()
        return dest

    # ------------------------------------------------------------------ recording
    def record(self, lesson: str, student: str, precomputed: Path, feedback: bool) -> dict:
        """nbgrader's autograde of one student with the worker's results, then its feedback HTML.
        Returns ``{success, error, feedback}`` (nbgrader's facade never raises)."""
        old = os.environ.get("AUTOGRADER_PRECOMPUTED")
        os.environ["AUTOGRADER_PRECOMPUTED"] = str(precomputed)
        try:
            api = self.api()
            res = self._retry(lambda: api.autograde(lesson, student, force=True, create=True))
            out = {"success": bool(res.get("success")), "error": "", "feedback": False}
            if not res.get("success"):
                out["error"] = ((res.get("error") or "") + (res.get("log") or ""))[-3000:]
                return out
            if feedback:
                fb = api.generate_feedback(lesson, student, force=True)
                out["feedback"] = bool(fb.get("success"))
            return out
        finally:
            if old is None:
                os.environ.pop("AUTOGRADER_PRECOMPUTED", None)
            else:
                os.environ["AUTOGRADER_PRECOMPUTED"] = old

    def feedback_html(self, lesson: str, student: str, notebook_stem: str) -> Path:
        return self.root / "feedback" / student / lesson / f"{notebook_stem}.html"
