"""(Re)build the bundled lesson-5 example submissions from solutions/05_layernorm.ipynb.

    python examples/build_examples.py          # write examples/submissions/
    python examples/build_examples.py --check  # fail if they are stale

Each example is the generated student notebook (nbgrader generate_assignment,
exactly what a learner receives) with the blanks and answers filled in the way
a particular learner would.  Their intended grading outcomes are in
examples/expected.json (asserted by tests/autograder/test_examples.py and shown
by ``autograder demo``).
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from autograder.generate import BLANK_RE, student_notebook  # noqa: E402

LESSON = "05_layernorm"
SOLUTION = ROOT / "solutions" / f"{LESSON}.ipynb"
OUT = HERE / "submissions"
_INLINE = re.compile(r"/\*\s*BEGIN SOLUTION\s*\*/\s*(.*?)\s*/\*\s*END SOLUTION\s*\*/")

# Answers of a learner who lists terms but never says why (each scores <= 1).
TERM_ONLY = {
    "explain_code": "E[x^2] - E[x]^2，方差，fmaxf，eps，rsqrtf。",
    "q1": "合并访问（coalesced）、寄存器累加、__shfl_down_sync、warp 归约、shared memory、__syncthreads、广播、写回。",
    "q2": "负方差、NaN、rsqrt、eps、fmaxf、截断。",
    "q3": "Welford、大均值小方差、灾难性消减、FP16、寄存器、Chan 合并公式。",
}


def _by_id(nb):
    return {c.metadata.get("nbgrader", {}).get("grade_id"): c for c in nb.cells}


def _reference(solution):
    """(blank expression, reference answers by grade_id) from the solution notebook."""
    cells = _by_id(solution)
    blanks = _INLINE.findall(cells["layernorm_src"].source)
    assert len(blanks) == 1, "lesson 5 has exactly one inline blank"
    answers = {gid: c.source for gid, c in cells.items()
               if c.cell_type == "markdown" and c.metadata.get("nbgrader", {}).get("solution")}
    return blanks[0], answers


def _fill(student, expr, answers, src_edit=None):
    nb = nbformat.from_dict(json.loads(json.dumps(student)))
    cells = _by_id(nb)
    src = cells["layernorm_src"]
    assert len(BLANK_RE.findall(src.source)) == 1
    src.source = BLANK_RE.sub(lambda _: expr, src.source, count=1)
    if src_edit:
        old, new = src_edit
        assert old in src.source, old
        src.source = src.source.replace(old, new)
    for gid, text in answers.items():
        cells[gid].source = text
    return nb


def build(student=None, solution=None) -> dict:
    """name -> (notebook, hint sidecar or None)."""
    solution = solution or nbformat.read(str(SOLUTION), as_version=4)
    student = student or student_notebook(SOLUTION)
    expr, answers = _reference(solution)
    wrong = expr.replace("sq_sum / static_cast<float>(N) - mean * mean", "sq_sum / static_cast<float>(N) - mean")
    assert wrong != expr
    hints = {"lesson": LESSON, "levels": {"q1": 2, "q2": 1},
             "log": [{"item": "q1", "level": 1}, {"item": "q1", "level": 2}, {"item": "q2", "level": 1}]}
    return {
        "perfect": (_fill(student, expr, answers), None),
        "wrong_formula": (_fill(student, wrong, answers), None),
        "removed_fmaxf": (_fill(student, expr, answers,
                                src_edit=("rsqrtf(fmaxf(var, 0.0f) + eps)", "rsqrtf(var + eps)")), None),
        "term_only": (_fill(student, expr, TERM_ONLY), hints),
    }


def _texts(examples) -> dict:
    out = {}
    for name, (nb, hints) in examples.items():
        out[OUT / f"{name}.ipynb"] = nbformat.writes(nb) + "\n"
        if hints:
            out[OUT / ".hints" / f"{name}.json"] = json.dumps(hints, ensure_ascii=False, indent=1) + "\n"
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="fail if examples/submissions is stale")
    args = p.parse_args(argv)
    stale = []
    for path, text in _texts(build()).items():
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == text:
            continue
        stale.append(path)
        if not args.check:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.relative_to(ROOT)}")
    if args.check and stale:
        print("stale: " + ", ".join(str(p.relative_to(ROOT)) for p in stale) + " (run examples/build_examples.py)")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
