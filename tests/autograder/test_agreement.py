"""One verdict everywhere, on the real lesson 5 (issue 18's and 19's proofs):

* ``nbgrader autograde`` (the stock command, in an instructor's course with their own nbgrader_config.py,
  course id and db_url) and ``autograder grade`` record the same score for every item of every bundled
  example, without being told a seed (both derive it from the course's salt);
* ``nbgrader export`` shows the veto (passed = no, vetoes = template_edit);
* stock ``nbgrader generate_assignment`` with the documented config releases exactly lessons/;
* ``autograder check`` (what ``L.self_check()`` runs) gives every example the verdict the batch gave.
"""
from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder import check
from autograder import notebook as nbio
from autograder.vetoes import TEMPLATE_VETO_IDS

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
LESSON = "05_layernorm"
EXAMPLES = REPO / "examples" / "submissions"
BIN = Path(sys.executable).parent

INSTRUCTOR_CONFIG = f'''\
c = get_config()
c.CourseDirectory.course_id = "cuda-course"
c.CourseDirectory.db_url = "sqlite:///{{db}}"
# the course's pipeline, merged as docs/grading.md says:
from autograder.nbgrader_ext.config import configure
configure(c)
c.JudgeVerdict.course_root = {str(REPO)!r}
c.SandboxedExecute.course_root = {str(REPO)!r}
c.SandboxedExecute.enabled = False     # scores never depend on the run; keep the test short
'''


def _nbgrader(course, *args):
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")
    env.pop("AUTOGRADER_RUBRIC", None)
    proc = subprocess.run([str(BIN / "nbgrader"), *args], cwd=course, env=env, capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("agree")
    course = tmp / "course"
    (course / "source" / LESSON).mkdir(parents=True)
    db = tmp / "elsewhere" / "grades.db"
    db.parent.mkdir()
    (course / "nbgrader_config.py").write_text(INSTRUCTOR_CONFIG.format(db=db), encoding="utf-8")
    shutil.copyfile(REPO / "solutions" / f"{LESSON}.ipynb", course / "source" / LESSON / f"{LESSON}.ipynb")
    _nbgrader(course, "generate_assignment", LESSON, "--force")
    for nb in sorted(EXAMPLES.glob("*.ipynb")):
        dest = course / "submitted" / nb.stem / LESSON
        dest.mkdir(parents=True)
        shutil.copyfile(nb, dest / f"{LESSON}.ipynb")
        side = EXAMPLES / ".hints" / f"{nb.stem}.json"
        if side.exists():
            (dest / ".hints").mkdir()
            shutil.copyfile(side, dest / ".hints" / f"{LESSON}.json")
    _nbgrader(course, "autograde", LESSON, "--force", "--create")
    from nbgrader.api import Gradebook
    stock = {}
    with Gradebook(f"sqlite:///{db}", "cuda-course") as gb:
        for nb in sorted(EXAMPLES.glob("*.ipynb")):
            sub = gb.find_submission_notebook(LESSON, LESSON, nb.stem)
            stock[nb.stem] = {g.name: g.score for g in sub.grades}
    _nbgrader(course, "export", "--to", str(tmp / "export.csv"))
    exported = {r["student_id"]: r for r in csv.DictReader(open(tmp / "export.csv", encoding="utf-8"))}
    from autograder import batch
    out = tmp / "out"
    assert batch.main([str(course), "--lesson", LESSON, "--out", str(out), "--no-progress", "--no-feedback",
                       "--course-root", str(REPO), "--force"]) == 0
    rows = {r["student"]: r for r in csv.DictReader(open(out / f"grades-{LESSON}.csv", encoding="utf-8"))}
    return {"course": course, "db": db, "stock": stock, "export": exported, "rows": rows, "out": out}


def test_stock_generate_assignment_with_the_documented_config_releases_lessons(course):
    rel = nbio.read(course["course"] / "release" / LESSON / f"{LESSON}.ipynb")
    want = nbio.read(REPO / "lessons" / f"{LESSON}.ipynb")
    assert [c.source for c in rel.cells] == [c.source for c in want.cells]


def test_instructor_db_url_is_honoured(course):
    assert course["db"].exists() and not (course["course"] / "gradebook.db").exists()


def test_nbgrader_autograde_and_autograder_grade_agree_on_every_item(course):
    from autograder import config
    from autograder.judge.scorers import grade_id
    cfg = config.lesson(LESSON)
    expected = json.loads((REPO / "examples" / "expected.json").read_text(encoding="utf-8"))["submissions"]
    for student, grades in course["stock"].items():
        row = course["rows"][student]
        for item, spec in cfg["items"].items():
            assert float(row[item]) == grades[grade_id(item, spec)], (student, item)
            assert float(row[item]) == expected[student]["items"][item], (student, item)
        assert (row["passed"] == "yes") == expected[student]["passed"]


def test_veto_is_visible_to_nbgrader_export(course):
    e = course["export"]
    assert e["removed_fmaxf"]["passed"] == "no" and e["removed_fmaxf"]["vetoes"] == "template_edit"
    assert float(e["removed_fmaxf"]["raw_score"]) == 9
    assert e["perfect"]["passed"] == "yes" and e["perfect"]["vetoes"] == ""
    # the review queue in the export is the judge's: exactly the items it routed to a person
    for student, row in course["rows"].items():
        v = check.grade_notebook(EXAMPLES / f"{student}.ipynb", LESSON, seed=int(row["seed"]))
        assert e[student]["needs_review"] == ";".join(v.needs_review), student


def test_self_check_gives_the_batch_verdict(course):
    """What L.self_check() runs (``autograder check`` on the saved file), with the seed the batch used."""
    for student, row in course["rows"].items():
        v = check.grade_notebook(EXAMPLES / f"{student}.ipynb", LESSON, seed=int(row["seed"]))
        assert {i.item: f"{i.points:g}" for i in v.items} == {k: row[k] for k in (i.item for i in v.items)}, student
        assert ";".join(x.id for x in v.vetoes) == row["vetoes"] and v.passed == (row["passed"] == "yes")


# ----------------------------------------------------------------------------- every lesson: solution + release

def _lessons():
    from autograder import config
    return sorted(config.load(REPO / "grading_rubric.yaml")["lessons"])


@pytest.fixture(scope="module")
def every_lesson(tmp_path_factory):
    """``autograder grade`` on each lesson's solution and released notebook (one batch per lesson)."""
    from autograder import batch, config
    from autograder.settings import CourseLayout, GradingSettings
    layout = CourseLayout.resolve(REPO)
    out = {}
    for lesson in _lessons():
        cfg = config.lesson(lesson, layout.rubric)
        tmp = tmp_path_factory.mktemp(f"every-{lesson}")
        subs = tmp / "subs"
        subs.mkdir()
        shutil.copyfile(REPO / "solutions" / cfg["notebook"], subs / "solution.ipynb")
        shutil.copyfile(REPO / "lessons" / cfg["notebook"], subs / "released.ipynb")
        settings = GradingSettings.resolve(cfg["settings"], flags={"sandbox": "require", "execute": False})
        res = batch.grade_batch(subs, lesson, tmp / "out", seed=77, settings=settings, layout=layout,
                                feedback=False, progress=False, show=False)
        out[lesson] = (subs, res)
    return out


@pytest.mark.parametrize("lesson", _lessons())
def test_self_check_and_L_check_equal_grade_on_every_solution_and_release(every_lesson, lesson):
    """Issue 18's proof: what the student's self-check (``autograder check``) and each ``L.check`` under an
    exercise (``judge.check_item``) say equals what ``autograder grade`` records. The same verdicts prove each
    lesson's notebooks: the solution scores 10/10 on the CPU emulator, the release runs and scores 0 for code."""
    from autograder import config
    from autograder.judge import check_item
    subs, res = every_lesson[lesson]
    cfg = config.lesson(lesson)
    for student in ("solution", "released"):
        row = res.row(student)
        v = check.grade_notebook(subs / f"{student}.ipynb", lesson, seed=77)
        assert v.to_dict()["items"] == row.verdict.to_dict()["items"], (lesson, student)
        assert v.passed == row.passed and [x.id for x in v.vetoes] == row.vetoes
        nb = nbio.filled(nbio.read(subs / f"{student}.ipynb"))
        cells = nbio.cells_by_grade_id(nb)
        codes = {sid: nbio.python_string_var(cells[sid].source, spec["var"]) for sid, spec in cfg["sources"].items()}
        for item_id, item in cfg["items"].items():
            if item["kind"] == "cases":
                one = check_item(lesson, item_id, codes, seed=77)
            else:
                one = check_item(lesson, item_id, text=nbio.answer_text(cells[item.get("grade_id") or item_id]))
            assert one.points == row.verdict.item(item_id).points, (lesson, student, item_id)
        if student == "solution":      # the lesson proofs (tests/lessons): 10/10 on the CPU emulator
            assert v.backend == "cpu" and not v.errors and not v.vetoes, (lesson, v.errors, v.vetoes)
            assert v.score == v.max_score == 10 and v.passed, (lesson, v.items)
        else:                          # the released notebook runs (no crash, no timeout) and scores 0 for code
            assert not v.errors, (lesson, v.errors)
            assert all(i.points == 0 for i in v.items if cfg["items"][i.item]["kind"] == "cases"), (lesson, v.items)
            assert v.score == 0 and not v.passed, (lesson, v.items)
            assert not {x.id for x in v.vetoes} & set(TEMPLATE_VETO_IDS)
    assert res.row("solution").passed and res.row("solution").total == res.row("solution").max_score
    assert not res.row("released").passed
