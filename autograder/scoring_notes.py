"""Each written question's 评分说明 (scoring note), rendered from its rubric and kept in its solution notebook.

The note under a question tells the student what earns full points: the parts of the question (the claims'
``asks``), named by their ``topic`` (what to explain, never the answer).  It is rendered from
``grading_rubric.yaml``, so a rubric change that adds or splits a part shows up in the lesson text; the
lesson tests fail while a solution notebook's note differs from its rubric.

    python -m autograder.scoring_notes            # rewrite the notes in solutions/*.ipynb (then `autograder generate`)
    python -m autograder.scoring_notes --check    # exit 1 and name each stale note
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Dict, List, Tuple

import nbformat

from . import config
from . import notebook as nbio
from .answers.messages import scoring_note

_NOTE = re.compile(r"\n*> 评分说明：[^\n]*")


def question_cell(nb, grade_id: str):
    """The cell the scorer reads as the question (``notebook.question_cell``): the note must live there."""
    cell = nbio.question_cell(nb, grade_id)
    if cell is None:
        raise LookupError(f"no question cell before {grade_id}")
    return cell


def expected(lesson: str) -> Dict[str, str]:
    """grade_id -> the note the rubric renders, for each written item of the lesson."""
    items = config.lesson(lesson)["items"]
    return {it.get("grade_id") or iid: scoring_note(it["rubric"], it["points"])
            for iid, it in items.items() if it["kind"] == "rubric"}


def stale(nb, lesson: str) -> List[Tuple[str, str, str]]:
    """(grade_id, note in the notebook or '', note the rubric renders) for each note that differs."""
    out = []
    for gid, want in expected(lesson).items():
        m = _NOTE.search(question_cell(nb, gid).source)
        have = m.group(0).strip() if m else ""
        if have != want:
            out.append((gid, have, want))
    return out


def sync(nb, lesson: str) -> int:
    """Write the rendered notes into ``nb`` (replacing a note, or appending one); returns how many changed."""
    changed = stale(nb, lesson)
    for gid, _, want in changed:
        cell = question_cell(nb, gid)
        body = _NOTE.sub("", cell.source).rstrip()
        cell.source = f"{body}\n\n{want}"
    return len(changed)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m autograder.scoring_notes", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="report stale notes, write nothing")
    a = ap.parse_args(argv)
    bad = 0
    for lesson, cfg in sorted(config.load()["lessons"].items()):
        path = Path(config.REPO_ROOT) / "solutions" / cfg["notebook"]
        nb = nbformat.read(path, as_version=4)
        if a.check:
            for gid, have, want in stale(nb, lesson):
                bad += 1
                print(f"{path.name} {gid}: the scoring note differs from the rubric\n  have: {have or '(none)'}\n"
                      f"  want: {want}")
        elif sync(nb, lesson):
            nbformat.write(nb, path)
            print(f"updated {path.name}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
