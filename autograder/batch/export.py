"""``autograder export --format canvas|moodle``: the merged gradebook as a course website imports it.

* Canvas (Grades → Import): ``Student, ID, SIS User ID, SIS Login ID, Section`` then one column per lesson,
  a ``Points Possible`` row first; students are matched by SIS Login ID (the nbgrader student id).
* Moodle (Grades → Import → CSV file): ``Username`` then one grade column and one feedback column per lesson;
  map ``Username`` to the user field and each grade column to its grade item when importing.

A lesson's grade is its total with the instructor's overrides; a student who did not pass (score below the
pass score or a veto) gets that said in the feedback column (Moodle) or the ``<lesson> passed`` column
(Canvas, as a text column it keeps without grading it).
"""
from __future__ import annotations

import csv
from pathlib import Path
from typing import Dict, List

from .report import read_lesson_csv

FORMATS = ("canvas", "moodle")


def _lessons(out_dir: Path) -> Dict[str, List[Dict[str, str]]]:
    return {p.stem[len("grades-"):]: read_lesson_csv(p) for p in sorted(Path(out_dir).glob("grades-*.csv"))}


def export(out_dir, fmt: str, dest=None) -> Path:
    if fmt not in FORMATS:
        raise ValueError(f"format {fmt!r}: expected one of {', '.join(FORMATS)}")
    out_dir = Path(out_dir)
    lessons = _lessons(out_dir)
    if not lessons:
        raise FileNotFoundError(f"no grades-<lesson>.csv in {out_dir}: run `autograder grade` first")
    dest = Path(dest) if dest else out_dir / f"{fmt}.csv"
    students = sorted({r["student"] for rows in lessons.values() for r in rows})
    by = {(lesson, r["student"]): r for lesson, rows in lessons.items() for r in rows}
    maxes = {lesson: next((r["max"] for r in rows if r.get("max")), "") for lesson, rows in lessons.items()}
    with dest.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        if fmt == "canvas":
            w.writerow(["Student", "ID", "SIS User ID", "SIS Login ID", "Section",
                        *[c for lesson in lessons for c in (lesson, f"{lesson} passed")]])
            w.writerow(["Points Possible", "", "", "", "", *[c for lesson in lessons for c in (maxes[lesson], "")]])
            for s in students:
                cells = []
                for lesson in lessons:
                    r = by.get((lesson, s))
                    cells += [r["total"], r["passed"]] if r else ["", ""]
                w.writerow([s, "", s, s, "", *cells])
        else:
            w.writerow(["Username", *[c for lesson in lessons for c in (lesson, f"{lesson} feedback")]])
            for s in students:
                cells = []
                for lesson in lessons:
                    r = by.get((lesson, s))
                    if not r:
                        cells += ["", ""]
                        continue
                    note = "通过" if r["passed"] == "yes" else "未通过"
                    if r["vetoes"]:
                        note += f"（一票否决：{r['vetoes']}）"
                    if r["status"] != "graded":
                        note += f"（{r['status']}：{r['reason'][:120]}）"
                    cells += [r["total"], note]
                w.writerow([s, *cells])
    return dest
