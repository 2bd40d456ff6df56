"""Submissions in a folder (``<student>.ipynb`` or ``<student>/<notebook>.ipynb``) or in an nbgrader
course directory (``submitted/<student>/<lesson>/<notebook>.ipynb``), with their hint records."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional


@dataclass
class Submission:
    student: str
    notebook: Path
    hints_file: Optional[Path] = None


def student_id(name: str) -> str:
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
    return (Path(path) / "submitted").is_dir()


def hints_file(nb: Path) -> Optional[Path]:
    """The hint sidecar autograder.hints writes next to a notebook, if any."""
    cand = nb.parent / ".hints" / f"{nb.stem}.json"
    return cand if cand.is_file() and not cand.is_symlink() else None


def discover(source: Path, assignment: str, notebook: str) -> List[Submission]:
    """Submissions in ``source``, sorted by student id (symlinks are not followed: a submission folder
    cannot point the grader at another student's files or the instructor's)."""
    source = Path(source)
    subs: dict = {}
    if is_course_dir(source):
        for d in sorted((source / "submitted").iterdir()):
            nb = d / assignment / f"{notebook}.ipynb"
            if nb.is_file() and not nb.is_symlink() and not d.is_symlink():
                subs[d.name] = Submission(d.name, nb, hints_file(nb))
        return list(subs.values())
    for p in sorted(source.iterdir()):
        if p.is_symlink() or p.name.startswith("."):
            continue
        if p.is_file() and p.suffix.lower() == ".ipynb":
            sid = _unique(student_id(p.stem), subs)
            subs[sid] = Submission(sid, p, hints_file(p))
        elif p.is_dir() and p.name != ".ipynb_checkpoints":
            nbs = sorted(x for x in p.glob("*.ipynb") if not x.name.startswith(".") and not x.is_symlink())
            if not nbs:
                continue
            nb = next((x for x in nbs if x.stem == notebook), nbs[0])
            sid = _unique(student_id(p.name), subs)
            subs[sid] = Submission(sid, nb, hints_file(nb))
    return list(subs.values())
