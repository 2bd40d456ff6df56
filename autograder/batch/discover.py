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
    problem: str = ""           # why it cannot be graded (Chinese), found before anything reads it


def _symlink_problem(path: Path) -> str:
    return (f"{path.name}：提交的是符号链接（指向别处的文件），不是笔记本本身，评分器不会打开它。"
            "请把 .ipynb 文件本身（不是快捷方式或链接）放进提交目录后重新提交。")


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
    """Submissions in ``source``, sorted by student id. Symlinks are never followed (a submission folder
    cannot point the grader at another student's files or the instructor's): a linked notebook or student
    folder is listed with its ``problem``, so the gradebook says why it got nothing."""
    source = Path(source)
    subs: dict = {}
    if is_course_dir(source):
        for d in sorted((source / "submitted").iterdir()):
            nb = d / assignment / f"{notebook}.ipynb"
            linked = next((x for x in (d, d / assignment, nb) if x.is_symlink()), None)
            if linked is not None:
                subs[d.name] = Submission(d.name, nb, problem=_symlink_problem(linked))
            elif nb.is_file():
                subs[d.name] = Submission(d.name, nb, hints_file(nb))
        return list(subs.values())
    for p in sorted(source.iterdir()):
        if p.name.startswith("."):
            continue
        if p.is_symlink():
            if p.suffix.lower() == ".ipynb" or p.is_dir():
                sid = _unique(student_id(p.stem if p.suffix.lower() == ".ipynb" else p.name), subs)
                subs[sid] = Submission(sid, p, problem=_symlink_problem(p))
            continue
        if p.is_file() and p.suffix.lower() == ".ipynb":
            sid = _unique(student_id(p.stem), subs)
            subs[sid] = Submission(sid, p, hints_file(p))
        elif p.is_dir() and p.name != ".ipynb_checkpoints":
            found = sorted(x for x in p.glob("*.ipynb") if not x.name.startswith("."))
            nbs = [x for x in found if not x.is_symlink()]
            if not nbs:
                if found:           # only links in the folder
                    sid = _unique(student_id(p.name), subs)
                    subs[sid] = Submission(sid, found[0], problem=_symlink_problem(found[0]))
                continue
            nb = next((x for x in nbs if x.stem == notebook), nbs[0])
            sid = _unique(student_id(p.name), subs)
            subs[sid] = Submission(sid, nb, hints_file(nb))
    return list(subs.values())
