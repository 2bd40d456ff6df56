"""The ``autograder`` command.

    autograder check NOTEBOOK [--json] [--seed N] [--lesson ID] [--no-execute]
    autograder hint LESSON ITEM [--level N]
    autograder generate ...   -> autograder.generate.main(argv)
    autograder grade ...      -> autograder.batch.main(argv)
    autograder demo ...       -> autograder.batch.demo_main(argv)
    autograder score-answers FILE.jsonl / rubric-eval FILE.jsonl -> autograder.answers.cli

``check`` exits 0 when the notebook passes (score >= pass_score, no veto), else 1;
2 on usage / configuration errors.
"""
from __future__ import annotations

import argparse
import importlib
import json
import sys
from typing import List, Optional

# subcommands implemented elsewhere: name -> (module, function); each gets the remaining argv
DELEGATED = {
    "generate": ("autograder.generate", "main", "solutions/ -> lessons/ through nbgrader"),
    "grade": ("autograder.batch", "main", "instructor batch grading (nbgrader autograde + rubric)"),
    "demo": ("autograder.batch", "demo_main", "grade the bundled example submissions"),
    "score-answers": ("autograder.answers.cli", "score_answers_main", "score written answers (JSON Lines in and out)"),
    "rubric-eval": ("autograder.answers.cli", "rubric_eval_main", "agreement of the answer scorer with human scores"),
}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="autograder", description="CUDA course grader")
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("check", help="grade one notebook (learner copy or solutions/ notebook)")
    c.add_argument("notebook")
    c.add_argument("--json", action="store_true", help="print the result as JSON")
    c.add_argument("--seed", type=int, default=None, help="replay a run's random cases")
    c.add_argument("--lesson", default=None, help="lesson id (default: from the notebook)")
    c.add_argument("--no-execute", action="store_true", help="score the saved outputs without running")
    c.add_argument("--timeout", type=float, default=None, help="whole-notebook time limit, seconds")
    h = sub.add_parser("hint", help="show a hint of the 4-level ladder")
    h.add_argument("lesson")
    h.add_argument("item")
    h.add_argument("--level", type=int, default=None, help="1 概念区域, 2 具体方向, 3 关键局部, 4 完整答案")
    h.add_argument("--notebook", default=None, help="record usage next to this notebook")
    for name, (_, _, helptext) in DELEGATED.items():
        d = sub.add_parser(name, help=helptext, add_help=False)
        d.add_argument("rest", nargs=argparse.REMAINDER)
    return p


def _summary(result) -> dict:
    return {"score": result.score, "max_score": result.max_score, "passed": result.passed,
            "vetoes": result.vetoes,
            "items": [{"id": i["id"], "points": i["points"], "max_points": i["max_points"], "message": i["message"]}
                      for i in result.items],
            "seed": result.seed, "backend": result.backend, "hints_used": result.hints_used,
            "errors": result.errors, "notes": list(getattr(result, "notes", []) or [])}


def print_report(result, console=None) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table
    console = console or Console()
    t = Table(title=f"{result.lesson}：{result.score:g} / {result.max_score:g} 分（通过线 {result.pass_score:g}）")
    t.add_column("评分项")
    t.add_column("得分", justify="right")
    t.add_column("说明", overflow="fold")
    for it in result.items:
        ok = it["points"] >= it["max_points"]
        style = "green" if ok else ("yellow" if it["points"] > 0 else "red")
        t.add_row(it["id"], f"[{style}]{it['points']:g}/{it['max_points']:g}[/{style}]", escape(it["message"]))
    console.print(t)
    for it in result.items:
        for f in it.get("families") or []:
            if not f.get("passed"):
                console.print(f"  [red]✗[/red] {escape(str(f.get('reason')))}", markup=True, highlight=False)
    for v in result.vetoes:
        console.print(f"[bold red]一票否决[/bold red] {escape('[' + v['id'] + ']')} {escape(v['message'])}", highlight=False)
        if v.get("evidence"):
            console.print("    " + v["evidence"].replace("\n", "\n    "), markup=False, highlight=False)
    for e in result.errors:
        console.print("[red]运行错误：[/red]" + escape(e), highlight=False)
    for n in getattr(result, "notes", []) or []:
        console.print("[yellow]说明：[/yellow]" + escape(n), highlight=False)
    if result.hints_used:
        console.print("使用的提示：" + "，".join(f"{k} 第 {v} 级" for k, v in result.hints_used.items()), highlight=False)
    verdict = "[bold green]通过[/bold green]" if result.passed else "[bold red]未通过[/bold red]"
    console.print(f"结果：{verdict}（seed={result.seed}，后端 {result.backend or '未记录'}）")


def cmd_check(a) -> int:
    from .check import grade_notebook
    from .config import RubricError
    from .notebook import NotebookReadError
    try:
        result = grade_notebook(a.notebook, a.lesson, seed=a.seed, execute=not a.no_execute, timeout=a.timeout)
    except (RubricError, FileNotFoundError) as exc:
        print(f"autograder: {exc}", file=sys.stderr)
        return 2
    except NotebookReadError as exc:   # empty file, not JSON, JSON that is not a notebook
        print(f"autograder: {exc}", file=sys.stderr)
        return 2
    except IsADirectoryError:
        print(f"autograder: {a.notebook} 是文件夹，不是笔记本文件（.ipynb）", file=sys.stderr)
        return 2
    except ValueError as exc:          # not a notebook (nbformat's NotJSONError is a ValueError)
        print(f"autograder: {a.notebook}: 不是有效的笔记本文件（{type(exc).__name__}: {str(exc)[:200]}）", file=sys.stderr)
        return 2
    if a.json:
        print(json.dumps(_summary(result), ensure_ascii=False, indent=1))
    else:
        print_report(result)
    return 0 if result.passed else 1


def cmd_hint(a) -> int:
    from . import config, hints
    try:
        cfg = config.lesson(a.lesson)
        used = hints.read_sidecar(a.notebook).get(a.item, 0) if a.notebook else 0
        level, text = hints.next_level(cfg, a.item, used, a.level)
    except (KeyError, config.RubricError) as exc:
        print(f"autograder: {exc.args[0] if exc.args else exc}", file=sys.stderr)
        return 2
    if a.notebook:
        hints.record(a.notebook, a.lesson, a.item, level)
    print(hints.format_hint(a.item, level, text, len(hints.ladder(cfg, a.item))))
    return 0


def _delegate(name: str, argv: List[str]) -> int:
    module, func, _ = DELEGATED[name]
    try:
        fn = getattr(importlib.import_module(module), func)
    except (ImportError, AttributeError) as exc:
        print(f"autograder {name}: not available ({module}.{func}: {exc})", file=sys.stderr)
        return 2
    return int(fn(argv) or 0)


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in DELEGATED:
        return _delegate(argv[0], argv[1:])
    a = _parser().parse_args(argv)
    return {"check": cmd_check, "hint": cmd_hint}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
