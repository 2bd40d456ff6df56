"""Meaning-preserving rewrites of answers must not move their scores.

Each tuning answer the scorer gets right is rewritten the ways students write the same thing differently —
traditional characters, a hedge (我觉得), other connectives (由于 / 因此 / 使得), full-width letters and digits,
fillers (嗯，/ 就是说，), one sentence per line, chat particles (嘛), a full stop before 所以 — and scored again: a teacher would give the
same points, so the scorer must too (at most 1 % of the answers may move, for a rewrite that happens to change
what a sentence says).  The held-out halves are not used here.
"""
from __future__ import annotations

import functools
import json
import re

import opencc
import pytest

from autograder import config
from autograder.answers.cli import score_record

FILES = ["tune_r10.jsonl"]
TOLERANCE = 0.01

_s2t = opencc.OpenCC("s2t")


def _hedge(t):
    return re.sub(r"(^|[。！？\n])\s*(?=[\u4e00-\u9fff])", lambda m: m.group(1) + "我觉得", t)


def _connectives(t):
    for a, b in (("因为", "由于"), ("所以", "因此"), ("导致", "使得"), ("如果", "要是")):
        t = t.replace(a, b)
    return t


REWRITES = {
    "traditional": _s2t.convert,
    "hedge": _hedge,
    "connectives": _connectives,
    "fullwidth": lambda t: "".join(chr(ord(c) + 0xFEE0) if c.isascii() and c.isalnum() else c for c in t),
    "filler": lambda t: "嗯，" + t.replace("。", "。就是说，", 1),
    "newlines": lambda t: re.sub(r"。(?=.)", "。\n", t),
    "particle": lambda t: re.sub(r"，", "嘛，", t, count=2),
    # a full stop before 所以 / 因此 / so where the student had a comma
    "split": lambda t: t.replace("，所以", "。所以").replace("，因此", "。因此").replace(", so ", ". So "),
}


def _verdict(rec):
    s = score_record(rec, "cpu")
    return s.points, bool(s.vetoes)


@functools.lru_cache(maxsize=None)
def agreed():
    out = []
    for name in FILES:
        for line in (config.REPO_ROOT / "calibration" / name).read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            v = _verdict(rec)
            if v == (rec["human_score"], bool(rec.get("human_veto"))):
                out.append((rec, v))
    return tuple(out)


def test_enough_answers_to_rewrite():
    assert len(agreed()) >= 150


@pytest.mark.slow
@pytest.mark.parametrize("rewrite", REWRITES)
def test_a_meaning_preserving_rewrite_keeps_the_score(rewrite):
    fn = REWRITES[rewrite]
    tried = moved = 0
    examples = []
    for rec, v in agreed():
        text = fn(rec["text"])
        if text == rec["text"]:
            continue
        tried += 1
        if _verdict(dict(rec, text=text)) != v:
            moved += 1
            examples.append(rec["id"])
    assert tried >= 100 and moved <= TOLERANCE * tried, (moved, tried, examples[:5])
