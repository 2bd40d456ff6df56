"""The verdict in nbgrader's gradebook, and back.

``record_verdict`` is what the ``JudgeVerdict`` preprocessor does after nbgrader's SaveAutoGrades in
``nbgrader autograde`` (and so in formgrader's autograde button and ``autograder grade``):

* every item's score becomes its grade cell's ``auto_score`` (code items from the hidden cases, never from
  the in-notebook test cell's error state);
* an item the scorer is sure of is not left "needs manual grading"; an item with ``needs_review`` is put in
  formgrader's manual-grading queue with the suggestion kept as the auto score;
* ``manual_score`` (an instructor's override) is never written, so overrides survive every regrade;
* the item messages become the cells' auto comments, vetoes and hint usage go on the source cells;
* the submission is flagged (formgrader's flag) when it is vetoed, could not be graded or needs review;
* the whole verdict goes into the ``autograder_verdicts`` table next to nbgrader's own (any SQLAlchemy
  database nbgrader uses), where ``nbgrader export`` (``autograder.nbgrader_ext.export``) and the batch read
  pass/fail and vetoes.

``read_scores`` folds overrides into the verdict's items and applies ``verdict.pass_rule`` to the result:
the one place an override changes pass/fail.
"""
from __future__ import annotations

import json
import time
from typing import Dict, Iterable, Optional

from .verdict import Verdict, pass_rule

DB_RETRIES = 8
TABLE = "autograder_verdicts"


def _retry(fn):
    """Run a gradebook transaction, retrying while another process holds the SQLite lock."""
    for attempt in range(DB_RETRIES):
        try:
            return fn()
        except Exception as exc:  # sqlalchemy OperationalError, wrapped variously
            if "locked" not in str(exc) or attempt == DB_RETRIES - 1:
                raise
            time.sleep(0.25 * (attempt + 1))


def _table(metadata):
    from sqlalchemy import Boolean, Column, Float, Integer, String, Table, Text
    return Table(TABLE, metadata,
                 Column("assignment", String(128), primary_key=True),
                 Column("notebook", String(128), primary_key=True),
                 Column("student", String(128), primary_key=True),
                 Column("passed", Boolean), Column("score", Float), Column("max_score", Float),
                 Column("vetoes", Text), Column("needs_review", Text), Column("errors", Text),
                 Column("backend", String(16)), Column("seed", Integer), Column("grader_version", String(64)),
                 Column("rubric_hash", String(32)), Column("verdict", Text), Column("updated", Float),
                 extend_existing=True)


def _engine(db_url: str):
    from sqlalchemy import MetaData, create_engine
    engine = create_engine(db_url)
    md = MetaData()
    table = _table(md)
    md.create_all(engine, tables=[table])
    return engine, table


def summary_comment(verdict: Verdict) -> str:
    """Vetoes, grading errors and hint usage of one run, as a gradebook comment (Chinese, for the instructor)."""
    parts = [f"一票否决 [{v.id}]：{v.message}" + (f"\n{v.evidence}" if v.evidence else "") for v in verdict.vetoes]
    parts += [f"无法评分：{e}" for e in verdict.errors]
    if verdict.hints_used:
        parts.append("使用过的提示：" + "，".join(f"{k}:L{v}" for k, v in sorted(verdict.hints_used.items())))
    parts.append(f"评分结论：{'通过' if verdict.passed else '未通过'}（{verdict.score:g}/{verdict.max_score:g}，"
                 f"通过线 {verdict.pass_score:g}，seed={verdict.seed}，后端 {verdict.backend}）")
    return "\n".join(parts)


def record_verdict(db_url: str, assignment: str, notebook: str, student: str, verdict: Verdict,
                   source_cells: Iterable[str] = ()) -> None:
    """Write one verdict into nbgrader's gradebook at ``db_url`` (see module doc)."""
    from nbgrader.api import Gradebook

    def write():
        with Gradebook(db_url) as gb:
            _record(gb, assignment, notebook, student, verdict, source_cells)
    _retry(write)
    save_verdict(db_url, assignment, notebook, student, verdict)


def _record(gb, assignment, notebook, student, verdict, source_cells):
    from nbgrader.api import MissingEntry
    summary = summary_comment(verdict)
    for it in verdict.items:
        if not it.grade_id:
            continue
        try:
            grade = gb.find_grade(it.grade_id, notebook, assignment, student)
        except MissingEntry:
            continue
        grade.auto_score = float(it.points)
        grade.needs_manual_grade = bool(it.needs_review) and grade.manual_score is None
        try:
            comment = gb.find_comment(it.grade_id, notebook, assignment, student)
        except MissingEntry:
            comment = None
        if comment is not None:
            head = "[评分建议分，老师可在此改分] " if it.kind == "rubric" else ""
            reasons = ("\n待复核：" + "；".join(it.review_reasons)) if it.needs_review and it.review_reasons else ""
            comment.auto_comment = (head + it.message + reasons).strip() or None
    for gid in source_cells:
        try:
            gb.find_comment(gid, notebook, assignment, student).auto_comment = summary
        except MissingEntry:
            continue
    try:
        nb = gb.find_submission_notebook(notebook, assignment, student)
        nb.flagged = bool(verdict.vetoes or verdict.errors or verdict.needs_review)
    except MissingEntry:
        pass
    gb.db.commit()


def save_verdict(db_url: str, assignment: str, notebook: str, student: str, verdict: Verdict) -> None:
    engine, table = _engine(db_url)
    row = {"assignment": assignment, "notebook": notebook, "student": student, "passed": verdict.passed,
           "score": verdict.score, "max_score": verdict.max_score,
           "vetoes": ";".join(v.id for v in verdict.vetoes), "needs_review": ";".join(verdict.needs_review),
           "errors": "\n".join(verdict.errors), "backend": verdict.backend, "seed": verdict.seed,
           "grader_version": verdict.grader_version, "rubric_hash": verdict.rubric_hash,
           "verdict": verdict.to_json(), "updated": time.time()}

    def write():
        with engine.begin() as conn:
            conn.execute(table.delete().where((table.c.assignment == assignment) & (table.c.notebook == notebook)
                                              & (table.c.student == student)))
            conn.execute(table.insert().values(**row))
    try:
        _retry(write)
    finally:
        engine.dispose()


def load_verdicts(db_url: str, assignment: Optional[str] = None) -> Dict[tuple, Verdict]:
    """``{(assignment, notebook, student): Verdict}`` from the verdict table (empty when there is none)."""
    from sqlalchemy import inspect
    from sqlalchemy import create_engine
    engine = create_engine(db_url)
    try:
        if TABLE not in inspect(engine).get_table_names():
            return {}
        from sqlalchemy import MetaData
        table = _table(MetaData())
        q = table.select()
        if assignment:
            q = q.where(table.c.assignment == assignment)
        with engine.connect() as conn:
            rows = conn.execute(q).mappings().all()
        out = {}
        for r in rows:
            try:
                out[(r["assignment"], r["notebook"], r["student"])] = Verdict.from_dict(json.loads(r["verdict"]))
            except (ValueError, KeyError):
                continue
        return out
    finally:
        engine.dispose()


def read_overrides(db_url: str, assignment: str, notebook: str, students: Iterable[str],
                   grade_ids: Dict[str, str]) -> Dict[str, Dict[str, float]]:
    """``{student: {item_id: manual_score}}``: the instructor's overrides made in formgrader."""
    from nbgrader.api import Gradebook, MissingEntry
    students = list(students)

    def read():
        found: Dict[str, Dict[str, float]] = {}
        with Gradebook(db_url) as gb:
            for s in students:
                for item_id, gid in grade_ids.items():
                    try:
                        grade = gb.find_grade(gid, notebook, assignment, s)
                    except MissingEntry:
                        continue
                    if grade.manual_score is not None:
                        found.setdefault(s, {})[item_id] = float(grade.manual_score)
        return found
    return _retry(read)


def with_overrides(verdict: Verdict, overrides: Dict[str, float]) -> tuple:
    """``(scores by item, total, passed)`` once the instructor's manual scores replace the auto scores."""
    scores = {i.item: float(overrides.get(i.item, i.points)) for i in verdict.items}
    total = round(sum(scores.values()), 3)
    return scores, total, pass_rule(total, verdict.pass_score, verdict.vetoes, verdict.errors)
