"""What the batch reports: one row per student per lesson, the per-lesson CSV, the merged gradebook, the
printed table. Every number comes from the stored verdict with the instructor's overrides folded in
(``autograder.gradebook.with_overrides``, which applies ``verdict.pass_rule``)."""
from __future__ import annotations

import csv
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, List, Optional

from ..gradebook import with_overrides
from ..verdict import Verdict
from .jobs import GradeOutcome, Status


@dataclass
class Row:
    student: str
    lesson: str
    status: str
    reason: str = ""
    scores: Dict[str, float] = field(default_factory=dict)
    overridden: List[str] = field(default_factory=list)
    total: float = 0.0
    max_score: float = 0.0
    passed: bool = False
    vetoes: List[str] = field(default_factory=list)
    needs_review: List[str] = field(default_factory=list)
    hints: List[str] = field(default_factory=list)
    seed: Optional[int] = None
    backend: str = ""
    grader_version: str = ""
    rubric_hash: str = ""
    seconds: float = 0.0
    verdict: Optional[Verdict] = None


def make_row(outcome: GradeOutcome, lesson_cfg: dict, overrides: Optional[Dict[str, float]] = None) -> Row:
    items = list(lesson_cfg["items"])
    row = Row(outcome.student, outcome.lesson, Status(outcome.status).value, outcome.reason, seed=outcome.seed,
              seconds=outcome.seconds, scores={i: 0.0 for i in items},
              max_score=float(sum(float(it["points"]) for it in lesson_cfg["items"].values())))
    if not outcome.verdict:
        return row
    v = Verdict.from_dict(outcome.verdict)
    scores, total, passed = with_overrides(v, overrides or {})
    row.verdict = v
    row.scores.update(scores)
    row.overridden = sorted(set(overrides or {}) & set(scores))
    row.total, row.max_score = total, v.max_score
    row.passed = passed and row.status == Status.GRADED.value
    row.vetoes = [x.id for x in v.vetoes]
    row.needs_review = [i for i in v.needs_review if i not in row.overridden]
    row.hints = [f"{k}:L{n}" for k, n in sorted(v.hints_used.items())]
    row.backend, row.grader_version, row.rubric_hash = v.backend or "", v.grader_version, v.rubric_hash
    if not row.reason and v.errors:
        row.reason = "；".join(v.errors)
    return row


def _fmt(x) -> str:
    x = float(x)
    return str(int(x)) if x.is_integer() else f"{x:.2f}"


def lesson_columns(item_ids: Iterable[str]) -> List[str]:
    return ["student", "lesson", *item_ids, "total", "max", "passed", "vetoes", "needs_review", "hints_used", "seed",
            "backend", "grader_version", "rubric_hash", "status", "reason"]


def _atomic_csv(path: Path, header: List[str], rows: List[List]) -> Path:
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    os.replace(tmp, path)
    return path


def write_lesson_csv(path: Path, rows: List[Row], item_ids: List[str]) -> Path:
    """``grades-<lesson>.csv``: one row per student, items, total, pass, vetoes, provenance."""
    out = []
    for r in sorted(rows, key=lambda r: r.student):
        out.append([r.student, r.lesson, *[_fmt(r.scores.get(i, 0.0)) for i in item_ids], _fmt(r.total),
                    _fmt(r.max_score), "yes" if r.passed else "no", ";".join(r.vetoes), ";".join(r.needs_review),
                    ";".join(r.hints), "" if r.seed is None else r.seed, r.backend, r.grader_version, r.rubric_hash,
                    r.status, r.reason.replace("\n", " ")])
    return _atomic_csv(Path(path), lesson_columns(item_ids), out)


GROUP = ("total", "max", "passed", "vetoes", "needs_review", "status")


def merge_gradebook(out_dir: Path) -> Path:
    """``gradebook.csv``: every ``grades-<lesson>.csv`` in ``out_dir`` joined, one row per student and one
    column group (``<lesson>:total`` ... ``<lesson>:status``) per lesson; a student missing a lesson has
    empty cells there."""
    out_dir = Path(out_dir)
    per: Dict[str, Dict[str, Dict[str, str]]] = {}
    lessons = []
    for p in sorted(out_dir.glob("grades-*.csv")):
        lesson = p.stem[len("grades-"):]
        lessons.append(lesson)
        with p.open(encoding="utf-8") as fh:
            for r in csv.DictReader(fh):
                per.setdefault(r["student"], {})[lesson] = r
    header = ["student"] + [f"{lesson}:{k}" for lesson in lessons for k in GROUP]
    rows = []
    for student in sorted(per):
        line = [student]
        for lesson in lessons:
            r = per[student].get(lesson)
            line += [r.get(k, "") if r else "" for k in GROUP]
        rows.append(line)
    return _atomic_csv(out_dir / "gradebook.csv", header, rows)


def read_lesson_csv(path: Path) -> List[Dict[str, str]]:
    with Path(path).open(encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def print_table(rows: List[Row], item_ids: List[str], title: str, console=None) -> None:
    import sys

    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table
    console = console or Console(width=None if sys.stdout.isatty() else 160)
    table = Table(title=escape(title))
    for col in ["student", *item_ids, "total", "passed", "vetoes", "review", "status"]:
        table.add_column(col, justify="right" if col in item_ids or col == "total" else "left",
                         no_wrap=col != "status")
    for r in sorted(rows, key=lambda r: r.student):
        cells = [escape(r.student)]
        cells += [_fmt(r.scores.get(i, 0.0)) + ("*" if i in r.overridden else "") for i in item_ids]
        cells += [f"{_fmt(r.total)}/{_fmt(r.max_score)}", "PASS" if r.passed else "fail", ",".join(r.vetoes) or "-",
                  ",".join(r.needs_review) or "-", escape(r.status + (f" ({r.reason[:60]})" if r.reason else ""))]
        table.add_row(*cells)
    console.print(table)
    if any(r.overridden for r in rows):
        console.print("* = instructor override (formgrader manual score)")
