"""``autograder demo``: the course's main job, end to end on lesson 5.

1. build the student notebooks (solutions/ -> lessons/ through nbgrader), and
   rebuild examples/submissions if solutions/05 changed since;
2. grade the bundled example submissions (examples/submissions/) in a batch
   (each sandboxed, recorded through nbgrader's autograde pipeline, 2 worker processes);
3. print the gradebook and compare it with examples/expected.json.
"""
from __future__ import annotations

import json
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
LESSON = "05_layernorm"


def compare_expected(result, expected: dict) -> list[str]:
    """Differences between a BatchResult and examples/expected.json (empty = as expected)."""
    problems = []
    for name, exp in expected["submissions"].items():
        row = next((r for r in result.rows if r.student == name), None)
        if row is None:
            problems.append(f"{name}: not graded")
            continue
        got = {"items": {k: float(v) for k, v in row.scores.items()}, "total": float(row.total),
               "passed": row.passed, "vetoes": sorted(row.vetoes), "hints": sorted(row.hints)}
        want = {"items": {k: float(v) for k, v in exp["items"].items()}, "total": float(exp["total"]),
                "passed": exp["passed"], "vetoes": sorted(exp["vetoes"]), "hints": sorted(exp["hints"])}
        for key in want:
            if got[key] != want[key]:
                problems.append(f"{name}: {key} = {got[key]}, expected {want[key]}")
        if row.status != "graded":
            problems.append(f"{name}: status {row.status} ({row.reason})")
    return problems


def _refresh_examples(root: Path) -> None:
    """Rebuild examples/submissions when solutions/05 changed since they were built
    (they are derived from it, like lessons/; a stale copy would not match the
    gradebook's cells)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("build_examples", root / "examples" / "build_examples.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if module.main(["--check"]) != 0:
        print("    examples/submissions 已过期，按当前 solutions/ 重新生成")
        module.main([])


def run_demo(root=None, out_dir=None, workers: int = 2, seed: int | None = None, progress: bool = True):
    """Build lessons/, grade examples/submissions for lesson 5, print the gradebook.
    Returns (BatchResult, list of differences from examples/expected.json)."""
    from .batch import grade_batch
    from .generate import generate_all

    root = Path(root or REPO_ROOT).resolve()
    out_dir = Path(out_dir or root / "out" / "demo")
    print("1/3 生成学生笔记本（solutions/ -> lessons/，nbgrader generate_assignment）")
    report = generate_all(root)
    for p in report.written + report.unchanged:
        print(f"    {p.relative_to(root)}")
    _refresh_examples(root)
    print(f"2/3 批量评分 examples/submissions（{workers} 个进程）")
    from .settings import CourseLayout
    result = grade_batch(root / "examples" / "submissions", LESSON, out_dir, workers=workers, seed=seed,
                         progress=progress, layout=CourseLayout.resolve(root), force=True)
    expected = json.loads((root / "examples" / "expected.json").read_text(encoding="utf-8"))
    problems = compare_expected(result, expected)
    print("3/3 与 examples/expected.json 对照：" + ("全部一致" if not problems else "有差异"))
    for p in problems:
        print(f"    {p}")
    return result, problems


def main(argv=None) -> int:
    import argparse

    p = argparse.ArgumentParser(prog="autograder demo", description=__doc__.splitlines()[0])
    p.add_argument("--out", default=None, help="output folder (default out/demo)")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)
    _, problems = run_demo(out_dir=args.out, workers=args.workers, seed=args.seed, progress=not args.no_progress)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
