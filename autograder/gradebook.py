"""The batch's gradebook: rubric suggestions into nbgrader's database, the CSV
export and the printed table.

Rubric scores for manual-graded answer cells are *suggestions*: they go to
``Grade.auto_score`` (with ``needs_manual_grade`` kept on) and the rubric's
message to ``Comment.auto_comment``.  ``Grade.manual_score`` belongs to the
instructor (formgrader); nbgrader's ``Grade.score`` prefers it, and nothing
here ever writes it, so a re-run keeps overrides.
"""
from __future__ import annotations

import csv
import time
from dataclasses import dataclass, field
from pathlib import Path

DB_RETRIES = 8


@dataclass
class StudentRow:
    student: str
    status: str = "graded"            # graded | crashed | timeout | error
    reason: str = ""
    scores: dict = field(default_factory=dict)      # item id -> points (instructor override wins)
    overridden: list = field(default_factory=list)  # item ids with a manual_score
    total: float = 0.0
    max_score: float = 0.0
    passed: bool = False
    vetoes: list = field(default_factory=list)      # [{id, message, evidence}]
    hints: list = field(default_factory=list)       # ["code:L2", ...]
    seed: int | None = None
    seconds: float = 0.0
    rubric: dict | None = None                      # the engine's Result as JSON


def item_grade_ids(lesson_cfg: dict) -> dict:
    """item id -> nbgrader grade_id (defaults per docs/grading.md)."""
    out = {}
    for item_id, item in lesson_cfg.get("items", {}).items():
        default = item_id if item.get("kind") == "rubric" else f"test_{item_id}"
        out[item_id] = item.get("grade_id", default)
    return out


def _retry(fn):
    """Run a gradebook transaction, retrying while a worker holds the SQLite lock."""
    for attempt in range(DB_RETRIES):
        try:
            return fn()
        except Exception as exc:  # sqlalchemy OperationalError, wrapped variously
            if "locked" not in str(exc) or attempt == DB_RETRIES - 1:
                raise
            time.sleep(0.25 * (attempt + 1))


def summary_comment(rubric: dict) -> str:
    """Vetoes and hint usage of one run, as a gradebook comment (Chinese, instructor-facing)."""
    parts = [f"一票否决 [{v.get('id', '?')}]：{v.get('message', '')}" for v in rubric.get("vetoes") or []]
    used = rubric.get("hints_used") or {}
    if used:
        parts.append("使用过的提示：" + "，".join(f"{k}:L{v}" for k, v in sorted(used.items())))
    return "\n".join(parts)


def record_rubric(db_url: str, assignment: str, notebook: str, lesson_cfg: dict, student: str,
                  rubric: dict | None) -> None:
    """Write one student's rubric suggestions, vetoes and hint usage into nbgrader's
    gradebook (called by the grading worker right after autograde; retried while
    another worker holds the SQLite lock)."""
    from nbgrader.api import Gradebook, MissingEntry

    if not rubric:
        return
    grade_ids = item_grade_ids(lesson_cfg)
    items = {it.get("id"): it for it in rubric.get("items", [])}
    rubric_items = [i for i, it in lesson_cfg.get("items", {}).items() if it.get("kind") == "rubric"]
    summary = summary_comment(rubric)

    def write():
        with Gradebook(db_url) as gb:
            for item_id in rubric_items:
                it = items.get(item_id)
                if it is None:
                    continue
                gid = grade_ids[item_id]
                try:
                    grade = gb.find_grade(gid, notebook, assignment, student)
                    comment = gb.find_comment(gid, notebook, assignment, student)
                except MissingEntry:
                    continue
                grade.auto_score = float(it.get("points", 0))
                grade.needs_manual_grade = True  # a suggestion: the instructor confirms or overrides
                text = f"[评分规则建议分，教师可在此改分] {it.get('message', '')}".strip()
                comment.auto_comment = text + (("\n" + summary) if summary else "")
            # Vetoes and hints also on the CUDA source cells (where template edits happen).
            for gid in lesson_cfg.get("sources", {}):
                try:
                    comment = gb.find_comment(gid, notebook, assignment, student)
                except MissingEntry:
                    continue
                comment.auto_comment = summary or None
            gb.db.commit()

    _retry(write)


def apply_overrides(db_url: str, assignment: str, notebook: str, lesson_cfg: dict, rows) -> None:
    """Fold instructor overrides (Grade.manual_score) into the rows' scores, totals
    and pass/fail (read-only on the gradebook)."""
    from nbgrader.api import Gradebook, MissingEntry

    grade_ids = item_grade_ids(lesson_cfg)
    pass_score = lesson_cfg.get("settings", {}).get("pass_score", 8)

    def read():
        found = {}
        with Gradebook(db_url) as gb:
            for row in rows:
                for item_id, gid in grade_ids.items():
                    try:
                        grade = gb.find_grade(gid, notebook, assignment, row.student)
                    except MissingEntry:
                        continue
                    if grade.manual_score is not None:
                        found[(row.student, item_id)] = float(grade.manual_score)
        return found

    overrides = _retry(read)
    for row in rows:
        for item_id in grade_ids:
            if (row.student, item_id) not in overrides:
                continue
            score = overrides[(row.student, item_id)]
            row.total += score - row.scores.get(item_id, 0.0)
            row.scores[item_id] = score
            row.overridden.append(item_id)
        if row.overridden:
            row.passed = row.status == "graded" and not row.vetoes and row.total >= pass_score


def csv_columns(item_ids) -> list:
    return ["student", *item_ids, "total", "max", "passed", "vetoes", "hints_used", "seed", "status", "reason"]


def write_csv(path: Path, rows, item_ids) -> Path:
    path = Path(path)
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(csv_columns(item_ids))
        for r in rows:
            w.writerow([r.student, *[_fmt(r.scores.get(i, 0.0)) for i in item_ids], _fmt(r.total),
                        _fmt(r.max_score), "yes" if r.passed else "no",
                        ";".join(v.get("id", "?") for v in r.vetoes), ";".join(r.hints),
                        "" if r.seed is None else r.seed, r.status, r.reason])
    return path


def _fmt(x) -> str:
    x = float(x)
    return str(int(x)) if x.is_integer() else f"{x:.2f}"


def print_table(rows, item_ids, title: str = "Gradebook", console=None) -> None:
    import sys

    from rich.console import Console
    from rich.table import Table

    # Piped / CI output has no terminal width; rich would squeeze the table into 80 columns.
    console = console or Console(width=None if sys.stdout.isatty() else 160)
    table = Table(title=title)
    for col in ["student", *item_ids, "total", "passed", "vetoes", "hints", "status"]:
        table.add_column(col, justify="right" if col in item_ids or col == "total" else "left",
                         no_wrap=col != "status")
    for r in rows:
        cells = [r.student]
        for i in item_ids:
            cells.append(_fmt(r.scores.get(i, 0.0)) + ("*" if i in r.overridden else ""))
        cells += [f"{_fmt(r.total)}/{_fmt(r.max_score)}", "PASS" if r.passed else "fail",
                  ",".join(v.get("id", "?") for v in r.vetoes) or "-", ",".join(r.hints) or "-",
                  r.status + (f" ({r.reason[:60]})" if r.reason else "")]
        table.add_row(*cells)
    console.print(table)
    if any(r.overridden for r in rows):
        console.print("* = instructor override (formgrader manual score)")
