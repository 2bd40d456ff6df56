"""The ``autograder`` command.

    autograder check NOTEBOOK [--json] [--seed N] [--lesson ID] [--no-execute]
    autograder hint LESSON ITEM [--level N]
    autograder generate ...   -> autograder.generate.main(argv)
    autograder grade ...      -> autograder.batch.main(argv)
    autograder export ...     -> autograder.batch.export_main(argv)
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
    "grade": ("autograder.batch", "main", "instructor batch grading (sandboxed, inside nbgrader, resumable)"),
    "export": ("autograder.batch", "export_main", "the gradebook as a Canvas or Moodle CSV"),
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
    c.add_argument("--no-execute", action="store_true",
                   help="accepted for old scripts: the verdict never runs the notebook")
    c.add_argument("--timeout", type=float, default=None, help="time limit for running test cells, seconds")
    c.add_argument("--course-root", default=None, help="folder with grading_rubric.yaml, solutions/, lessons/")
    c.add_argument("--sandbox", choices=("auto", "require", "off"), default=None,
                   help="bubblewrap sandbox for the learner's code (default auto: use it where available)")
    h = sub.add_parser("hint", help="show a hint of the 4-level ladder")
    h.add_argument("lesson")
    h.add_argument("item")
    h.add_argument("--level", type=int, default=None, help="1 概念区域, 2 具体方向, 3 关键局部, 4 完整答案")
    h.add_argument("--notebook", default=None, help="record usage next to this notebook")
    for name, (_, _, helptext) in DELEGATED.items():
        d = sub.add_parser(name, help=helptext, add_help=False)
        d.add_argument("rest", nargs=argparse.REMAINDER)
    return p


def print_report(verdict, console=None) -> None:
    """The verdict as the learner sees it in a terminal (also what ``L.self_check()`` prints)."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table
    console = console or Console()
    t = Table(title=f"{verdict.lesson}：{verdict.score:g} / {verdict.max_score:g} 分（通过线 {verdict.pass_score:g}）")
    t.add_column("评分项")
    t.add_column("得分", justify="right")
    t.add_column("说明", overflow="fold")
    for it in verdict.items:
        ok = it.points >= it.max_points
        style = "green" if ok else ("yellow" if it.points > 0 else "red")
        t.add_row(escape(it.item), f"[{style}]{it.points:g}/{it.max_points:g}[/{style}]", escape(it.message))
    console.print(t)
    for v in verdict.vetoes:
        console.print(f"[bold red]一票否决[/bold red] {escape('[' + v.id + ']')} {escape(v.message)}", highlight=False)
        if v.evidence:
            console.print("    " + v.evidence.replace("\n", "\n    "), markup=False, highlight=False)
    for e in verdict.errors:
        console.print("[red]无法评分：[/red]" + escape(e), highlight=False)
    for n in verdict.notes:
        console.print("[yellow]说明：[/yellow]" + escape(n), highlight=False)
    if verdict.hints_used:
        console.print("使用的提示：" + "，".join(f"{k} 第 {v} 级" for k, v in verdict.hints_used.items()), highlight=False)
    review = verdict.needs_review
    if review:
        console.print("待老师复核的题目：" + "、".join(review) + "（当前分数是建议分）", highlight=False)
    status = "[bold green]通过[/bold green]" if verdict.passed else "[bold red]未通过[/bold red]"
    console.print(f"结果：{status}（seed={verdict.seed}，后端 {verdict.backend or '未记录'}）")


def cmd_check(a) -> int:
    from .check import grade_notebook
    from .config import RubricError
    from .notebook import NotebookReadError
    from .settings import CourseLayout, GradingSettings, LayoutError
    try:
        layout = CourseLayout.resolve(a.course_root)
        settings = GradingSettings.resolve(flags={"sandbox": a.sandbox})
        verdict = grade_notebook(a.notebook, a.lesson, seed=a.seed, timeout=a.timeout, layout=layout,
                                 settings=None if a.sandbox is None else settings)
    except (RubricError, LayoutError, FileNotFoundError) as exc:
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
        print(verdict.to_json(indent=1))
    else:
        print_report(verdict)
    return 0 if verdict.passed else 1


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
