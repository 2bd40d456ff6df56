"""Shared machinery for the lesson proofs (tests/lessons/test_lessons.py).

Every lesson is described by one data module, ``lesson_NN_<name>.py``, holding a
:class:`Lesson`: the text of its blanks in the solution source, the wrong fill-ins
and the family each must fail, and its written-answer edge cases.  The generic
proofs run on every lesson from those tables; nothing lesson-specific lives here.
"""
from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Mapping, Optional, Tuple, Union

import nbformat
import pytest

from autograder import cases, config, generate, rubric
from autograder import notebook as nbio

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
BLANK = "______"                       # what a blank looks like in a released notebook
SEED = 1234                            # case seed of the fill proofs; notebooks grade with NOTEBOOK_SEED
NOTEBOOK_SEED = 7
TEMPLATE_VETOES = ("template_edit", "assert_removed", "tolerance_loosened")

ALL, NONE = "every family passes", "no family passes"
Expect = Union[str, Mapping[str, bool]]   # ALL, NONE or {family name: passed}


@dataclass(frozen=True)
class Fill:
    """Replace solution text (``{right: wrong}``) and say which families pass per item."""
    id: str
    replace: Mapping[str, str]
    expect: Mapping[str, Expect]


@dataclass(frozen=True)
class Answer:
    """A written answer to rubric item ``item`` and what the rubric must make of it.

    kind: term_only (term_only, <= 1 point, 0 on a 1-point item), zero (0 points),
    vetoed (a misconception is flagged), not_vetoed (none is flagged), edge (``points``
    and/or ``missed`` only).  ``points``: exact points expected; ``missed``: a concept label
    that must be reported missing; ``clean``: no misconception may be flagged either."""
    kind: str
    item: str
    text: str
    points: Optional[float] = None
    missed: Optional[str] = None
    clean: bool = False


def term_only(item, text):
    return Answer("term_only", item, text)


def zero(item, text):
    return Answer("zero", item, text, points=0)


def vetoed(item, text):
    return Answer("vetoed", item, text)


def not_vetoed(item, text, points=None):
    return Answer("not_vetoed", item, text, points=points)


def full_marks(item, text, points=2):
    """A paraphrase (often English) of the reference answer: full points and no veto."""
    return Answer("edge", item, text, points=points, clean=True)


def partial(item, text, points=1, missed=None):
    return Answer("edge", item, text, points=points, missed=missed)


@dataclass(frozen=True)
class Lesson:
    id: str
    blanks: Tuple[str, ...]                   # solution text of each blank: once in the source, never released
    anchors: Tuple[str, ...] = ()             # more solution text the fills rewrite (must occur once)
    released_text: Tuple[str, ...] = ()       # text the released notebook must show
    seeds: Tuple[int, ...] = (SEED,)          # seeds of the reference-fill proof
    min_families: int = 1                     # per code item, with the reference fill
    stated_families: Mapping[str, Tuple[str, ...]] = field(default_factory=dict)  # item -> family names
    stated_atol: Mapping[Tuple[str, str], float] = field(default_factory=dict)    # (item, name part) -> atol
    fills: Tuple[Fill, ...] = ()
    answers: Tuple[Answer, ...] = ()
    gpu: bool = False                         # also prove families + notebook on the cupy backend

    @property
    def solution(self) -> Path:
        return ROOT / "solutions" / f"{self.id}.ipynb"

    @property
    def source_id(self) -> str:
        (sid,) = config.lesson(self.id)["sources"]
        return sid


# every lesson_NN_<name>.py table here, in lesson order (a new lesson adds its table, nothing else)
LESSON_MODULES = tuple(sorted(p.stem for p in HERE.glob("lesson_[0-9][0-9]_*.py")))


@functools.lru_cache(maxsize=None)
def lessons() -> Tuple[Lesson, ...]:
    return tuple(importlib.import_module(m).LESSON for m in LESSON_MODULES)


# ----------------------------------------------------------------------------- parametrization

def per_lesson(select=lambda spec: True):
    return [pytest.param(spec, id=spec.id) for spec in lessons() if select(spec)]


def rubric_items(lesson_id):
    return [i for i, it in config.lesson(lesson_id)["items"].items() if it["kind"] == "rubric"]


def code_items(lesson_id):
    return [i for i, it in config.lesson(lesson_id)["items"].items() if it["kind"] == "cases"]


def answer_params():
    out = []
    for spec in lessons():
        seen = {}
        for a in spec.answers:
            n = seen[a.kind, a.item] = seen.get((a.kind, a.item), 0) + 1
            out.append(pytest.param(spec, a, id=f"{spec.id}-{a.kind}-{a.item}-{n}"))
    return out


def fill_params():
    return [pytest.param(spec, f, id=f"{spec.id}-{f.id}") for spec in lessons() for f in spec.fills]


# ----------------------------------------------------------------------------- code cases

@functools.lru_cache(maxsize=None)
def solution_cuda(lesson_id: str) -> str:
    cfg = config.lesson(lesson_id)
    (sid,) = cfg["sources"]
    cell = nbio.cells_by_grade_id(nbio.read(ROOT / "solutions" / f"{lesson_id}.ipynb"))[sid]
    return nbio.python_string_var(nbio._fill(cell.source), cfg["sources"][sid]["var"])


def families(spec: Lesson, item_id: str, replace: Mapping[str, str] = None, seed: int = SEED) -> Dict[str, bool]:
    """{family: passed} of ``item_id`` for the solution source with ``replace`` applied."""
    src = solution_cuda(spec.id)
    for text in spec.blanks + spec.anchors:
        assert src.count(text) == 1, f"solution source changed: {text!r}"
    for right, wrong in (replace or {}).items():
        src = src.replace(right, wrong)
    res = cases.run_item(config.lesson(spec.id), item_id, {spec.source_id: src}, seed=seed)
    return {f.family: f.passed for f in res.families}


def assert_reference_fill_passes(spec: Lesson, item_id: str, seed: int = SEED):
    fams = families(spec, item_id, seed=seed)
    assert fams and all(fams.values()), (item_id, fams)
    assert len(fams) >= spec.min_families, (item_id, fams)


def assert_fill(spec: Lesson, fill: Fill):
    for item_id, want in fill.expect.items():
        fams = families(spec, item_id, fill.replace)
        if want == ALL:
            assert fams and all(fams.values()), (fill.replace, item_id, fams)
        elif want == NONE:
            assert fams and not any(fams.values()), (fill.replace, item_id, fams)
        else:
            for family, passed in want.items():
                assert family in fams, (item_id, fams)
                assert fams[family] is passed, (fill.replace, item_id, family, fams)


# ----------------------------------------------------------------------------- written answers

@functools.lru_cache(maxsize=None)
def reference_answers(lesson_id: str) -> Dict[str, str]:
    return nbio.markdown_answers(nbio.read(ROOT / "solutions" / f"{lesson_id}.ipynb"))


def score(lesson_id: str, item_id: str, text: str):
    item = config.lesson(lesson_id)["items"][item_id]
    return rubric.score(text, item["rubric"], item["points"])


def assert_answer(spec: Lesson, a: Answer):
    res = score(spec.id, a.item, a.text)
    max_points = config.lesson(spec.id)["items"][a.item]["points"]
    if a.kind == "term_only":
        assert res.term_only, res.message
        assert res.points <= 1, res.message
        if max_points == 1:
            assert res.points == 0, res.message   # a 1-point item needs a causal chain for its only point
    elif a.kind == "vetoed":
        assert res.misconceptions, res.message
    elif a.kind == "not_vetoed" or a.clean:
        assert not res.misconceptions, res.misconceptions
    if a.points is not None:
        assert res.points == a.points, res.message
    if a.missed is not None:
        assert a.missed in res.concepts_missed, res.message


# ----------------------------------------------------------------------------- notebooks

def student_notebook(released: Path):
    """The normalised student notebook (what generate.student_notebook returns) of a released file."""
    return nbformat.reads(generate.normalise(nbformat.read(released, as_version=4)), as_version=4)


def assert_released_blanks(spec: Lesson, student):
    """The released notebook blanks every answer of the source cell and leaks no solution text."""
    text = "\n".join(c.source for c in student.cells)
    src = nbio.cells_by_grade_id(student)[spec.source_id].source
    assert src.count(BLANK) == len(spec.blanks), src
    for right in spec.blanks:
        assert right not in text, right
    for shown in spec.released_text:
        assert shown in text, shown
    assert generate.find_leaks(nbio.read(spec.solution), student) == []
