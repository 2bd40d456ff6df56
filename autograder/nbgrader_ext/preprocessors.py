"""The judge inside ``nbgrader autograde``'s own pipeline (enabled by ``autograder.nbgrader_ext.config``).

Two preprocessors, each one step:

* ``SandboxedExecute`` takes Execute's place: the notebook runs in the per-submission sandbox
  (``autograder.execute``), its outputs are copied back for nbgrader's autograded notebook and feedback;
* ``JudgeVerdict`` runs after SaveAutoGrades: the judge's verdict on the SUBMITTED file (not the executed
  one) goes into the gradebook (``autograder.gradebook.record_verdict``), replacing the scores nbgrader
  inferred from the test cells' errors, and into the notebook's metadata.

So ``nbgrader autograde``, formgrader's autograde button and ``autograder grade`` record the same scores.
``autograder grade`` runs the same converter, with results its workers computed already
(``AUTOGRADER_PRECOMPUTED``: a folder of GradeOutcome files, used only when the submitted file's
fingerprint matches), so the gradebook is written by the coordinator alone.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Optional

from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Dict, Integer, Unicode


def _course_dir(config):
    from nbgrader.coursedir import CourseDirectory
    return CourseDirectory(config=config)


def submitted_path(config, assignment: str, student: str, notebook: str) -> Path:
    cd = _course_dir(config)
    return Path(cd.format_path(cd.submitted_directory, student, assignment)) / f"{notebook}.ipynb"


def fingerprint(path: Path) -> str:
    """What identifies a submission's content: the notebook bytes and its hint record."""
    import hashlib
    h = hashlib.sha256(path.read_bytes())
    side = path.parent / ".hints" / f"{path.stem}.json"
    if side.exists():
        h.update(b"\0hints\0" + side.read_bytes())
    return h.hexdigest()[:24]


class _Judged(NbGraderPreprocessor):
    """Shared traits: which course, which lesson, which seed."""

    course_root = Unicode("", help="Course root with grading_rubric.yaml and solutions/ (default: "
                                   "AUTOGRADER_COURSE_ROOT, the current directory, or the installed checkout)."
                          ).tag(config=True)
    lessons = Dict({}, help="nbgrader assignment id -> lesson id, when they differ (default: the notebook's "
                            "name, e.g. 05_layernorm).").tag(config=True)
    seed = Integer(None, allow_none=True, help="Seed of the hidden cases for every student (default: per student, "
                                              "derived from the course's secret salt).").tag(config=True)
    sandbox = Unicode("require", help="auto | require | off (off: grade without isolation).").tag(config=True)

    def _layout(self):
        from ..settings import CourseLayout
        return CourseLayout.resolve(self.course_root or None)

    def lesson_id(self, assignment: str, notebook: str, layout) -> str:
        from .. import config
        if assignment in self.lessons:
            return self.lessons[assignment]
        lessons = config.load(layout.rubric)["lessons"]
        for lid, entry in lessons.items():
            if Path(entry["notebook"]).stem == notebook:
                return lid
        if assignment in lessons:
            return assignment
        raise ValueError(f"no lesson for nbgrader notebook {notebook!r} of assignment {assignment!r}: set "
                         f"c.JudgeVerdict.lessons = {{{assignment!r}: 'NN_name'}}")

    def settings(self, cfg):
        from ..settings import GradingSettings
        return GradingSettings.resolve(cfg["settings"], flags={"sandbox": self.sandbox or None})

    def precomputed(self, resources) -> Optional[dict]:
        """The batch worker's outcome for this submission, when its fingerprint matches the file."""
        folder = os.environ.get("AUTOGRADER_PRECOMPUTED", "").strip()
        if not folder:
            return None
        nbg = resources["nbgrader"]
        key = (nbg["assignment"], nbg["student"], nbg["notebook"])
        cache = resources.setdefault("autograder", {})
        if cache.get("key") == key:
            return cache.get("outcome")
        cache["key"], cache["outcome"] = key, None
        p = Path(folder) / f"{nbg['student']}.json"
        try:
            outcome = json.loads(p.read_text(encoding="utf-8"))
            sub = submitted_path(self.config, nbg["assignment"], nbg["student"], nbg["notebook"])
            if outcome.get("fingerprint") == fingerprint(sub):
                cache["outcome"] = outcome
        except (OSError, ValueError):
            pass
        return cache["outcome"]


class SandboxedExecute(_Judged):
    """Execute's replacement: run the notebook in the sandbox, keep its outputs (feedback only)."""

    def preprocess(self, nb, resources):
        import nbformat

        from .. import config, execute
        pre = self.precomputed(resources)
        executed, error = None, None
        if pre is not None:
            if pre.get("executed"):
                executed = nbformat.reads(pre["executed"], as_version=4)
            error = pre.get("execution_error")
        else:
            layout = self._layout()
            nbg = resources["nbgrader"]
            cfg = config.lesson(self.lesson_id(nbg["assignment"], nbg["notebook"], layout), layout.rubric)
            run = execute.run(nb, lesson=cfg, settings=self.settings(cfg), layout=layout)
            executed, error = run.nb, run.error
        if executed is not None:
            copy_outputs(executed, nb)
        nb.metadata.setdefault("autograder", {})["execution_error"] = error
        return nb, resources


def copy_outputs(src, dst) -> None:
    """Outputs of the executed notebook ``src`` into ``dst`` (cell by cell while sources agree, else by grade id)."""
    from .. import notebook as nbio
    by_gid = nbio.cells_by_grade_id(src)
    for i, cell in enumerate(dst.cells):
        if cell.cell_type != "code":
            continue
        other = src.cells[i] if i < len(src.cells) else None
        if other is None or other.cell_type != "code" or other.source != cell.source:
            other = by_gid.get(nbio.grade_id(cell) or "")
        if other is not None and other.cell_type == "code":
            cell.outputs = other.get("outputs", [])
            cell.execution_count = other.get("execution_count")


class JudgeVerdict(_Judged):
    """After SaveAutoGrades: the judge's verdict into the gradebook and the notebook metadata."""

    def preprocess(self, nb, resources):
        from .. import config, gradebook, hints
        from .. import notebook as nbio
        from ..judge import judge
        from ..verdict import Verdict
        nbg = resources["nbgrader"]
        layout = self._layout()
        lid = self.lesson_id(nbg["assignment"], nbg["notebook"], layout)
        cfg = config.lesson(lid, layout.rubric)
        pre = self.precomputed(resources)
        if pre is not None and pre.get("verdict"):
            verdict = Verdict.from_dict(pre["verdict"])
        else:
            sub = submitted_path(self.config, nbg["assignment"], nbg["student"], nbg["notebook"])
            seed = self.seed
            if seed is None:
                from ..seeds import course_seed
                seed = course_seed(_course_dir(self.config).root, lid, nbg["student"])
            try:
                submitted = nbio.read(sub)
            except (nbio.NotebookReadError, OSError) as exc:
                from ..judge.core import unreadable_verdict
                verdict = unreadable_verdict(cfg, str(exc), seed=seed, settings=self.settings(cfg))
            else:
                verdict = judge(submitted, lid, seed=seed, settings=self.settings(cfg), layout=layout,
                                hints_used=hints.read_sidecar(sub))
        gradebook.record_verdict(nbg["db_url"], nbg["assignment"], nbg["notebook"], nbg["student"], verdict,
                                 source_cells=list(cfg.get("sources") or {}))
        nb.metadata.setdefault("autograder", {})["verdict"] = verdict.to_dict()
        self.log.info("%s / %s: %s/%s %s", nbg["student"], nbg["assignment"], verdict.score, verdict.max_score,
                      "passed" if verdict.passed else "not passed")
        return nb, resources


ACTIVE_MIME = ("text/html", "application/javascript", "text/javascript", "image/svg+xml", "text/markdown",
               "application/vnd.jupyter.widget-view+json")


class SanitizeLearnerHTML(NbGraderPreprocessor):
    """Last in the autograde pipeline: the autograded notebook formgrader shows the instructor and feedback
    shows the learner carries no active HTML from the learner. nbgrader's templates render markdown cells
    unsanitised; here ``<`` in markdown becomes ``&lt;`` (shown as written) and outputs keep their plain-text
    form only."""

    def preprocess(self, nb, resources):
        for cell in nb.cells:
            if cell.cell_type == "markdown":
                cell.source = cell.source.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
                cell.pop("attachments", None)
            elif cell.cell_type == "code":
                for o in cell.get("outputs") or []:
                    data = o.get("data")
                    if not data:
                        continue
                    for mime in ACTIVE_MIME:
                        if mime in data:
                            text = data.pop(mime)
                            data.setdefault("text/plain", text if isinstance(text, str) else json.dumps(text))
        return nb, resources
