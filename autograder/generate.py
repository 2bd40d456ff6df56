"""solutions/NN_name.ipynb -> lessons/NN_name.ipynb through nbgrader generate_assignment.

Each solution notebook is its own nbgrader assignment (id = notebook stem) in a
throw-away course directory; the release/ output is normalised (volatile
metadata stripped, stable JSON layout) so that ``generate --check`` can prove
lessons/ is exactly what generation produces.  After generation every lesson is
scanned for solution text (marker contents, reference answers, hidden tests):
a leak is an error, never a written file.
"""
from __future__ import annotations

import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from . import markers
from .nbgrader_ext import make_config, prepare_environment

# Cell / notebook metadata that changes between runs or machines, not content.
_VOLATILE_CELL_META = ("execution", "ExecuteTime", "collapsed", "scrolled", "jupyter", "tags_")
_VOLATILE_NB_META = ("widgets", "celltoolbar", "toc", "varInspector")

_INLINE = markers.INLINE
BLANK_RE = markers.BLANK_RE  # what ClearCudaSolutions leaves for the learner to fill


class GenerationError(RuntimeError):
    pass


@dataclass
class GenerateReport:
    written: list = field(default_factory=list)    # lessons/ files (re)written
    unchanged: list = field(default_factory=list)  # already up to date
    stale: list = field(default_factory=list)      # differ from generation (check mode)

    @property
    def ok(self) -> bool:
        return not self.stale


def solution_notebooks(root: Path, lessons=None) -> list[Path]:
    """solutions/*.ipynb, optionally filtered by lesson id or number prefix ("05")."""
    paths = sorted((Path(root) / "solutions").glob("[0-9]*.ipynb"))
    if lessons:
        wanted = [str(x) for x in lessons]
        paths = [p for p in paths if any(p.stem == w or p.stem.split("_")[0] == w.zfill(2) for w in wanted)]
        if not paths:
            raise GenerationError(f"no solution notebook matches {', '.join(wanted)}")
    return paths


def build_course(course_dir: Path, solution: Path, assignment_id: str | None = None,
                 cell_timeout_s: int = 120) -> Path:
    """Put ``solution`` into an nbgrader course dir as source/<assignment>/ and run
    generate_assignment (fills the gradebook, writes release/).  Returns the
    released notebook path."""
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory

    prepare_environment()
    course_dir = Path(course_dir).resolve()
    assignment_id = assignment_id or solution.stem
    src_dir = course_dir / "source" / assignment_id
    src_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(solution, src_dir / solution.name)
    config = make_config(course_dir, cell_timeout_s=cell_timeout_s)
    coursedir = CourseDirectory(config=config)
    api = NbGraderAPI(coursedir=coursedir, config=config)
    result = api.generate_assignment(assignment_id, force=True, create=True)
    if not result.get("success"):
        raise GenerationError(f"nbgrader generate_assignment failed for {solution.name}:\n"
                              f"{result.get('error', '')}\n{result.get('log', '')}")
    released = course_dir / "release" / assignment_id / solution.name
    if not released.exists():
        raise GenerationError(f"nbgrader wrote no {released}")
    return released


def normalise(nb) -> str:
    """Deterministic text of a generated notebook."""
    for key in _VOLATILE_NB_META:
        nb.metadata.pop(key, None)
    for cell in nb.cells:
        for key in _VOLATILE_CELL_META:
            cell.metadata.pop(key, None)
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    nbformat.validate(nb)
    text = nbformat.writes(nb, version=4)  # Jupyter's own layout: sorted keys, indent 1
    return text if text.endswith("\n") else text + "\n"


def _is_solution(cell) -> bool:
    return bool(cell.metadata.get("nbgrader", {}).get("solution"))


def solution_fragments(nb) -> list[str]:
    """Text that must never reach a student notebook: contents of CUDA inline and
    line solution regions, Python/markdown solution regions, whole solution
    cells without regions (reference answers) and hidden test bodies."""
    frags: list[str] = []
    for cell in nb.cells:
        src = cell.source
        for m in _INLINE.finditer(src):
            frags.append(m.group(1))
        region: list[str] | None = None
        hidden: list[str] | None = None
        had_region = False
        for line in src.split("\n"):
            if "BEGIN HIDDEN TESTS" in line:
                hidden = []
            elif "END HIDDEN TESTS" in line:
                frags.extend(hidden or [])
                hidden = None
            elif hidden is not None:
                hidden.append(line)
            elif "BEGIN SOLUTION" in line and not _INLINE.search(line):
                region, had_region = [], True
            elif "END SOLUTION" in line and region is not None and not _INLINE.search(line):
                frags.extend(region)
                region = None
            elif region is not None:
                region.append(line)
        if _is_solution(cell) and not had_region and not _INLINE.search(src):
            frags.extend(src.split("\n"))
    # Short or generic lines (braces, "return x;") are not evidence of a leak.
    out = []
    for f in frags:
        f = f.strip()
        if len(f) >= 8 and f not in out and not re.fullmatch(r"[\W_]*", f):
            out.append(f)
    return out


def find_leaks(solution_nb, lesson_nb) -> list[str]:
    lesson_text = "\n".join(c.source for c in lesson_nb.cells)
    return [f for f in solution_fragments(solution_nb) if f in lesson_text]


def student_notebook(solution) -> "nbformat.NotebookNode":
    """The generated (normalised) student notebook of one solution notebook,
    without touching lessons/ (used to build example submissions)."""
    solution = Path(solution)
    with tempfile.TemporaryDirectory(prefix="autograder-generate-") as tmp:
        released = build_course(Path(tmp), solution)
        return nbformat.reads(normalise(nbformat.read(released, as_version=4)), as_version=4)


def generate_all(root, lessons=None, check: bool = False) -> GenerateReport:
    """Generate lessons/ from solutions/ (all, or the ``lessons`` given by id or
    number).  ``check=True`` writes nothing and reports stale lessons."""
    root = Path(root).resolve()
    report = GenerateReport()
    out_dir = root / "lessons"
    # One throw-away course for all lessons: nbgrader creates its gradebook once
    # (shelling out to alembic), each lesson is its own assignment in it.
    with tempfile.TemporaryDirectory(prefix="autograder-generate-") as tmp:
        released = {s: nbformat.read(build_course(Path(tmp), s), as_version=4)
                    for s in solution_notebooks(root, lessons)}
    for solution, lesson_nb in released.items():
        text = normalise(lesson_nb)
        leaks = find_leaks(nbformat.read(solution, as_version=4), nbformat.reads(text, as_version=4))
        if leaks:
            raise GenerationError(f"{solution.name}: solution text would reach the student notebook: "
                                  + "; ".join(repr(x) for x in leaks[:5]))
        target = out_dir / solution.name
        current = target.read_text(encoding="utf-8") if target.exists() else None
        if current == text:
            report.unchanged.append(target)
        elif check:
            report.stale.append(target)
        else:
            out_dir.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
            report.written.append(target)
    return report


def main(argv=None) -> int:
    """``python -m autograder.generate [--check] [LESSON ...]`` (the CLI owner wires
    ``autograder generate`` to ``generate_all``)."""
    import argparse

    parser = argparse.ArgumentParser(prog="autograder generate",
                                     description="Build lessons/ from solutions/ via nbgrader generate_assignment.")
    parser.add_argument("lessons", nargs="*", help="lesson ids or numbers (default: all)")
    parser.add_argument("--check", action="store_true", help="fail if lessons/ is not what generation produces")
    parser.add_argument("--root", default=str(Path(__file__).resolve().parents[1]))
    args = parser.parse_args(argv)
    report = generate_all(args.root, args.lessons or None, check=args.check)
    for p in report.written:
        print(f"wrote     {p}")
    for p in report.unchanged:
        print(f"unchanged {p}")
    for p in report.stale:
        print(f"STALE     {p}  (run: autograder generate)")
    return 0 if report.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
