"""The calibration corpus (calibration/README.md): the scorer against human scores, with issue 17's
thresholds.  The held-out halves are only ever scored here and for the figures in docs/grading.md."""
from __future__ import annotations

import functools
import json

import pytest

from autograder import config
from autograder.answers.cli import evaluate, load_rows

CORPUS = config.REPO_ROOT / "calibration"
# tune: author A (lessons 04-08, the rules were tuned on it); heldout: author B (lessons 04-08);
# heldout_new: author D (lessons 01-03, 09-12); heldout_f: author F (all 12 lessons, written after the third
# rubric round); heldout_lmn: authors L, M, N (lessons 01-04, 05-08, 09-12, written before the fifth round);
# heldout_r7: authors Z, AE, AF (lessons 01-04, 05-08, 09-12, written before the seventh round);
# heldout_r8: authors AG, AH, AI (the same split, written before the eighth round);
# heldout_r9: authors AP (lessons 01-06), AQ (07-12), written before the ninth round and scored once after it.
# heldout_r10: authors AT (lessons 01-06), AU (07-12), written before the tenth round; heldout_r11: authors AV, AX
# (01-06), AW, AY (07-12), written during it; heldout_r13: authors BF (01-06), BG (07-12), and heldout_r14: authors
# BJ (01-06), BK (07-12), cross-sections of a class written blind during the eleventh round; heldout_r15: authors
# BR (01-06), BS (07-12), written blind during the twelfth; heldout_r16: authors CC (01-06), CD (07-12), and
# heldout_r17: authors CG (01-06), CH (07-12), and heldout_r18: authors CK (01-06), CL (07-12), written blind during
# the thirteenth; heldout_r19: authors DC (01-06), DD (07-12), written blind during the fourteenth.
# No held-out half is tuned on.
HALVES = {"tune": CORPUS / "answers_tune.jsonl", "heldout": CORPUS / "answers_heldout.jsonl",
          "heldout_new": CORPUS / "heldout_new.jsonl", "heldout_f": CORPUS / "heldout_f.jsonl",
          "heldout_lmn": CORPUS / "heldout_lmn.jsonl", "heldout_r7": CORPUS / "heldout_r7.jsonl",
          "heldout_r8": CORPUS / "heldout_r8.jsonl", "heldout_r9": CORPUS / "heldout_r9.jsonl",
          "heldout_r10": CORPUS / "heldout_r10.jsonl", "heldout_r11": CORPUS / "heldout_r11.jsonl",
          "heldout_r13": CORPUS / "heldout_r13.jsonl", "heldout_r14": CORPUS / "heldout_r14.jsonl",
          "heldout_r15": CORPUS / "heldout_r15.jsonl", "heldout_r16": CORPUS / "heldout_r16.jsonl",
          "heldout_r17": CORPUS / "heldout_r17.jsonl", "heldout_r18": CORPUS / "heldout_r18.jsonl",
          "heldout_r19": CORPUS / "heldout_r19.jsonl"}

# Where a held-out half does not reach issue 17's bar yet (figures: docs/grading.md): strict expected
# failures -- the day one passes, drop its entry.  The thresholds themselves are never loosened.
BELOW = {
    "agreement": set(),                                     # exact agreement below 85 %
    "stuffed": {"heldout_r8"},                              # a keyword-stuffed answer above 1 point
    "false_veto": {"heldout", "heldout_r7", "heldout_r9", "heldout_r11", "heldout_r13",
                   "heldout_r18", "heldout_r19"},                                     # false vetoes
    "flips": {"heldout", "heldout_new", "heldout_r7", "heldout_r9", "heldout_r10", "heldout_r11",
              "heldout_r16", "heldout_r17", "heldout_r19"},                                                # > 1 flip in 15
}


def halves(check: str):
    mark = pytest.mark.xfail(strict=True, reason=f"held-out half below issue 17's bar ({check}; docs/grading.md)")
    return [pytest.param(h, marks=mark) if h in BELOW[check] else h for h in HALVES]


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


@pytest.mark.parametrize("half", halves("agreement"))
def test_agreement_with_human_scores(half):
    fig = figures(half)
    assert fig["exact"] >= 0.85, fig["exact"]
    assert fig["within_one"] >= 0.95


@pytest.mark.parametrize("half", halves("stuffed"))
def test_no_keyword_stuffed_answer_above_one_point(half):
    assert figures(half)["stuffed_above_1"] == 0


def test_held_out_halves_hold_enough_keyword_gamers():
    # the stuffing rule is tested on enough gamers: every half has some, all together many
    counts = {h: figures(h)["stuffed"] for h in HALVES if h != "tune"}
    assert min(counts.values()) >= 5 and sum(counts.values()) >= 80, counts


@pytest.mark.parametrize("half", halves("false_veto"))
def test_no_false_veto(half):
    assert figures(half)["false_vetoes"] == 0, figures(half)["false_vetoes"]


@pytest.mark.parametrize("half", halves("flips"))
def test_at_most_one_whole_submission_flips(half):
    fig = figures(half)
    # issue 17: "at most one pass/fail flip in fifteen whole submissions" -- a rate, for halves of any size
    flips = len(fig["pass_fail_flips"])
    assert fig["submissions"] >= 15 and flips * 15 <= fig["submissions"], (flips, fig["submissions"])


def test_heldout_within_one_point():
    # the part of the bar the held-out half does meet: no answer off by two, on either half
    for half in HALVES:
        assert figures(half)["within_one"] >= 0.95, half
