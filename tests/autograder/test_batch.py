"""Batch grading end to end on a small fixture lesson: parallel workers, CSV, HTML,
gradebook suggestions, instructor overrides kept, hanging/crashing submissions isolated."""
from __future__ import annotations

import csv
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import nbgrader_fixtures as F  # noqa: E402

GOOD = "先读取输入，因为方差可能为负，所以用 fmaxf 截断。"
TERMS = "输入 负 截断"
HANG_NO_INTERRUPT = "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass"
HANG_INTERRUPTIBLE = "import time\nwhile True:\n    time.sleep(0.5)"
CRASH = "import os\nos._exit(3)"
SLOW = ["import time\ntime.sleep(2.5)"] * 8  # every cell within the cell timeout, the whole run is not


@pytest.fixture(scope="module")
def batch_env(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("batch")
    root, rubric = F.write_fixture_lesson(tmp)
    mp = pytest.MonkeyPatch()
    mp.setenv("AUTOGRADER_RUBRIC", str(rubric))
    from autograder import batch, generate, hints

    generate.generate_all(root)
    lesson = root / "lessons" / "99_fixture.ipynb"
    subs = tmp / "subs"
    subs.mkdir()
    F.student_variant(lesson, subs / "alice.ipynb", add_body="return a + b", answer=GOOD)
    hints.record(subs / "alice.ipynb", "99_fixture", "q1", 2)
    (subs / "bob").mkdir()  # folder form: <student>/<notebook>.ipynb
    F.student_variant(lesson, subs / "bob" / "99_fixture.ipynb", add_body="return a - b", answer=TERMS)
    F.student_variant(lesson, subs / "crash.ipynb", add_body="return a + b", answer=GOOD, extra_cell=CRASH)
    F.student_variant(lesson, subs / "hang.ipynb", add_body="return a + b", answer=GOOD,
                      extra_cell=HANG_NO_INTERRUPT)
    F.student_variant(lesson, subs / "sleepy.ipynb", add_body="return a + b", answer=GOOD,
                      extra_cell=HANG_INTERRUPTIBLE)
    F.student_variant(lesson, subs / "slow.ipynb", add_body="return a + b", answer=GOOD, extra_cell=SLOW)
    out = tmp / "out"
    result = batch.grade_batch(subs, "99_fixture", out, workers=2, seed=7, time_limit_s=5, startup_slack_s=8,
                               solution=root / "solutions" / "99_fixture.ipynb", progress=False, show=False)
    yield {"root": root, "out": out, "result": result, "batch": batch}
    mp.undo()


def _csv(path):
    with open(path, encoding="utf-8") as fh:
        return {r["student"]: r for r in csv.DictReader(fh)}


def test_csv_gradebook(batch_env):
    rows = _csv(batch_env["result"].csv_path)
    assert list(rows) == ["alice", "bob", "crash", "hang", "sleepy", "slow"]
    a, b = rows["alice"], rows["bob"]
    assert (a["add"], a["q1"], a["total"], a["max"], a["passed"], a["status"]) == ("2", "2", "4", "4", "yes", "graded")
    assert a["hints_used"] == "q1:L2" and a["seed"] == "7"
    assert (b["add"], b["q1"], b["total"], b["passed"]) == ("0", "1", "1", "no")  # wrong code, term-only answer


def test_hanging_and_crashing_submissions_are_isolated(batch_env):
    rows = _csv(batch_env["result"].csv_path)
    assert rows["crash"]["status"] == "crashed" and "Kernel died" in rows["crash"]["reason"]
    # Ignores SIGINT: nbclient gives up on the cell, or (under load) the wall-clock limit kills it first.
    assert rows["hang"]["status"] == "timeout"
    assert "单元格" in rows["hang"]["reason"] or "超过时间限制" in rows["hang"]["reason"]
    assert rows["sleepy"]["status"] == "timeout" and "已被中断" in rows["sleepy"]["reason"]
    assert rows["slow"]["status"] == "timeout" and "超过时间限制" in rows["slow"]["reason"]  # killed
    for s in ("crash", "hang", "sleepy", "slow"):
        assert rows[s]["passed"] == "no"


def test_workers_ran_in_parallel(batch_env):
    iv = batch_env["result"].intervals
    hang_start, hang_end = iv["slow"]
    others = [iv[s] for s in iv if s != "slow"]
    assert any(start < hang_end and end > hang_start for start, end in others)


def test_html_feedback(batch_env):
    fb = batch_env["result"].feedback_dir
    page = (fb / "alice" / "index.html").read_text(encoding="utf-8")
    assert "通过" in page and "q1:L2" in page and "99_fixture.html" in page
    assert (fb / "alice" / "99_fixture.html").stat().st_size > 1000  # nbgrader's feedback notebook
    assert "运行崩溃" in (fb / "crash" / "index.html").read_text(encoding="utf-8")
    assert not (fb / "slow" / "99_fixture.html").exists()  # killed: no executed notebook to show


def test_rubric_scores_are_suggestions_in_gradebook(batch_env):
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{batch_env['result'].course_dir / 'gradebook.db'}") as gb:
        g = gb.find_grade("q1", "99_fixture", "99_fixture", "bob")
        c = gb.find_comment("q1", "99_fixture", "99_fixture", "bob")
        assert g.auto_score == 1 and g.manual_score is None and g.needs_manual_grade
        assert "建议分" in c.auto_comment and "术语" in c.auto_comment
        assert gb.find_grade("test_add", "99_fixture", "99_fixture", "alice").score == 2
        assert "使用过的提示" in gb.find_comment("q1", "99_fixture", "99_fixture", "alice").auto_comment


def test_instructor_override_survives_regrade(batch_env):
    """Regrade the nbgrader course dir itself after an override in the gradebook."""
    from nbgrader.api import Gradebook

    batch = batch_env["batch"]
    course = batch_env["result"].course_dir
    db = f"sqlite:///{course / 'gradebook.db'}"
    with Gradebook(db) as gb:
        gb.find_grade("q1", "99_fixture", "99_fixture", "bob").manual_score = 2.0
        gb.db.commit()
    for slow in ("crash", "hang", "sleepy", "slow"):  # keep the regrade short: only alice and bob
        shutil.rmtree(course / "submitted" / slow)
    out = batch_env["out"] / "again"
    # Through the `autograder grade` entry point this time.
    assert batch.main([str(course), "--lesson", "99_fixture", "--out", str(out), "--seed", "8",
                       "--time-limit", "5", "--no-feedback", "--no-progress",
                       "--solution", str(batch_env["root"] / "solutions" / "99_fixture.ipynb")]) == 0
    rows = _csv(out / "gradebook.csv")
    assert list(rows) == ["alice", "bob"]
    assert (rows["bob"]["q1"], rows["bob"]["total"], rows["bob"]["seed"]) == ("2", "2", "8")
    assert rows["alice"]["total"] == "4"
    with Gradebook(db) as gb:
        g = gb.find_grade("q1", "99_fixture", "99_fixture", "bob")
        assert g.manual_score == 2.0 and g.auto_score == 1 and g.score == 2.0



def test_changed_lesson_rebuilds_our_course_dir(batch_env, tmp_path):
    """nbgrader refuses to change an assignment's cells once it has submissions; a
    batch over a submissions folder then starts a fresh course dir (old one kept)."""
    import nbformat
    from nbformat.v4 import new_markdown_cell

    batch = batch_env["batch"]
    solution = tmp_path / "99_fixture.ipynb"
    shutil.copyfile(batch_env["root"] / "solutions" / "99_fixture.ipynb", solution)
    subs = tmp_path / "subs"
    subs.mkdir()
    shutil.copyfile(batch_env["root"] / "lessons" / "99_fixture.ipynb", subs / "carol.ipynb")
    out = tmp_path / "out"
    kw = dict(workers=1, seed=1, time_limit_s=5, feedback=False, progress=False, show=False)
    batch.grade_batch(subs, "99_fixture", out, solution=solution, **kw)
    nb = nbformat.read(str(solution), as_version=4)
    nb.cells.insert(1, new_markdown_cell("新增的说明"))
    nb.cells[1].metadata["nbgrader"] = {"grade": False, "grade_id": "new_note", "locked": True,
                                        "schema_version": 3, "solution": False, "task": False}
    nbformat.write(nb, str(solution))
    again = batch.grade_batch(subs, "99_fixture", out, solution=solution, **kw)
    assert [p.name.startswith("course.old-") for p in out.iterdir() if p.name.startswith("course.")] == [True]
    assert again.rows[0].status == "graded" and again.rows[0].total == 0  # the unfilled lesson as submitted
    assert (again.course_dir / "gradebook.db").exists()


# ----------------------------------------------------------------------------- bundled lesson-5 examples

REPO = Path(__file__).resolve().parents[2]
HAVE_LESSON5 = (REPO / "solutions" / "05_layernorm.ipynb").exists() and (REPO / "examples" / "submissions").is_dir()


@pytest.mark.skipif(not HAVE_LESSON5, reason="lesson 5 solution / examples not present")
def test_bundled_examples_are_up_to_date():
    sys.path.insert(0, str(REPO / "examples"))
    import build_examples

    assert build_examples.main(["--check"]) == 0, "run: python examples/build_examples.py"


@pytest.mark.skipif(not HAVE_LESSON5, reason="lesson 5 solution / examples not present")
def test_bundled_examples_grade_as_expected(tmp_path, monkeypatch):
    """examples/expected.json: perfect 10/10 pass, wrong formula, removed fmaxf (veto), term-only answers."""
    import json

    monkeypatch.delenv("AUTOGRADER_RUBRIC", raising=False)  # the repository's rubric, not the fixture's

    from autograder import batch, demo

    result = batch.grade_batch(REPO / "examples" / "submissions", "05_layernorm", tmp_path, workers=2, seed=1234,
                               feedback=False, progress=False, show=False)
    expected = json.loads((REPO / "examples" / "expected.json").read_text(encoding="utf-8"))
    assert demo.compare_expected(result, expected) == []
    assert [r.seed for r in result.rows] == [1234] * 4
