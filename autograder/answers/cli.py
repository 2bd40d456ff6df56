"""``autograder score-answers FILE.jsonl`` and ``autograder rubric-eval FILE.jsonl``.

score-answers: each input line ``{"lesson", "item", "text", ...}`` gives one JSON line out, in
order: ``{"lesson", "item", "points", "max_points", "vetoes": [{"id", "message", "evidence"}],
"needs_review", "review_reasons", "confidence", "claims", "message"}`` (plus the input's ``id``).
A line that cannot be scored gives ``{"line", "error"}`` in its place, the error on stderr, exit 1.

rubric-eval: lines that also carry ``human_score`` (and ``human_veto``, ``category``, ``student``,
``code_points``); prints agreement, the confusion matrix, false credit / denial per category and
per item, vetoes against the human's, whole-submission pass/fail flips and the worst
disagreements verbatim (the way Moodle's pattern-match question lets a teacher test rules
against marked responses).  ``--json`` prints the figures as one JSON object.
"""
from __future__ import annotations

import argparse
import functools
import json
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional

from . import score_answer


class LineError(ValueError):
    pass


def current_backend() -> str:
    try:
        from kernels._config import backend
        return backend()
    except Exception:           # no runtime importable: the grader would not have a GPU either
        return "cpu"


@functools.lru_cache(maxsize=None)
def _prompts(lesson: str) -> Dict[str, str]:
    from .. import config
    from .. import notebook as nbio
    cfg = config.lesson(lesson)
    path = config.rubric_path().resolve().parent / "solutions" / cfg["notebook"]
    if not path.exists():
        return {}
    nb = nbio.read(path)
    return {iid: nbio.template_prompt(nb, it.get("grade_id") or iid) for iid, it in cfg["items"].items()
            if it["kind"] == "rubric"}


def _item(lesson: str, item: str) -> Dict[str, Any]:
    from .. import config
    try:
        items = config.lesson(lesson)["items"]
    except config.RubricError as exc:
        raise LineError(str(exc)) from None
    if item not in items or items[item]["kind"] != "rubric":
        written = [i for i, it in items.items() if it["kind"] == "rubric"]
        raise LineError(f"lesson {lesson!r} has no written item {item!r} (written items: {', '.join(written)})")
    return items[item]


def _code_max(lesson: str) -> float:
    """Points of the lesson's code tests (every item that is not written): what ``code_points`` may hold."""
    from .. import config
    return float(sum(it["points"] for it in config.lesson(lesson)["items"].values() if it["kind"] != "rubric"))


def parse_line(raw: str, n: int) -> Dict[str, Any]:
    try:
        rec = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise LineError(f"not JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(rec, dict):
        raise LineError("expected a JSON object")
    for key in ("lesson", "item", "text"):
        if not isinstance(rec.get(key), str):
            raise LineError(f"field {key!r} missing or not a string")
    return rec


def score_record(rec: Dict[str, Any], backend: Optional[str]):
    it = _item(rec["lesson"], rec["item"])
    return score_answer(rec["text"], it["rubric"], float(it["points"]), item=rec["item"],
                        prompt=_prompts(rec["lesson"]).get(rec["item"]), backend=backend)


def _out(rec, s) -> Dict[str, Any]:
    d = {"lesson": rec["lesson"], "item": rec["item"], "points": s.points, "max_points": s.max_points,
         "vetoes": [{"id": v.id, "message": v.message, "evidence": v.evidence} for v in s.vetoes],
         "needs_review": s.needs_review, "review_reasons": list(s.review_reasons), "confidence": s.confidence,
         "claims": [c.to_dict() for c in s.claims], "message": s.message}
    if "id" in rec:
        d = {"id": rec["id"], **d}
    return d


class InputError(Exception):
    """The input file as a whole is unusable (exit 2)."""


def _lines(path: str):
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read {path}: {exc}") from None
    return [(n, ln) for n, ln in enumerate(text.splitlines(), 1) if ln.strip()]


def score_answers_main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="autograder score-answers",
                                description="Score written answers (JSON Lines in, JSON Lines out).")
    p.add_argument("file", help="JSON Lines file ('-' = stdin): {lesson, item, text} per line")
    p.add_argument("--backend", default=None, help="backend for the GPU-claim veto (default: this machine's)")
    a = p.parse_args(argv)
    backend = a.backend or current_backend()
    bad = 0
    try:
        lines = _lines(a.file)
    except InputError as exc:
        print(f"score-answers: {exc}", file=sys.stderr)
        return 2
    for n, raw in lines:
        try:
            rec = parse_line(raw, n)
            print(json.dumps(_out(rec, score_record(rec, backend)), ensure_ascii=False))
        except LineError as exc:
            bad += 1
            print(json.dumps({"line": n, "error": str(exc)}, ensure_ascii=False))
            print(f"score-answers: {a.file}:{n}: {exc}", file=sys.stderr)
    return 1 if bad else 0


# ----------------------------------------------------------------------------- rubric-eval

@dataclass
class Row:
    rec: Dict[str, Any]
    human: float
    auto: float
    max_points: float
    human_veto: bool
    auto_veto: bool
    score: Any


def evaluate(rows: List[Row], pass_score: float = 8.0, worst: int = 10) -> Dict[str, Any]:
    n = len(rows)
    exact = sum(r.auto == r.human for r in rows)
    within = sum(abs(r.auto - r.human) <= 1 for r in rows)

    def group(key):
        out = defaultdict(lambda: Counter())
        for r in rows:
            c = out[key(r)]
            c["n"] += 1
            c["exact"] += r.auto == r.human
            c["false_credit"] += r.auto > r.human
            c["false_denial"] += r.auto < r.human
            c["false_veto"] += r.auto_veto and not r.human_veto
            c["missed_veto"] += r.human_veto and not r.auto_veto
            c["review"] += bool(r.score.needs_review)
        return {k: dict(v) for k, v in sorted(out.items())}

    confusion = defaultdict(Counter)
    for r in rows:
        confusion[f"max {r.max_points:g}"][f"human {r.human:g} / auto {r.auto:g}"] += 1
    stuffed = [r for r in rows if r.rec.get("category") == "keyword_stuffing"]
    subs = defaultdict(list)
    for r in rows:
        if r.rec.get("student"):
            subs[(r.rec["lesson"], r.rec["student"])].append(r)
    flips, whole = [], 0
    for (lesson, student), rs in sorted(subs.items()):
        if len({r.rec["item"] for r in rs}) < 4:
            continue
        whole += 1
        code = float(rs[0].rec.get("code_points", 3))
        h_pass = code + sum(r.human for r in rs) >= pass_score and not any(r.human_veto for r in rs)
        a_pass = code + sum(r.auto for r in rs) >= pass_score and not any(r.auto_veto for r in rs)
        if h_pass != a_pass:
            flips.append({"lesson": lesson, "student": student, "human_passed": h_pass, "auto_passed": a_pass,
                          "human": code + sum(r.human for r in rs), "auto": code + sum(r.auto for r in rs)})
    bad = sorted((r for r in rows if r.auto != r.human or r.auto_veto != r.human_veto),
                 key=lambda r: (-abs(r.auto - r.human), -(r.auto_veto != r.human_veto)))[:worst]
    return {
        "answers": n, "exact": exact / n if n else 0.0, "within_one": within / n if n else 0.0,
        "mean_abs_error": sum(abs(r.auto - r.human) for r in rows) / n if n else 0.0,
        "stuffed": len(stuffed), "stuffed_above_1": sum(r.auto > 1 for r in stuffed),
        "false_vetoes": sum(r.auto_veto and not r.human_veto for r in rows),
        "missed_vetoes": sum(r.human_veto and not r.auto_veto for r in rows),
        "needs_review": sum(bool(r.score.needs_review) for r in rows),
        "submissions": whole, "pass_fail_flips": flips,
        "confusion": {k: dict(v) for k, v in confusion.items()},
        "by_category": group(lambda r: r.rec.get("category", "?")),
        "by_item": group(lambda r: f"{r.rec['lesson']}/{r.rec['item']}"),
        "worst": [{"id": r.rec.get("id"), "lesson": r.rec["lesson"], "item": r.rec["item"],
                   "category": r.rec.get("category"), "human": r.human, "auto": r.auto,
                   "human_veto": r.human_veto, "auto_veto": r.auto_veto, "text": r.rec["text"],
                   "note": r.rec.get("note", ""), "message": r.score.message} for r in bad],
    }


def _print(fig: Dict[str, Any], console) -> None:
    from rich.table import Table
    console.print(f"[bold]{fig['answers']} answers[/bold]: exact {fig['exact']:.1%}, within one "
                  f"{fig['within_one']:.1%}, mean |error| {fig['mean_abs_error']:.2f}; keyword-stuffed above 1: "
                  f"{fig['stuffed_above_1']}/{fig['stuffed']}; false vetoes {fig['false_vetoes']}, missed vetoes "
                  f"{fig['missed_vetoes']}; routed to review {fig['needs_review']}; pass/fail flips "
                  f"{len(fig['pass_fail_flips'])}/{fig['submissions']} submissions", highlight=False)
    for title, key in (("by category", "by_category"), ("by item", "by_item")):
        t = Table(title=title)
        for col in ("", "n", "exact", "false credit", "false denial", "false veto", "missed veto", "review"):
            t.add_column(col, justify="right" if col else "left")
        for k, c in fig[key].items():
            t.add_row(k, str(c["n"]), f"{c.get('exact', 0) / c['n']:.0%}", str(c.get("false_credit", 0)),
                      str(c.get("false_denial", 0)), str(c.get("false_veto", 0)), str(c.get("missed_veto", 0)),
                      str(c.get("review", 0)))
        console.print(t)
    for k, cells in fig["confusion"].items():
        console.print(f"confusion ({k}): " + ", ".join(f"{c}: {v}" for c, v in sorted(cells.items())), highlight=False)
    for f in fig["pass_fail_flips"]:
        console.print(f"flip {f['lesson']} {f['student']}: human {f['human']:g} "
                      f"({'pass' if f['human_passed'] else 'fail'}), auto {f['auto']:g} "
                      f"({'pass' if f['auto_passed'] else 'fail'})", highlight=False)
    for w in fig["worst"]:
        console.print(f"\n[bold]{w['id']}[/bold] {w['lesson']}/{w['item']} [{w['category']}] human {w['human']:g}"
                      f"{' veto' if w['human_veto'] else ''}, auto {w['auto']:g}{' veto' if w['auto_veto'] else ''}",
                      highlight=False)
        console.print("  " + w["text"], markup=False, highlight=False)
        if w["note"]:
            console.print("  human: " + w["note"], markup=False, highlight=False)
        console.print("  auto: " + w["message"], markup=False, highlight=False)


def load_rows(path: str, backend: Optional[str]) -> List[Row]:
    rows = []
    for n, raw in _lines(path):
        try:
            rec = parse_line(raw, n)
            if not isinstance(rec.get("human_score"), (int, float)):
                raise LineError("field 'human_score' missing or not a number")
            code = rec.get("code_points")
            if code is not None:
                top = _code_max(rec["lesson"])
                # the code explanation is the written item explain_code, scored here; counting it in
                # code_points as well would move every student's total by that point
                if not isinstance(code, (int, float)) or not 0 <= code <= top:
                    raise LineError(f"'code_points' must be the code tests' points, 0..{top:g} "
                                    f"(explain_code is scored as a written item), not {code!r}")
            s = score_record(rec, backend)
        except LineError as exc:
            raise InputError(f"{path}:{n}: {exc}") from None
        rows.append(Row(rec, float(rec["human_score"]), s.points, s.max_points, bool(rec.get("human_veto")),
                        bool(s.vetoes), s))
    return rows


def rubric_eval_main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="autograder rubric-eval",
                                description="Agreement of the written-answer scorer with human scores.")
    p.add_argument("file", help="JSON Lines with lesson, item, text, human_score (human_veto, category, student)")
    p.add_argument("--backend", default=None, help="backend for the GPU-claim veto (default: this machine's)")
    p.add_argument("--worst", type=int, default=10, help="how many disagreements to print verbatim")
    p.add_argument("--pass-score", type=float, default=8.0, help="pass line of a whole submission")
    p.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    a = p.parse_args(argv)
    try:
        fig = evaluate(load_rows(a.file, a.backend or current_backend()), a.pass_score, a.worst)
    except InputError as exc:
        print(f"rubric-eval: {exc}", file=sys.stderr)
        return 2
    if a.json:
        print(json.dumps(fig, ensure_ascii=False, indent=1))
    else:
        from rich.console import Console
        _print(fig, Console(width=160))
    return 0


COMMANDS = {"score-answers": score_answers_main, "rubric-eval": rubric_eval_main}


def main(argv: Optional[List[str]] = None) -> int:
    """``python -m autograder.answers.cli score-answers|rubric-eval FILE.jsonl ...``"""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in COMMANDS:
        print(f"usage: {' | '.join(COMMANDS)} FILE.jsonl [options]", file=sys.stderr)
        return 2
    return COMMANDS[argv[0]](argv[1:])


if __name__ == "__main__":
    sys.exit(main())
