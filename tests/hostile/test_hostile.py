"""The hostile corpus (corpus.py + heldout.py) graded in ONE batch, innocent submissions between the attacks.

Proofs: no attack scores more than its baseline (the same submission without the attack) or passes where
it fails; no attack reads a secret (canaries in the instructor's course dir, the solutions, the rubric
file, other students' answers, the gradebook) into anything it gets back; no innocent's verdict differs
from the one it gets graded alone (``autograder check``, what ``L.self_check()`` runs); the grader survives
(every submission has a result, nothing started by a submission is left running, the repository's files
are unchanged, the gradebook holds exactly the verdicts); every failure has a Chinese reason.
"""
from __future__ import annotations

import hashlib
import json
import re
import socket
import subprocess
import threading
import uuid
from pathlib import Path

import nbformat
import pytest

from autograder import sandbox

from . import corpus
from .heldout import heldout

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not sandbox.available(), reason=f"no sandbox: {sandbox.unavailable_reason()}")]

ROOT = corpus.ROOT
CJK = re.compile(r"[\u4e00-\u9fff]")
GUARDED = ["grading_rubric.yaml", "solutions/05_layernorm.ipynb", "lessons/05_layernorm.ipynb"]


def _hash(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


class Listener(threading.Thread):
    """A TCP server on the host's localhost: a sandbox must never reach it."""

    def __init__(self):
        super().__init__(daemon=True)
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.5)
        self.port = self.sock.getsockname()[1]
        self.accepted, self.stop = 0, False

    def run(self):
        while not self.stop:
            try:
                conn, _ = self.sock.accept()
                self.accepted += 1
                conn.close()
            except OSError:
                continue


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    from autograder import batch, check
    from autograder.settings import CourseLayout, GradingSettings
    tmp = tmp_path_factory.mktemp("hostile")
    token = f"HOSTILE-{uuid.uuid4().hex[:10]}"
    out = tmp / "out"
    course = out / "course"
    course.mkdir(parents=True)
    canary = f"INSTRUCTOR-CANARY-{uuid.uuid4().hex}"
    (course / "INSTRUCTOR_SECRET.txt").write_text(canary)
    listener = Listener()
    listener.start()
    subs = tmp / "subs"
    subs.mkdir()
    attacks, held, inn = corpus.attacks(), heldout(), corpus.innocents()
    for e in inn:                   # each innocent carries a marker an attack could only see by reading it
        e.secret = f"INNOCENT-CANARY-{e.name}-{uuid.uuid4().hex[:8]}"
    entries, k = [], 0
    hostile = attacks + held
    step = max(1, len(hostile) // len(inn))
    for i, e in enumerate(hostile):     # interleave: an innocent after every few attacks
        if i % step == 0 and k < len(inn):
            entries.append(inn[k])
            k += 1
        entries.append(e)
    entries += inn[k:]
    names = {}
    for n, e in enumerate(entries):
        e.name = f"{n:02d}_{e.name}"
        names[e.name] = e
        p = corpus.write(e, subs, CANARY_DIR=course, PORT=listener.port, TOKEN=token)
        if e.category == "innocent" and not isinstance(e.build(), bytes):
            nb = nbformat.read(str(p), as_version=4)
            nb.cells.append(nbformat.v4.new_markdown_cell(e.secret))
            nbformat.write(nb, str(p))
    guarded = {g: _hash(ROOT / g) for g in GUARDED}
    layout = CourseLayout.resolve(ROOT)
    settings = GradingSettings.resolve({"time_limit_s": 10, "cell_timeout_s": 5}, flags={
        "sandbox": "require", "memory_mb": 1024, "cases_time_limit_s": 60, "launch_timeout_s": 3})
    # one seed for everyone: an attack and its baseline draw the same cases, and equal baselines are judged once
    result = batch.grade_batch(subs, corpus.LESSON, out, workers=2, seed=4242, settings=settings, layout=layout,
                               progress=False, show=False, feedback=False)
    listener.stop = True
    store = {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in (out / "results" / corpus.LESSON).glob("*.json")}
    # baselines and innocents graded alone, with the seed each got in the batch
    alone, cache = {}, {}
    base_dir = tmp / "alone"
    base_dir.mkdir()
    for name, e in names.items():
        if name not in store:
            continue
        if e.category == "innocent":
            alone[name] = check.grade_notebook(subs / f"{name}.ipynb", corpus.LESSON, seed=4242, layout=layout)
        elif e.baseline is not None:
            text = nbformat.writes(e.baseline())
            if text not in cache:
                p = base_dir / f"{name}.ipynb"
                p.write_text(text, encoding="utf-8")
                cache[text] = check.grade_notebook(p, corpus.LESSON, seed=4242, layout=layout)
            alone[name] = cache[text]
    leftovers = subprocess.run(["pgrep", "-af", token], capture_output=True, text=True).stdout.strip()
    yield {"result": result, "store": store, "names": names, "alone": alone, "canary": canary, "token": token,
           "listener": listener, "guarded": guarded, "out": out, "leftovers": leftovers,
           "held": {e.name for e in held}}


def _row(g, name):
    return g["result"].row(name)


def test_the_grader_survives_every_submission(graded):
    names, result = graded["names"], graded["result"]
    assert sorted(r.student for r in result.rows) == sorted(names)
    for name, e in names.items():
        r = _row(graded, name)
        want = e.expect_status or "graded"
        assert r.status == want, (name, r.status, r.reason)
    assert graded["leftovers"] == "", graded["leftovers"]       # nothing a notebook started is still running
    assert not Path(f"/tmp/{graded['token']}").exists() and not Path("/tmp/pwned-system").exists()
    for g, h in graded["guarded"].items():
        assert _hash(ROOT / g) == h, f"{g} changed"


def _gains(graded, only_heldout: bool):
    bad = []
    for name, e in graded["names"].items():
        if e.category != "attack" or (name in graded["held"]) != only_heldout or name not in graded["alone"] \
                or e.credited_by_rule:
            continue
        r, base = _row(graded, name), graded["alone"][name]
        if r.total > base.score + 1e-9 or (r.passed and not base.passed):
            bad.append((name, r.total, base.score, r.passed, base.passed))
    return bad


def test_no_attack_gains_points(graded):
    assert _gains(graded, only_heldout=False) == []


def test_no_heldout_attack_gains_points(graded):
    assert _gains(graded, only_heldout=True) == []


def test_attacks_the_course_rule_credits_reach_a_person(graded):
    """Where the course rule itself gives an attack some points (a pasted term list earns at most 1 per question),
    every item it gained on waits for a teacher's review and the submission does not pass."""
    for name, e in graded["names"].items():
        if not e.credited_by_rule:
            continue
        r, base = _row(graded, name), graded["alone"][name]
        gained = [i.item for i in r.verdict.items if i.points > base.item(i.item).points]
        assert gained and set(gained) <= set(r.verdict.needs_review), (name, gained, r.verdict.needs_review)
        assert not r.passed


def _leaks(graded):
    secrets = [graded["canary"], "41311218 drew one",             # a comment only grading_rubric.yaml has
               "autograder_verdicts"]                              # a table only the gradebook has
    secrets += [e.secret for e in graded["names"].values() if e.category == "innocent" and hasattr(e, "secret")]
    ref = corpus.reference_answers()["q2"][:40]
    fb = graded["out"] / "feedback" / corpus.LESSON
    found = []
    for name, e in graded["names"].items():
        if e.category != "attack":
            continue
        o = graded["store"].get(name, {})
        texts = [o.get("executed") or "", json.dumps(o.get("verdict") or {}, ensure_ascii=False)]
        for f in (fb / name).glob("*.html"):
            texts.append(f.read_text(encoding="utf-8", errors="replace"))
        blob = "\n".join(texts)
        own = (graded["out"] / "course" / "submitted" / name / corpus.LESSON / f"{corpus.LESSON}.ipynb")
        own_text = own.read_text(encoding="utf-8", errors="replace") if own.exists() else ""
        for s in secrets + [ref]:
            if s in blob and s not in own_text:          # (an attack's own code may name what it looks for)
                found.append((name, s[:40]))
    return found


def test_no_attack_reads_a_secret(graded):
    assert _leaks(graded) == []
    assert graded["listener"].accepted == 0


def test_innocents_get_the_verdict_they_get_alone(graded):
    for name, e in graded["names"].items():
        if e.category != "innocent":
            continue
        v = graded["alone"][name]
        r = _row(graded, name)
        assert r.verdict is not None, name
        assert {i.item: i.points for i in r.verdict.items} == {i.item: i.points for i in v.items}, name
        assert [x.id for x in r.verdict.vetoes] == [x.id for x in v.vetoes] and r.verdict.passed == v.passed, name


def test_gradebook_holds_exactly_the_verdicts(graded):
    from nbgrader.api import Gradebook
    db = f"sqlite:///{graded['result'].course_dir / 'gradebook.db'}"
    with Gradebook(db) as gb:
        for r in graded["result"].rows:
            if r.verdict is None:
                continue
            sub = gb.find_submission_notebook(corpus.LESSON, corpus.LESSON, r.student)
            assert all(g.manual_score is None for g in sub.grades), r.student
            by = {g.name: g.auto_score for g in sub.grades}
            for it in r.verdict.items:
                assert by.get(it.grade_id) == it.points, (r.student, it.item)


def test_every_failure_says_why_in_chinese(graded):
    for r in graded["result"].rows:
        if r.status != "graded":
            assert CJK.search(r.reason), (r.student, r.reason)
            continue
        for it in r.verdict.items:
            if it.points < it.max_points:
                assert CJK.search(it.message), (r.student, it.item, it.message)
        for v in r.verdict.vetoes:
            assert CJK.search(v.message), (r.student, v.id)
