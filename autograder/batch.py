"""Instructor batch grading: nbgrader autograde + the rubric, in parallel worker processes.

    grade_batch(source, lesson_id, out_dir, workers=2, seed=None)

``source`` is a folder of submissions (``<student>.ipynb`` files or
``<student>/<notebook>.ipynb`` folders) or an existing nbgrader course
directory (``submitted/<student>/<assignment>/``).  Steps:

1. set up / refresh the course dir: nbgrader_config.py, source/<lesson>/ from
   solutions/, ``generate_assignment`` (fills the gradebook);
2. per student, in a child process with a wall-clock limit (forked from this
   process with nbgrader already imported; ``autograder.nbgrader_ext.autograde_one``):
   ``nbgrader autograde``, the engine's ``grade_executed`` on the autograded
   notebook, the rubric's suggested scores and comments into the gradebook
   (SQLite lock contention retried) and nbgrader's ``generate_feedback``.
   A hanging or crashing notebook is recorded as failed with the reason (the
   child is killed with its Jupyter kernel); the batch goes on;
3. instructor overrides (``Grade.manual_score``) are folded into the scores;
4. a summary page per student, the CSV gradebook and a printed table.

Review or override afterwards with nbgrader's formgrader (``--formgrader``)::

    cd <out_dir>/course && jupyter lab      # then open http://localhost:8888/formgrader
"""
from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import feedback as feedback_pages
from .generate import GenerationError, build_course
from .gradebook import StudentRow, apply_overrides, print_table, write_csv
from .nbgrader_ext import prepare_environment, write_course_config

REPO_ROOT = Path(__file__).resolve().parents[1]
STARTUP_SLACK_S = 30  # nbgrader + kernel start-up on top of the notebook's own time limit


@dataclass
class Submission:
    student: str
    notebook: Path
    hints_file: Path | None = None


@dataclass
class BatchResult:
    rows: list
    item_ids: list
    csv_path: Path
    course_dir: Path
    feedback_dir: Path
    seconds: float = 0.0
    statuses: dict = field(default_factory=dict)
    intervals: dict = field(default_factory=dict)   # student -> (start, end) wall time of its worker
    phases: dict = field(default_factory=dict)      # phase -> seconds (setup, grading, report)

    def row(self, student: str) -> StudentRow:
        return next(r for r in self.rows if r.student == student)


# ----------------------------------------------------------------------------- discovery

def _student_id(name: str) -> str:
    """A path- and nbgrader-safe id; Chinese (any Unicode letters) kept, spaces and punctuation -> "_"."""
    return re.sub(r"[^\w.-]", "_", name).strip(".") or "student"


def _unique(sid: str, taken) -> str:
    """``sid``, or ``sid-2``, ``sid-3``... when another submission already has it
    ("张 三.ipynb" and "张_三.ipynb" must not overwrite each other)."""
    out, k = sid, 2
    while out in taken:
        out, k = f"{sid}-{k}", k + 1
    return out


def is_course_dir(path: Path) -> bool:
    return (path / "submitted").is_dir()


def discover(source: Path, assignment: str, notebook: str) -> list[Submission]:
    """Submissions in ``source`` (see module doc), sorted by student id."""
    subs: dict[str, Submission] = {}
    if is_course_dir(source):
        for d in sorted((source / "submitted").iterdir()):
            nb = d / assignment / f"{notebook}.ipynb"
            if nb.exists():
                subs[d.name] = Submission(d.name, nb, _hints_file(nb))
        return list(subs.values())
    for p in sorted(source.iterdir()):
        if p.is_file() and p.suffix.lower() == ".ipynb" and not p.name.startswith("."):
            sid = _unique(_student_id(p.stem), subs)
            subs[sid] = Submission(sid, p, _hints_file(p))
        elif p.is_dir() and not p.name.startswith(".") and p.name != ".ipynb_checkpoints":
            nbs = sorted(x for x in p.glob("*.ipynb") if not x.name.startswith("."))
            if not nbs:
                continue
            nb = next((x for x in nbs if x.stem == notebook), nbs[0])
            sid = _unique(_student_id(p.name), subs)
            subs[sid] = Submission(sid, nb, _hints_file(nb))
    return list(subs.values())


def preflight(sub: Submission, lesson_id: str, template) -> tuple:
    """``(notebook_to_submit or None, problem or "", notes)`` before nbgrader sees a submission:
    an unreadable file or another lesson's notebook is reported (Chinese) instead of graded;
    nbgrader metadata stripped by VS Code / Colab is restored from the template so that
    nbgrader can find (and restore) the graded cells."""
    from . import check
    from . import notebook as nbio
    try:
        nb = nbio.read(sub.notebook)
    except (nbio.NotebookReadError, OSError) as exc:
        return None, str(exc), []
    wrong = check.wrong_lesson_message(nb, lesson_id)
    if wrong:
        return None, wrong, []
    return nb, "", check.repair(nb, template)


def _hints_file(nb: Path) -> Path | None:
    """The hint sidecar autograder.hints writes next to a notebook, if any."""
    cand = nb.parent / ".hints" / f"{nb.stem}.json"
    return cand if cand.exists() else None


def _hints_label(used) -> list[str]:
    """{"code": 2, "q1": 1} -> ["code:L2", "q1:L1"] (the highest level opened per item)."""
    return [f"{k}:L{v}" for k, v in sorted((used or {}).items())]


# ----------------------------------------------------------------------------- workers

WORKER_MODULE = "autograder.nbgrader_ext.autograde_one"


def _fork_available() -> bool:
    import multiprocessing

    return sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods()


def _forked_child(args, env, stderr_path):
    """Body of a forked worker: own session (killable as a group with its kernel),
    own environment and stderr, then the worker's main (nbgrader already imported)."""
    os.setsid()
    fd = os.open(stderr_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.environ.clear()
    os.environ.update(env)
    from .nbgrader_ext import autograde_one

    code = 1
    try:
        code = autograde_one.main(args)
    finally:
        os._exit(code)  # skip the parent's atexit handlers and buffers


class _Worker:
    """One grading child: forked from this (pre-imported) process where possible —
    it saves the seconds of importing nbgrader per submission — else a fresh
    ``python -m`` process."""

    def __init__(self, args, env, stderr_path: Path, fork: bool):
        self.stderr_path = stderr_path
        if fork:
            import multiprocessing

            self.proc = multiprocessing.get_context("fork").Process(
                target=_forked_child, args=(args, env, str(stderr_path)), daemon=False)
            self.proc.start()
            self.pid = self.proc.pid
        else:
            with open(stderr_path, "wb") as err:
                self.proc = subprocess.Popen([sys.executable, "-m", WORKER_MODULE, *args], env=env,
                                             stdout=subprocess.DEVNULL, stderr=err, start_new_session=True,
                                             cwd=str(REPO_ROOT))
            self.pid = self.proc.pid

    def poll(self):
        if isinstance(self.proc, subprocess.Popen):
            return self.proc.poll()
        return None if self.proc.is_alive() else self.proc.exitcode

    def kill(self):
        """SIGKILL the worker's whole session (its Jupyter kernel included)."""
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if isinstance(self.proc, subprocess.Popen):
            self.proc.wait()
        else:
            self.proc.join()


def _preload() -> None:
    """Import what every worker needs once, before forking."""
    import nbconvert  # noqa: F401
    from nbgrader.apps import NbGraderAPI  # noqa: F401

    from . import check, hints  # noqa: F401
    from .nbgrader_ext import autograde_one  # noqa: F401


def run_workers(jobs, workers: int, limit_s: float, progress: bool, env: dict, log_dir: Path,
                env_per_job: dict | None = None, fork: bool | None = None) -> dict:
    """Run ``jobs`` = [(key, worker args, out_json)] at most ``workers`` at a time,
    each in its own session; kill the whole session past ``limit_s``.
    ``env_per_job`` (key -> environment) overrides ``env``.  Returns key -> the
    worker's JSON, or a synthesised failure."""
    from tqdm import tqdm

    fork = _fork_available() if fork is None else fork
    if fork:
        _preload()
        tqdm.monitor_interval = 0  # no monitor thread in the parent while forking
    pending = list(jobs)
    running: dict = {}
    results: dict = {}
    bar = tqdm(total=len(pending), desc="grading", unit="nb", disable=not progress, file=sys.stderr)
    try:
        while pending or running:
            while pending and len(running) < max(1, workers):
                key, args, out = pending.pop(0)
                if out.exists():
                    out.unlink()
                sys.stderr.flush()
                worker = _Worker(args, (env_per_job or {}).get(key, env), log_dir / f"{key}.stderr", fork)
                running[key] = (worker, time.monotonic(), out, time.time())
            for key, (worker, t0, out, wall0) in list(running.items()):
                rc = worker.poll()
                if rc is None and time.monotonic() - t0 <= limit_s:
                    continue
                if rc is None:  # past the limit: the worker and its Jupyter kernel go together
                    worker.kill()
                    results[key] = {"status": "timeout",
                                    "reason": f"超过时间限制（{limit_s:.0f} 秒），已终止", "rubric": None}
                else:
                    results[key] = _read_result(out, rc, worker.stderr_path)
                results[key].setdefault("seconds", round(time.monotonic() - t0, 2))
                results[key]["interval"] = (wall0, time.time())  # for checking the workers overlapped
                del running[key]
                bar.update(1)
            time.sleep(0.05)
    finally:
        for worker, _, _, _ in running.values():
            worker.kill()
        bar.close()
    return results


def _read_result(out: Path, rc: int, stderr: Path) -> dict:
    if out.exists():
        try:
            return json.loads(out.read_text(encoding="utf-8"))
        except json.JSONDecodeError:
            pass
    tail = stderr.read_text(encoding="utf-8", errors="replace")[-300:] if stderr.exists() else ""
    return {"status": "crashed", "reason": f"评分进程异常退出（退出码 {rc}）{tail.strip()[-200:]}", "rubric": None}


# ----------------------------------------------------------------------------- batch

def _lesson_config(lesson_id: str) -> dict:
    from . import config

    return config.lesson(lesson_id)


def _worker_args(course, assignment, notebook, student, lesson_id, seed, cell_timeout, feedback, out):
    args = ["--course", str(course), "--assignment", assignment, "--notebook", notebook, "--student", student,
            "--lesson", lesson_id, "--cell-timeout", str(cell_timeout), "--out", str(out)]
    if seed is not None:
        args += ["--seed", str(seed)]
    if feedback:
        args.append("--feedback")
    return args


def _row_from(result: dict, student: str, seed, lesson_cfg: dict) -> StudentRow:
    items_cfg = lesson_cfg.get("items", {})
    row = StudentRow(student=student, status=result.get("status", "crashed"), reason=result.get("reason", ""),
                     seed=seed, seconds=float(result.get("seconds", 0.0)), rubric=result.get("rubric"))
    row.max_score = float(sum(float(it.get("points", 0)) for it in items_cfg.values()))
    row.scores = {i: 0.0 for i in items_cfg}
    rub = row.rubric
    if rub:
        for it in rub.get("items", []):
            if it.get("id") in row.scores:
                row.scores[it["id"]] = float(it.get("points", 0))
        row.total = float(rub.get("score", sum(row.scores.values())))
        row.max_score = float(rub.get("max_score", row.max_score))
        row.vetoes = list(rub.get("vetoes", []) or [])
        row.passed = bool(rub.get("passed")) and row.status == "graded"  # a timeout fails the run
        if rub.get("seed") is not None:
            row.seed = rub["seed"]
    row.hints = _hints_label((rub or {}).get("hints_used"))
    return row


def grade_batch(source, lesson_id: str, out_dir, workers: int = 2, seed: int | None = None, *,
                time_limit_s: float | None = None, cell_timeout_s: int | None = None,
                solution=None, feedback: bool = True, progress: bool = True, show: bool = True,
                root=None, startup_slack_s: float = STARTUP_SLACK_S) -> BatchResult:
    """Grade every submission in ``source`` for ``lesson_id``; results under ``out_dir``:
    gradebook.csv, feedback/<student>/index.html (+ nbgrader's notebook HTML),
    course/ (the nbgrader course dir, for formgrader)."""
    started = time.monotonic()
    root = Path(root or REPO_ROOT).resolve()
    source, out_dir = Path(source).resolve(), Path(out_dir).resolve()
    lesson_cfg = _lesson_config(lesson_id)
    settings = lesson_cfg.get("settings", {})
    time_limit_s = float(time_limit_s or settings.get("time_limit_s", 240))
    cell_timeout_s = int(cell_timeout_s or settings.get("cell_timeout_s", 120))
    cell_timeout_s = max(1, min(cell_timeout_s, int(time_limit_s)))
    notebook = Path(lesson_cfg.get("notebook", f"{lesson_id}.ipynb")).stem
    solution = Path(solution) if solution else root / "solutions" / f"{notebook}.ipynb"
    if not solution.exists():
        raise FileNotFoundError(f"solution notebook not found: {solution}")

    course = source if is_course_dir(source) else out_dir / "course"
    course.mkdir(parents=True, exist_ok=True)
    out_dir.mkdir(parents=True, exist_ok=True)
    env = prepare_environment(dict(os.environ))
    prepare_environment()
    env.update({"AUTOGRADER_RUNNING": "1",
                "KERNELS_CHECK": ",".join(settings.get("checks", ["memcheck", "racecheck"]))})

    subs = discover(source, lesson_id, notebook)
    if not subs:
        raise FileNotFoundError(f"no submissions found in {source}")
    phases = {}
    tick = time.monotonic()
    write_course_config(course, cell_timeout_s)
    try:
        build_course(course, solution, lesson_id, cell_timeout_s=cell_timeout_s)
    except GenerationError as exc:
        # nbgrader cannot change an assignment's cells once it has submissions.  Our
        # own course dir is rebuilt from the submissions folder; the old one is kept
        # aside (instructor overrides in it stay readable).  An instructor's course
        # dir is never moved.
        if course == source or "there are submissions" not in str(exc):
            raise
        backup = course.with_name(f"{course.name}.old-{time.strftime('%Y%m%d-%H%M%S')}")
        course.rename(backup)
        print(f"solutions/{notebook}.ipynb 的单元格已变化，nbgrader 无法在已有提交上更新作业；"
              f"旧的课程目录移到 {backup}，重新建立。", file=sys.stderr)
        course.mkdir(parents=True)
        write_course_config(course, cell_timeout_s)
        build_course(course, solution, lesson_id, cell_timeout_s=cell_timeout_s)
    rejected = {}
    if course != source:
        import nbformat

        from . import check
        template = check.template_notebook(lesson_cfg)
        for sub in subs:
            dest = course / "submitted" / sub.student / lesson_id
            nb, problem, notes = preflight(sub, lesson_id, template)
            if problem:     # reported in the gradebook (status "invalid"), never given to nbgrader
                rejected[sub.student] = {"status": "invalid", "reason": problem, "rubric": None}
                if dest.is_dir():
                    shutil.rmtree(dest)
                continue
            dest.mkdir(parents=True, exist_ok=True)
            if notes:
                nbformat.write(nb, str(dest / f"{notebook}.ipynb"))
            else:
                shutil.copyfile(sub.notebook, dest / f"{notebook}.ipynb")
            if sub.hints_file:  # the hint ladder's record travels with the notebook
                (dest / ".hints").mkdir(exist_ok=True)
                shutil.copyfile(sub.hints_file, dest / ".hints" / f"{notebook}.json")
    _ensure_students(course, [s.student for s in subs])

    work = out_dir / ".work"
    work.mkdir(exist_ok=True)
    seeds = {s.student: (seed if seed is not None else secrets.randbelow(2**31)) for s in subs}
    jobs = [(s.student, _worker_args(course, lesson_id, notebook, s.student, lesson_id, seeds[s.student],
                                     cell_timeout_s, feedback, work / f"{s.student}.json"),
             work / f"{s.student}.json") for s in subs if s.student not in rejected]
    phases["setup"] = time.monotonic() - tick
    tick = time.monotonic()
    # Each student's seed goes to the hidden tests through AUTOGRADER_SEED.
    envs = {s.student: {**env, "AUTOGRADER_SEED": str(seeds[s.student])} for s in subs}
    results = run_workers(jobs, workers, time_limit_s + startup_slack_s, progress, env, work, envs) if jobs else {}
    results.update(rejected)
    phases["grading"] = time.monotonic() - tick

    tick = time.monotonic()
    rows = [_row_from(results[s.student], s.student, seeds[s.student], lesson_cfg) for s in subs]
    apply_overrides(f"sqlite:///{course / 'gradebook.db'}", lesson_id, notebook, lesson_cfg, rows)
    feedback_dir = out_dir / "feedback"
    if feedback:
        _feedback_pages(rows, results, course, lesson_id, notebook, lesson_cfg, feedback_dir)
    phases["report"] = time.monotonic() - tick
    item_ids = list(lesson_cfg.get("items", {}))
    csv_path = write_csv(out_dir / "gradebook.csv", rows, item_ids)
    (out_dir / "results.json").write_text(json.dumps(
        [{**r.__dict__} for r in rows], ensure_ascii=False, indent=1, default=str), encoding="utf-8")
    result = BatchResult(rows, item_ids, csv_path, course, feedback_dir, round(time.monotonic() - started, 2),
                         {r.student: r.status for r in rows},
                         {k: tuple(v.get("interval", (0, 0))) for k, v in results.items()},
                         {k: round(v, 2) for k, v in phases.items()})
    if show:
        print_table(rows, item_ids, title=f"{lesson_cfg.get('title', lesson_id)} — {len(rows)} submissions")
        print(f"CSV: {csv_path}\nFeedback: {feedback_dir}/<student>/index.html\n"
              f"Review / override the suggested scores in formgrader: cd {course} && jupyter lab"
              f"  (then open http://localhost:8888/formgrader), or rerun with --formgrader")
    return result


def _ensure_students(course: Path, students) -> None:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        for s in students:
            gb.update_or_create_student(s)


def _feedback_pages(rows, results, course, assignment, notebook, lesson_cfg, feedback_dir):
    """feedback/<student>/index.html (summary) + nbgrader's feedback notebook HTML
    when this run produced one."""
    for r in rows:
        target = feedback_dir / r.student
        target.mkdir(parents=True, exist_ok=True)
        nb_html = course / "feedback" / r.student / assignment / f"{notebook}.html"
        link = None
        stale = target / f"{notebook}.html"
        if stale.exists():
            stale.unlink()
        if results.get(r.student, {}).get("feedback") and nb_html.exists():
            shutil.copyfile(nb_html, target / f"{notebook}.html")
            link = f"{notebook}.html"
        feedback_pages.write_page(target / "index.html", r, lesson_cfg, link)


def formgrader_command(course_dir) -> list[str]:
    """The command (run inside ``course_dir``) that serves nbgrader's formgrader (a
    Jupyter server extension in nbgrader 0.9; open ``/formgrader`` or the
    Nbgrader > Formgrader menu), where the instructor reviews the suggested rubric
    scores and overrides them (Grade.manual_score)."""
    return [str(Path(sys.executable).parent / "jupyter"), "lab", f"--ServerApp.root_dir={course_dir}"]


def main(argv=None) -> int:
    """``autograder grade SOURCE --lesson ID [--out DIR] [--workers N] [--seed S] ...``"""
    import argparse

    p = argparse.ArgumentParser(prog="autograder grade", description=(
        "Batch-grade a folder of submissions (<student>.ipynb or <student>/<notebook>.ipynb) or an "
        "nbgrader course directory (submitted/<student>/<lesson>/) with nbgrader autograde + the rubric."))
    p.add_argument("source", help="submissions folder or nbgrader course directory")
    p.add_argument("--lesson", required=True, help="lesson id, e.g. 05_layernorm")
    p.add_argument("--out", default="out/grades", help="output folder (CSV, feedback/, course/)")
    p.add_argument("--workers", type=int, default=2, help="parallel grading processes (default 2)")
    p.add_argument("--seed", type=int, default=None, help="one seed for every student (default: fresh per student)")
    p.add_argument("--time-limit", type=float, default=None, help="seconds per submission (default: rubric settings)")
    p.add_argument("--solution", default=None, help="solution notebook (default: solutions/<lesson notebook>)")
    p.add_argument("--no-feedback", action="store_true", help="skip the HTML feedback")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--formgrader", action="store_true",
                   help="afterwards, open nbgrader's formgrader on the course dir to review/override scores")
    args = p.parse_args(argv)
    result = grade_batch(args.source, args.lesson, args.out, workers=args.workers, seed=args.seed,
                         time_limit_s=args.time_limit, feedback=not args.no_feedback,
                         progress=not args.no_progress, solution=args.solution)
    if args.formgrader:
        prepare_environment()
        os.chdir(result.course_dir)
        cmd = formgrader_command(result.course_dir)
        os.execv(cmd[0], cmd)
    return 0


def demo_main(argv=None) -> int:
    """``autograder demo``: see autograder.demo."""
    from .demo import main as _demo_main

    return _demo_main(argv)
