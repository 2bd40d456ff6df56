"""Batch grading end to end on a small fixture lesson: sandboxed workers, the verdict recorded through
nbgrader's autograde pipeline, CSV + merged gradebook, HTML, overrides kept, resume, --student, export.

One module-scoped batch (the fixture's ``test`` item runs each notebook in its sandbox); the bundled
lesson-5 examples are graded once at the bottom."""
from __future__ import annotations

import csv
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import nbgrader_fixtures as F  # noqa: E402

pytestmark = pytest.mark.slow

GOOD = "先读取输入，因为方差可能为负，所以用 fmaxf 截断。"
TERMS = "输入 负 截断"
HANG_NO_INTERRUPT = "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass"
CRASH = "import os\nos._exit(3)"
# also claims a GPU run the grading never made: a veto, so the item waits for a person
XSS = "<script>alert('x')</script>先读取输入，因为方差可能为负，所以用 fmaxf 截断。我在 H100 上实测快了 2 倍。"


@pytest.fixture(scope="module")
def batch_env(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("batch")
    root, rubric = F.write_fixture_lesson(tmp)
    mp = pytest.MonkeyPatch()
    mp.setenv("AUTOGRADER_RUBRIC", str(rubric))
    from autograder import batch, generate, hints
    from autograder.settings import CourseLayout, GradingSettings

    generate.generate_all(root)
    lesson = root / "lessons" / "99_fixture.ipynb"
    subs = tmp / "subs"
    subs.mkdir()
    F.student_variant(lesson, subs / "alice.ipynb", add_body="return a + b", answer=GOOD)
    hints.record(subs / "alice.ipynb", "99_fixture", "q1", 2)
    (subs / "bob").mkdir()  # folder form: <student>/<notebook>.ipynb
    F.student_variant(lesson, subs / "bob" / "99_fixture.ipynb", add_body="return a - b", answer=TERMS)
    F.student_variant(lesson, subs / "crash.ipynb", add_body="return a + b", answer=GOOD, extra_cell=CRASH)
    F.student_variant(lesson, subs / "hang.ipynb", add_body="return a + b", answer=GOOD, extra_cell=HANG_NO_INTERRUPT)
    F.student_variant(lesson, subs / "xss.ipynb", add_body="return a + b", answer=XSS)
    (subs / "empty.ipynb").write_text("")
    layout = CourseLayout.resolve(root)
    settings = GradingSettings.resolve({"time_limit_s": 8, "cell_timeout_s": 4}, flags={"sandbox": "require"})
    out = tmp / "out"
    kw = dict(workers=2, seed=7, settings=settings, layout=layout, progress=False, show=False)
    result = batch.grade_batch(subs, "99_fixture", out, **kw)
    again = batch.grade_batch(subs, "99_fixture", out, **kw)          # resume: nothing left to grade
    yield {"root": root, "out": out, "subs": subs, "result": result, "again": again, "batch": batch, "kw": kw,
           "layout": layout}
    mp.undo()


def _csv(path):
    with open(path, encoding="utf-8") as fh:
        return {r["student"]: r for r in csv.DictReader(fh)}


def test_lesson_csv(batch_env):
    rows = _csv(batch_env["result"].csv_path)
    assert list(rows) == ["alice", "bob", "crash", "empty", "hang", "xss"]
    a, b = rows["alice"], rows["bob"]
    assert (a["add"], a["q1"], a["total"], a["max"], a["passed"], a["status"]) == ("2", "2", "4", "4", "yes", "graded")
    assert a["hints_used"] == "q1:L2" and a["seed"] == "7" and a["lesson"] == "99_fixture"
    assert a["backend"] == "cpu" and a["grader_version"] and a["rubric_hash"]
    assert (b["add"], b["q1"], b["total"], b["passed"]) == ("0", "1", "1", "no")  # wrong code, term-only answer
    assert b["needs_review"] == "q1"                        # a point earned by naming terms alone: a person looks
    assert rows["xss"]["needs_review"] == "q1" and rows["xss"]["vetoes"] == "gpu_claim"   # a veto goes to a person
    assert rows["empty"]["status"] == "invalid" and "文件是空的" in rows["empty"]["reason"]


def test_crashing_and_hanging_notebooks_cost_their_own_test_item_only(batch_env):
    rows = _csv(batch_env["result"].csv_path)
    for s in ("crash", "hang"):
        assert rows[s]["status"] == "graded" and rows[s]["add"] == "0" and rows[s]["q1"] == "2", rows[s]
    v = batch_env["result"].row("hang").verdict
    assert "超过" in v.item("add").message or "没有运行" in v.item("add").message


def test_resume_grades_nothing_twice_and_student_regrades_one(batch_env):
    again = batch_env["again"]
    assert again.graded == [] and sorted(again.skipped) == ["alice", "bob", "crash", "hang", "xss"]
    assert _csv(again.csv_path) == _csv(batch_env["result"].csv_path)
    batch = batch_env["batch"]
    one = batch.grade_batch(batch_env["subs"], "99_fixture", batch_env["out"], students=["bob"], force=True,
                            **batch_env["kw"])
    assert one.graded == ["bob"]
    assert list(_csv(one.csv_path)) == ["alice", "bob", "crash", "empty", "hang", "xss"]   # the others kept


def test_html_feedback_escapes_what_the_student_wrote(batch_env):
    fb = batch_env["result"].feedback_dir
    page = (fb / "alice" / "index.html").read_text(encoding="utf-8")
    assert "通过" in page and "q1:L2" in page and "99_fixture.html" in page
    assert (fb / "alice" / "99_fixture.html").stat().st_size > 1000  # nbgrader's feedback notebook
    xss = (fb / "xss" / "index.html").read_text(encoding="utf-8")
    assert "<script>" not in xss
    assert "<script>alert" not in (fb / "xss" / "99_fixture.html").read_text(encoding="utf-8")


def test_verdict_is_in_nbgrader_gradebook(batch_env):
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{batch_env['result'].course_dir / 'gradebook.db'}") as gb:
        g = gb.find_grade("q1", "99_fixture", "99_fixture", "bob")
        c = gb.find_comment("q1", "99_fixture", "99_fixture", "bob")
        assert g.auto_score == 1 and g.manual_score is None and g.needs_manual_grade   # term-list credit: reviewed
        gx = gb.find_grade("q1", "99_fixture", "99_fixture", "xss")
        cx = gb.find_comment("q1", "99_fixture", "99_fixture", "xss")
        assert gx.manual_score is None and gx.needs_manual_grade   # routed: the suggestion stays the auto score
        assert "建议分" in cx.auto_comment
        assert gb.find_grade("test_add", "99_fixture", "99_fixture", "alice").score == 2
        ga = gb.find_grade("q1", "99_fixture", "99_fixture", "alice")
        assert ga.auto_score == 2 and not ga.needs_manual_grade     # a confident score is not left for a person
        assert gb.find_submission("99_fixture", "bob").score == 1


def test_instructor_override_survives_regrade_and_changes_the_csv(batch_env):
    """Regrade the nbgrader course dir itself (an instructor's course) after an override in the gradebook."""
    from nbgrader.api import Gradebook

    batch = batch_env["batch"]
    course = batch_env["result"].course_dir
    db = f"sqlite:///{course / 'gradebook.db'}"
    with Gradebook(db) as gb:
        gb.find_grade("q1", "99_fixture", "99_fixture", "bob").manual_score = 2.0
        gb.db.commit()
    out = batch_env["out"] / "again"
    assert batch.main([str(course), "--lesson", "99_fixture", "--out", str(out), "--seed", "8", "--student", "alice",
                       "--student", "bob", "--no-feedback", "--no-progress", "--time-limit", "8",
                       "--course-root", str(batch_env["root"])]) == 0
    rows = _csv(out / "grades-99_fixture.csv")
    assert list(rows) == ["alice", "bob"]
    assert (rows["bob"]["q1"], rows["bob"]["total"], rows["bob"]["seed"]) == ("2", "2", "8")
    assert rows["bob"]["needs_review"] == ""                   # the instructor has decided
    with Gradebook(db) as gb:
        g = gb.find_grade("q1", "99_fixture", "99_fixture", "bob")
        assert g.manual_score == 2.0 and g.auto_score == 1 and g.score == 2.0


def test_merged_gradebook_and_exports(batch_env):
    from autograder.batch.export import export
    out = batch_env["out"]
    merged = _csv(out / "gradebook.csv")
    assert merged["alice"]["99_fixture:total"] == "4" and merged["alice"]["99_fixture:passed"] == "yes"
    canvas = list(csv.reader(open(export(out, "canvas"), encoding="utf-8")))
    assert canvas[0][:5] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"] and canvas[1][0] == "Points Possible"
    assert ["alice", "", "alice", "alice", "", "4", "yes"] in canvas
    moodle = list(csv.DictReader(open(export(out, "moodle"), encoding="utf-8")))
    bob = next(r for r in moodle if r["Username"] == "bob")
    assert bob["99_fixture"] in ("1", "2") and "通过" in bob["99_fixture feedback"]


def test_source_notebook_is_never_overwritten_without_force(batch_env, tmp_path):
    from autograder.batch.course import CourseError
    batch = batch_env["batch"]
    course = tmp_path / "course"
    shutil.copytree(batch_env["result"].course_dir, course)
    src = course / "source" / "99_fixture" / "99_fixture.ipynb"
    src.write_text(src.read_text(encoding="utf-8").replace("第 99 课", "第 99 课（老师改过）"), encoding="utf-8")
    with pytest.raises(CourseError, match="--force"):
        batch.grade_batch(course, "99_fixture", tmp_path / "o", **batch_env["kw"])
    assert "老师改过" in src.read_text(encoding="utf-8")


# ----------------------------------------------------------------------------- bundled lesson-5 examples

REPO = Path(__file__).resolve().parents[2]
HAVE_LESSON5 = (REPO / "solutions" / "05_layernorm.ipynb").exists() and (REPO / "examples" / "submissions").is_dir()


@pytest.mark.skipif(not HAVE_LESSON5, reason="lesson 5 solution / examples not present")
def test_bundled_examples_are_up_to_date():
    sys.path.insert(0, str(REPO / "examples"))
    import build_examples

    assert build_examples.main(["--check"]) == 0, "run: python examples/build_examples.py"
