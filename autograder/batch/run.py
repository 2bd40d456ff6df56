"""``grade_batch``: the coordinator of instructor grading.

1. the course directory (``batch.course``): source/ from solutions/, ``generate_assignment``, students;
2. every submission read once here (unreadable, too large or another lesson's: recorded as ``invalid``
   with the reason, never given to nbgrader); editor damage repaired; outputs dropped except the hint
   records (the verdict never reads them), written to ``submitted/``;
3. resume: a student whose stored outcome is current is not regraded (``--force`` regrades);
4. jobs to the pool (local processes or Dask); as each outcome arrives it is stored, recorded in the
   gradebook through nbgrader's own autograde pipeline (this process alone writes the gradebook), its
   feedback written, the lesson's CSV rewritten;
5. at the end the instructor's overrides are folded in, ``grades-<lesson>.csv`` and the merged
   ``gradebook.csv`` written, the table printed.
"""
from __future__ import annotations

import copy
import queue
import shutil
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional

from .. import config
from ..settings import CourseLayout, GradingSettings
from .course import Course, CourseError
from .discover import Submission, discover, is_course_dir
from .jobs import GradeJob, GradeOutcome, Status
from .report import Row, make_row, merge_gradebook, print_table, write_lesson_csv
from .store import ResultStore

MAX_SUBMISSION_MB = 64


@dataclass
class BatchResult:
    rows: List[Row]
    item_ids: List[str]
    csv_path: Path
    gradebook_path: Path
    course_dir: Path
    feedback_dir: Path
    seconds: float = 0.0
    graded: List[str] = field(default_factory=list)      # students graded by this run (not resumed)
    skipped: List[str] = field(default_factory=list)     # current results kept

    def row(self, student: str) -> Row:
        return next(r for r in self.rows if r.student == student)


class Interrupted(Exception):
    """Raised by the signal handlers: stop every worker, keep what is stored."""


def strip_outputs(nb) -> None:
    """Outputs go (a run's output can be 100 MB); hint records stay (the verdict reads them)."""
    from ..notebook import HINT_MIME
    for c in nb.cells:
        if c.cell_type != "code":
            continue
        keep = [o for o in c.get("outputs") or [] if HINT_MIME in (o.get("data") or {})]
        c.outputs = keep
        if not keep:
            c.execution_count = None


def normalize_nbgrader_metadata(nb, template) -> None:
    """Cells nbgrader knows get exactly the template's nbgrader metadata (their source is the learner's);
    any other cell claiming nbgrader metadata (an extra grade id, a duplicate, a cell pasted from another
    lesson, forged points) loses it. So nbgrader's own steps never trip over metadata a learner can edit."""
    import copy as _copy

    from .. import notebook as nbio
    want = {nbio.grade_id(c): c for c in template.cells if nbio.grade_id(c)}
    seen = set()
    for c in nb.cells:
        meta = c.get("metadata") or {}
        if "nbgrader" not in meta:
            continue
        gid = nbio.grade_id(c)
        if gid in want and gid not in seen:
            meta["nbgrader"] = _copy.deepcopy(want[gid].metadata["nbgrader"])
            seen.add(gid)
            if c.cell_type != want[gid].cell_type:        # an answer cell saved as raw, a source cell as markdown
                c.cell_type = want[gid].cell_type
                if c.cell_type == "code":
                    c["outputs"], c["execution_count"] = [], None
                else:
                    c.pop("outputs", None)
                    c.pop("execution_count", None)
        else:
            meta.pop("nbgrader", None)


def preflight(sub: Submission, lesson_id: str, template, layout: Optional[CourseLayout] = None):
    """``(notebook text to grade or None, problem or "", notes)``."""
    import nbformat

    from .. import check
    from .. import notebook as nbio
    if sub.problem:
        return None, sub.problem, []
    try:
        size = sub.notebook.stat().st_size
    except OSError as exc:
        return None, f"{sub.notebook.name}：无法读取（{exc.strerror}）", []
    if size > MAX_SUBMISSION_MB * 2**20:
        return None, (f"{sub.notebook.name}：文件有 {size / 2**20:.0f} MB，超过 {MAX_SUBMISSION_MB} MB 的上限"
                      "（多半是输出太多）：清除输出（Kernel → Restart & Clear Output）后保存再提交。"), []
    try:
        nb = nbio.read(sub.notebook)
    except (nbio.NotebookReadError, OSError, RecursionError) as exc:
        return None, str(exc) if isinstance(exc, nbio.NotebookReadError) else f"{sub.notebook.name}：{exc}", []
    wrong = check.wrong_lesson_message(nb, lesson_id, layout)
    if wrong:
        return None, wrong, []
    notes = check.repair(nb, template)
    normalize_nbgrader_metadata(nb, template)
    strip_outputs(nb)
    return nbformat.writes(nb), "", notes


def grade_batch(source, lesson_id: str, out_dir, *, workers: int = 2, seed: Optional[int] = None,
                students: Optional[List[str]] = None, force: bool = False, scheduler: Optional[str] = None,
                settings: Optional[GradingSettings] = None, layout: Optional[CourseLayout] = None,
                feedback: bool = True, progress: bool = True, show: bool = True,
                worker_limit_s: Optional[float] = None) -> BatchResult:
    """Grade every submission in ``source`` for ``lesson_id`` into ``out_dir`` (see module doc)."""
    from .. import sandbox
    from ..judge.core import grader_version, rubric_hash
    from ..judge.template import released_from_file
    from ..nbgrader_ext.preprocessors import fingerprint
    from ..seeds import course_seed

    started = time.monotonic()
    layout = layout or CourseLayout.resolve()
    cfg = config.lesson(lesson_id, layout.rubric)
    settings = settings or GradingSettings.resolve(cfg["settings"], flags={"sandbox": "require"})
    if settings.sandbox == "require" and not sandbox.available():
        raise sandbox.SandboxUnavailable(
            f"instructor grading runs every submission in a sandbox, and none can be made here: "
            f"{sandbox.unavailable_reason()}. Install bubblewrap, or pass --no-sandbox to grade without "
            "isolation (a submission could then read or change anything this user can).")
    source, out_dir = Path(source).resolve(), Path(out_dir).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    instructor = is_course_dir(source)
    notebook = Path(cfg["notebook"]).stem
    solution = layout.solution(cfg)
    if not solution.exists():
        raise FileNotFoundError(f"solution notebook not found: {solution}")
    course = Course(source if instructor else out_dir / "course", instructor=instructor,
                    cell_timeout_s=int(settings.cell_timeout_s))
    try:
        course.set_source(lesson_id, solution, force=force)
    except CourseError:
        if instructor:
            raise
        course = _fresh_course(course, settings)     # our own course dir: the solution changed since
        course.set_source(lesson_id, solution)
    try:
        course.generate(lesson_id)
    except CourseError as exc:
        if instructor or "there are submissions" not in str(exc):
            raise
        course = _fresh_course(course, settings)     # nbgrader cannot change cells once it has submissions
        course.set_source(lesson_id, solution)
        course.generate(lesson_id)

    subs = discover(source, lesson_id, notebook)
    everyone = {s.student for s in subs}          # the CSV keeps the others when --student picks a few
    if students:
        wanted = set(students)
        unknown = wanted - {s.student for s in subs}
        if unknown:
            raise FileNotFoundError(f"no submission for --student {', '.join(sorted(unknown))} in {source}")
        subs = [s for s in subs if s.student in wanted]
    if not subs:
        raise FileNotFoundError(f"no submissions found in {source}")
    template = released_from_file(solution)
    store = ResultStore(out_dir, lesson_id)
    r_hash, g_version = rubric_hash(cfg), grader_version()
    jobs, invalid, skipped, fps = [], [], [], {}
    for sub in subs:
        text, problem, notes = preflight(sub, lesson_id, template, layout)
        s_seed = int(seed) if seed is not None else course_seed(course.root, lesson_id, sub.student)
        if problem:
            invalid.append(GradeOutcome(lesson_id, sub.student, Status.INVALID, problem, seed=s_seed))
            continue
        hints_text = sub.hints_file.read_text(encoding="utf-8", errors="replace")[:100_000] if sub.hints_file else None
        if instructor:
            dest = sub.notebook
        else:
            dest = course.put_submission(sub.student, lesson_id, f"{notebook}.ipynb", text, hints_text)
        fp = fingerprint(dest)
        fps[sub.student] = fp
        if not force and store.current(sub.student, fp, s_seed, r_hash, g_version):
            skipped.append(sub.student)
            continue
        from .. import hints as hint_records
        jobs.append(GradeJob(lesson=lesson_id, student=sub.student, notebook=text, fingerprint=fp,
                             seed=s_seed, settings=settings.to_dict(), layout=layout.to_dict(),
                             hints=hint_records.read_sidecar(dest), filename=f"{notebook}.ipynb"))
    course.ensure_students([s.student for s in subs])
    feedback_dir = out_dir / "feedback" / lesson_id
    csv_path = out_dir / f"grades-{lesson_id}.csv"
    item_ids = list(cfg["items"])
    done: Dict[str, GradeOutcome] = {s: o for s, o in store.load_all().items() if s in everyone}

    lock = threading.Lock()

    def publish():
        with lock:
            rows = [make_row(o, cfg) for o in done.values()]
            write_lesson_csv(csv_path, rows, item_ids)

    for o in invalid:
        store.save(o)
        done[o.student] = o
    for s in skipped:            # stored and current, but an interrupted run may not have recorded it yet
        o = done.get(s)
        if o is not None and not _recorded(course, lesson_id, s, o):
            _record(course, store, o, feedback)
    publish()
    from tqdm import tqdm
    bar = tqdm(total=len(jobs), desc=f"grading {lesson_id}", unit="nb", disable=not progress, file=sys.stderr)
    graded = []

    recorder = Recorder(course, store, feedback, after=publish)

    def on_result(d: dict):
        o = GradeOutcome.from_dict(d)
        store.save(o)                # first: an interrupted run loses nothing that finished
        with lock:
            done[o.student] = o
            graded.append(o.student)
        recorder.put(o)
        bar.update(1)

    if scheduler:
        from .pool import DaskPool
        pool = DaskPool(scheduler)
    else:
        from .pool import LocalPool
        limit = worker_limit_s or (settings.time_limit_s + 3 * settings.cases_time_limit_s + 120)
        pool = LocalPool(workers, limit)
    recorder.start()
    try:
        if jobs:
            pool.run(jobs, on_result)
    except BaseException:
        # an interrupt: what finished is saved, and the next run records what the gradebook lacks; recording a
        # backlog of seconds-long nbgrader calls here would keep a stopped grader alive for minutes
        bar.close()
        recorder.finish(drop=True)
        raise
    bar.close()
    recorder.finish()
    # the instructor's overrides (formgrader) win over the auto scores; pass/fail follows them
    from ..gradebook import read_overrides
    from ..judge.scorers import grade_id
    gids = {i: grade_id(i, it) for i, it in cfg["items"].items()}
    overrides = read_overrides(course.db_url, lesson_id, notebook, list(done), gids)
    rows = [make_row(o, cfg, overrides.get(s)) for s, o in sorted(done.items())]
    write_lesson_csv(csv_path, rows, item_ids)
    gradebook_path = merge_gradebook(out_dir)
    if feedback:
        from .. import feedback as pages
        for r in rows:
            link = None
            src = course.feedback_html(lesson_id, r.student, notebook)
            target = feedback_dir / r.student
            target.mkdir(parents=True, exist_ok=True)
            if src.exists() and done[r.student].status == Status.GRADED:
                shutil.copyfile(src, target / f"{notebook}.html")
                link = f"{notebook}.html"
            pages.write_page(target / "index.html", r, cfg, link)
    result = BatchResult(rows, item_ids, csv_path, gradebook_path, course.root, feedback_dir,
                         round(time.monotonic() - started, 2), graded, skipped)
    if show:
        print_table(rows, item_ids, title=f"{cfg.get('title', lesson_id)} — {len(rows)} submissions")
        print(f"CSV: {csv_path}\nGradebook (all lessons): {gradebook_path}\n"
              f"Feedback: {feedback_dir}/<student>/index.html\n"
              f"Review / override in formgrader: cd {course.root} && jupyter lab  (then open /formgrader)")
    return result


class Recorder(threading.Thread):
    """Records outcomes in the gradebook (nbgrader's autograde + feedback, seconds each) in this process
    while the workers go on grading; one at a time, in arrival order."""

    def __init__(self, course: Course, store: ResultStore, feedback: bool, after):
        super().__init__(name="autograder-recorder", daemon=True)
        self.course, self.store, self.feedback, self.after = course, store, feedback, after
        self.queue: "queue.Queue" = queue.Queue()
        self.error: Optional[BaseException] = None

    def put(self, outcome: GradeOutcome) -> None:
        self.queue.put(outcome)

    def run(self):
        while True:
            o = self.queue.get()
            if o is None:
                return
            try:
                _record(self.course, self.store, o, self.feedback)
                self.after()
            except BaseException as exc:   # keep recording the others; reported at the end
                self.error = exc

    def finish(self, drop: bool = False) -> None:
        """Wait for everything queued; with ``drop`` (or an interrupt while waiting) only for the one being
        written, then stop."""
        if not self.is_alive():
            return
        if drop:
            self._drop()
            return
        self.queue.put(None)
        try:
            self.join()
        except BaseException:
            self._drop()
            raise

    def _drop(self) -> None:
        while not self.queue.empty():
            self.queue.get_nowait()
        self.queue.put(None)
        self.join(timeout=60)


def _fresh_course(course: Course, settings: GradingSettings) -> Course:
    """Move our own course dir aside (instructor overrides in it stay readable) and start a new one."""
    old = course.root.with_name(f"{course.root.name}.old-{time.strftime('%Y%m%d-%H%M%S')}")
    course.root.rename(old)
    return Course(course.root, instructor=False, cell_timeout_s=int(settings.cell_timeout_s))


def _recorded(course: Course, lesson: str, student: str, outcome: GradeOutcome) -> bool:
    """Whether the gradebook holds this outcome's verdict (a run killed between storing and recording)."""
    from ..gradebook import load_verdicts
    if outcome.status == Status.INVALID and not outcome.verdict:
        return True
    key = None
    for (a, _nb, s), v in load_verdicts(course.db_url, lesson).items():
        if s == student:
            key = v
    return key is not None and outcome.verdict is not None and key.to_dict() == outcome.verdict


def _record(course: Course, store: ResultStore, o: GradeOutcome, feedback: bool) -> None:
    if not o.verdict:
        return
    res = course.record(o.lesson, o.student, store.dir, feedback)
    if not res["success"]:
        o = copy.copy(o)
        o.reason = (o.reason + "；" if o.reason else "") + "写入 nbgrader 成绩库失败：" + res["error"][-300:]
        store.save(o)


def main(argv=None) -> int:
    from .cli import grade_main
    return grade_main(argv)


__all__ = ["grade_batch", "BatchResult", "Interrupted", "preflight", "strip_outputs"]
