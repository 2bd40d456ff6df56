"""The calibration corpus (calibration/README.md): the scorer against human scores, with issue 17's
thresholds.  The held-out half is only ever scored here and for the figures in docs/grading.md."""
from __future__ import annotations

import functools
import json

import pytest

from autograder import config
from autograder.answers.cli import evaluate, load_rows

CORPUS = config.REPO_ROOT / "calibration"
HALVES = {"tune": CORPUS / "answers_tune.jsonl", "heldout": CORPUS / "answers_heldout.jsonl"}


@functools.lru_cache(maxsize=None)
def figures(half: str):
    return evaluate(load_rows(str(HALVES[half]), "cpu"), worst=0)


@pytest.mark.parametrize("half", HALVES)
def test_corpus_covers_every_written_item(half):
    rows = [json.loads(ln) for ln in HALVES[half].read_text(encoding="utf-8").splitlines() if ln.strip()]
    written = {(lid, iid) for lid, les in config.load()["lessons"].items() if lid in {r["lesson"] for r in rows}
               for iid, it in les["items"].items() if it["kind"] == "rubric"}
    assert {(r["lesson"], r["item"]) for r in rows} == written
    assert len({r["category"] for r in rows}) >= 12 and len(rows) >= 150


@pytest.mark.parametrize("half", HALVES)
def test_agreement_with_human_scores(half):
    fig = figures(half)
    assert fig["exact"] >= 0.85, fig["by_item"]
    assert fig["within_one"] >= 0.95


@pytest.mark.parametrize("half", HALVES)
def test_no_keyword_stuffed_answer_above_one_point(half):
    fig = figures(half)
    assert fig["stuffed"] >= 10 and fig["stuffed_above_1"] == 0


@pytest.mark.parametrize("half", HALVES)
def test_no_false_veto(half):
    assert figures(half)["false_vetoes"] == 0, figures(half)["by_category"]


@pytest.mark.parametrize("half", HALVES)
def test_at_most_one_whole_submission_flips(half):
    fig = figures(half)
    assert fig["submissions"] >= 15 and len(fig["pass_fail_flips"]) <= 1, fig["pass_fail_flips"]
