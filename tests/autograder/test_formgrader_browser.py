"""formgrader in a real browser (JupyterLab's nbgrader extension, Playwright + Debian Chromium): the items the
judge routed to review are in the manual-grading queue with the suggested score, a confident item is not,
and an override made there survives an ``autograder grade`` re-run (issue 17's and 19's proof).
Screenshots: out/formgrader_*.png."""
from __future__ import annotations

import csv
import os
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import nbgrader_fixtures as F  # noqa: E402

sys.path.insert(0, str(Path(__file__).parents[1]))
import jupyter_lab  # noqa: E402

from autograder import sandbox  # noqa: E402

pytestmark = [pytest.mark.browser, pytest.mark.slow,
              pytest.mark.skipif(not sandbox.available(), reason=f"no sandbox: {sandbox.unavailable_reason()}")]
REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "out"
GOOD = "先读取输入，因为方差可能为负，所以用 fmaxf 截断。"
# right, and a misconception quoted to reject it: the judge scores it 2 and routes it to a person
QUOTED = "先读取输入，因为方差可能为负，所以用 fmaxf 截断。常有人说 fmaxf 是为了更快，其实不是。"


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    jupyter_lab.need_browser()
    tmp = tmp_path_factory.mktemp("fg")
    root, rubric = F.write_fixture_lesson(tmp)
    mp = pytest.MonkeyPatch()
    mp.setenv("AUTOGRADER_RUBRIC", str(rubric))
    from autograder import batch, generate
    from autograder.settings import CourseLayout, GradingSettings
    generate.generate_all(root)
    subs = tmp / "subs"
    subs.mkdir()
    lesson = root / "lessons" / "99_fixture.ipynb"
    F.student_variant(lesson, subs / "alice.ipynb", add_body="return a + b", answer=GOOD)
    F.student_variant(lesson, subs / "bob.ipynb", add_body="return a + b", answer=QUOTED)
    layout = CourseLayout.resolve(root)
    settings = GradingSettings.resolve({"time_limit_s": 20}, flags={"sandbox": "require"})
    result = batch.grade_batch(subs, "99_fixture", tmp / "out", workers=2, seed=3, settings=settings, layout=layout,
                               progress=False, show=False, feedback=False)
    yield {"tmp": tmp, "root": root, "course": result.course_dir, "rubric": rubric}
    mp.undo()


@pytest.fixture(scope="module")
def formgrader(course):
    cfgdir = course["tmp"] / "jupyter-config"
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(cfgdir), AUTOGRADER_RUBRIC=str(course["rubric"]))
    with jupyter_lab.lab_server(course["course"], env, course["tmp"] / "lab.log", ready="/formgrader") as base:
        with jupyter_lab.chromium() as b:
            yield base, b


def _shot(page, name):
    OUT.mkdir(exist_ok=True)
    page.screenshot(path=str(OUT / name), full_page=True)


def test_review_queue_suggested_score_and_an_override_that_survives_a_regrade(course, formgrader):
    from nbgrader.api import Gradebook
    from playwright.sync_api import expect
    base, browser = formgrader
    db = f"sqlite:///{course['course'] / 'gradebook.db'}"
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(f"{base}/formgrader/gradebook/99_fixture/99_fixture")
    rows = page.locator("tbody tr")
    expect(rows).to_have_count(2, timeout=60_000)
    bob = page.locator("tbody tr", has_text="bob")
    alice = page.locator("tbody tr", has_text="alice")
    expect(bob.locator(".needs-manual-grade .glyphicon-ok")).to_have_count(1)      # routed to review
    expect(alice.locator(".needs-manual-grade .glyphicon-ok")).to_have_count(0)    # confident: not left to a person
    _shot(page, "formgrader_review_queue.png")

    bob.locator("a").first.click()
    score = page.locator("input.score#q1")
    expect(score).to_be_visible(timeout=60_000)
    expect(score).to_have_attribute("placeholder", "2")     # the judge's suggestion is the auto score
    expect(score).to_have_value("")
    expect(score).to_have_class(__import__("re").compile("needs_manual_grade"))
    _shot(page, "formgrader_suggested_score.png")
    score.fill("1")
    score.press("Tab")
    deadline = time.time() + 30
    while time.time() < deadline:
        with Gradebook(db) as gb:
            if gb.find_grade("q1", "99_fixture", "99_fixture", "bob").manual_score == 1:
                break
        time.sleep(0.3)
    with Gradebook(db) as gb:
        assert gb.find_grade("q1", "99_fixture", "99_fixture", "bob").manual_score == 1

    from autograder import batch
    out = course["tmp"] / "again"
    assert batch.main([str(course["course"]), "--lesson", "99_fixture", "--out", str(out), "--force", "--seed", "3",
                       "--no-feedback", "--no-progress", "--course-root", str(course["root"])]) == 0
    with open(out / "grades-99_fixture.csv", encoding="utf-8") as fh:
        rows = {r["student"]: r for r in csv.DictReader(fh)}
    assert rows["bob"]["q1"] == "1" and rows["bob"]["total"] == "3" and rows["bob"]["passed"] == "yes"
    with Gradebook(db) as gb:
        g = gb.find_grade("q1", "99_fixture", "99_fixture", "bob")
        assert g.manual_score == 1 and g.auto_score == 2
    page.reload()
    expect(page.locator("input.score#q1")).to_have_value("1", timeout=60_000)
    _shot(page, "formgrader_override_kept.png")
    page.close()
