"""Execute a notebook for feedback, in a sandbox, with limits on time, memory, processes and output.

``run`` writes the notebook into a private directory and starts ``python -m autograder.execute`` there
inside ``autograder.sandbox``: nbclient and the Jupyter kernel both run sandboxed (no network, no host files
beyond the Python environment, a ``released`` view of the rubric without hidden cases or answer rubrics).
The child saves the notebook every second or so (not after every cell: 5,000 cells must not mean 5,000
writes), truncates long outputs, and the parent reads the result size-capped. A hang, a crash or a kernel
death still leaves the cells executed so far. Nothing here decides a score (``autograder.judge`` does).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Optional

if __name__ == "__main__":
    # jsonschema builds an IRI grammar at import when rfc3987_syntax is installed (~2 s); a notebook is never
    # validated against IRI formats, so the sandboxed child does without it.
    sys.modules.setdefault("rfc3987_syntax", None)

import nbformat  # noqa: E402

STARTUP_S = (5, 20)     # sandbox + kernel start-up on top of the notebook's own limit: a quarter of it, 5..20 s
SAVE_EVERY_S = 1.0
TRUNCATED = "\n……（输出过长，已截断）\n"


@dataclass
class Execution:
    nb: nbformat.NotebookNode          # executed (possibly partially)
    error: Optional[str]               # Chinese reason when the run did not finish normally
    seconds: float
    sandboxed: Optional[bool] = None


def run(nb, *, lesson: Optional[dict] = None, settings=None, layout=None, work=None, backend: Optional[str] = None,
        cwd=None, time_limit_s: Optional[float] = None, cell_timeout_s: Optional[int] = None,
        env: Optional[Dict[str, str]] = None) -> Execution:
    """Run ``nb`` (a NotebookNode) sandboxed; never raises for notebook problems.

    ``lesson``: the lesson entry (``config.lesson``) whose released view the notebook may read;
    ``work``: the private directory to use (default: a fresh one, removed afterwards)."""
    from . import config, sandbox
    from .sandbox import core as sbx
    from .settings import GradingSettings, machine_backend
    settings = settings or GradingSettings()
    time_limit_s = float(time_limit_s or settings.time_limit_s)
    cell_timeout_s = int(cell_timeout_s or settings.cell_timeout_s)
    started = time.monotonic()
    own = work is None
    work = Path(work) if work is not None else sbx.prepare_workdir(prefix="exec-")
    work.mkdir(parents=True, exist_ok=True)
    try:
        (work / "nb").mkdir(exist_ok=True)
        nb = without_judged_hidden_tests(nb, lesson)
        nbformat.write(nb, str(work / "in.ipynb"))
        child_env = {"AUTOGRADER_RUNNING": "1", "KERNELS_CHECK": "", "KERNELS_CACHE_DIR": "{work}/cache",
                     "KERNELS_BACKEND": backend or machine_backend(settings),
                     "KERNELS_TIMEOUT": str(settings.launch_timeout_s), "MPLBACKEND": "Agg",
                     "MPLCONFIGDIR": "{work}/home/.mpl", "IPYTHONDIR": "{work}/home/.ipython",
                     "JUPYTER_RUNTIME_DIR": "{work}/home/.jupyter-runtime", "JUPYTER_CONFIG_DIR": "{work}/home/.jupyter",
                     "JUPYTER_DATA_DIR": "{work}/home/.jupyter-data", "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
        if lesson is not None:
            import yaml
            from .settings import CourseLayout
            view = config.released_view(config.load((layout or CourseLayout.resolve()).rubric), lesson["id"])
            (work / "grading_rubric.yaml").write_text(yaml.safe_dump(view, allow_unicode=True), encoding="utf-8")
            child_env["AUTOGRADER_RUBRIC"] = "{work}/grading_rubric.yaml"
        child_env.update(env or {})
        ro = {}
        if child_env["KERNELS_BACKEND"] == "cpu":
            from .judge.executor import trusted_runtime_files
            ro = trusted_runtime_files()
        argv = [sys.executable, "-m", "autograder.execute", "in.ipynb", "out.ipynb", "--cell-timeout",
                str(cell_timeout_s), "--cwd", "nb", "--max-output-kb", str(settings.max_output_kb),
                "--max-notebook-mb", str(settings.max_notebook_mb)]
        slack = max(STARTUP_S[0], min(STARTUP_S[1], time_limit_s / 4))
        out = sandbox.run(argv, work, limits=settings.limits(time_limit_s + slack), env=child_env,
                          mode=settings.sandbox, ro_files=ro,
                          devices=sbx.gpu_devices() if child_env["KERNELS_BACKEND"] == "cupy" else ())
        error = None
        if out.killed == "time":
            error = f"整本笔记本运行超过 {time_limit_s:g} 秒的时间限制，已被终止（可能有死循环或过慢的单元格）。"
        elif out.killed == "memory":
            error = f"笔记本运行占用内存超过 {settings.memory_mb} MB，已被终止（可能分配了过大的数组）。"
        elif out.killed == "disk":
            error = "笔记本运行写出的文件过多或过大（超过沙箱的磁盘限额），已被终止。"
        elif out.rc == 3:
            error = f"有单元格运行超过 {cell_timeout_s} 秒（单元格时间限制），后续单元格没有运行。"
        elif out.rc == 4:
            error = ("Python 内核意外退出（代码调用了 os._exit()/exit 一类的退出函数，或段错误、内存耗尽），"
                     "后续单元格没有运行。")
        elif out.rc != 0:
            tail = out.stderr.strip().splitlines()[-3:]
            error = f"执行笔记本的进程异常退出（退出码 {out.rc}）：" + " / ".join(tail)[-300:]
        executed = nb
        raw = sbx.read_result(work / "out.ipynb", settings.max_notebook_mb)
        if raw is None and (work / "out.ipynb").exists():
            error = (error or "") + f"运行后的笔记本超过 {settings.max_notebook_mb:g} MB（输出过多），没有保留。"
        elif raw is not None:
            try:
                executed = nbformat.reads(raw.decode("utf-8"), as_version=4)
            except Exception:       # torn write during the kill, or not a notebook at all
                pass
        if error:
            culprit = _unfinished_cell(executed)
            if culprit:
                error += f"出问题的是{culprit}。"
        return Execution(executed, error, round(time.monotonic() - started, 2), out.sandboxed)
    finally:
        if own:
            sbx.reclaim(work)


def without_judged_hidden_tests(nb, lesson: Optional[dict], solution=None):
    """A copy of ``nb`` whose ``cases`` items' test cells carry their visible tests and the note ``L.grade``
    prints in a grading run instead of the hidden tests nbgrader restores (``### BEGIN HIDDEN TESTS``
    blocks; ``solution`` finds them where the restore dropped the markers). Those hidden cases run in the
    judge's own sandbox; here the block would do nothing but let the learner's code read it from the
    kernel's input history. ``test`` items, scored from this run, keep theirs."""
    import copy

    from . import markers
    from . import notebook as nbio
    if lesson is None:
        return nb
    from .judge.scorers import grade_id
    judged = {grade_id(iid, it): iid for iid, it in lesson.get("items", {}).items() if it.get("kind") == "cases"}
    sol = nbio.cells_by_grade_id(solution) if solution is not None else {}
    out = None
    for k, c in enumerate(nb.cells):
        iid = judged.get(nbio.grade_id(c) or "")
        if c.cell_type != "code" or iid is None:
            continue
        if markers.hidden_tests(c.source):
            visible = markers.strip_hidden_tests(c.source)
        elif iid and nbio.grade_id(c) in sol and markers.hidden_tests(sol[nbio.grade_id(c)].source):
            visible = nbio.fill_source(markers.strip_hidden_tests(sol[nbio.grade_id(c)].source))
        else:
            continue
        out = out or copy.deepcopy(nb)
        note = f"（评分运行中：评分项 {iid} 的隐藏用例由评分器在沙箱外单独运行，结果见评分报告）"
        out.cells[k].source = visible.rstrip() + f"\nprint({note!r})\n"
    return out if out is not None else nb


def _unfinished_cell(nb) -> str:
    """Where the run stopped: "第 k 个单元格（first line）", the first non-empty code cell that has
    not finished.  A dying kernel is sometimes only noticed at the NEXT cell, so a previous cell
    that ran but printed nothing is named too."""
    def label(i, c):
        first = next((ln.strip() for ln in c.source.splitlines() if ln.strip()), "")[:60]
        return f"第 {i + 1} 个单元格（{first}）"
    prev = None
    for i, c in enumerate(nb.cells):
        if c.cell_type != "code" or not c.source.strip():
            continue
        if c.get("execution_count") is None:
            if prev is not None and not prev[1].get("outputs"):
                return f"{label(i, c)}，或它之前刚运行过的{label(*prev)}"
            return label(i, c)
        prev = (i, c)
    return ""


def _own_kernelspec(where: Path):
    """A kernelspec running THIS interpreter, so a user/system-wide "python3" spec cannot
    send the notebook to another environment without the course packages."""
    import json
    root = Path(tempfile.mkdtemp(prefix="kspec-", dir=str(where)))   # inside the parent's temp dir
    spec = root / "kernels" / "autograder-python"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "autograder", "language": "python"}), encoding="utf-8")
    os.environ["JUPYTER_PATH"] = os.pathsep.join(p for p in (str(root), os.environ.get("JUPYTER_PATH", "")) if p)
    return "autograder-python", root


def _limit_outputs(cell, budget: dict, cell_kb: int) -> None:
    """Cut one cell's outputs to ``cell_kb`` and the notebook's to ``budget['left']`` bytes."""
    kept, used = [], 0
    for o in cell.get("outputs") or []:
        size = len(json.dumps(o, ensure_ascii=False))
        room = min(cell_kb * 1024 - used, budget["left"])
        if size <= room:
            kept.append(o)
            used += size
            budget["left"] -= size
            continue
        if o.get("output_type") == "stream" and room > 200:
            o["text"] = str(o.get("text", ""))[:room - 100] + TRUNCATED
            kept.append(o)
        elif room > 100:
            kept.append(nbformat.v4.new_output("stream", name="stderr", text=TRUNCATED))
        budget["left"] -= min(room, size)
        break
    cell.outputs = kept


def _child(src: str, out: str, cell_timeout: int, cwd: str, cell_kb: int = 256, total_mb: float = 20) -> int:
    from nbclient import NotebookClient
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    nb = nbformat.read(src, as_version=4)
    for c in nb.cells:
        if c.cell_type == "code":
            c.outputs, c.execution_count = [], None
    budget = {"left": int(total_mb * 2**20 * 0.8)}
    last = [0.0]

    def save(**_):
        tmp = out + ".tmp"
        nbformat.write(nb, tmp)
        os.replace(tmp, out)
        last[0] = time.monotonic()

    def executed(cell=None, **_):
        if cell is not None:
            _limit_outputs(cell, budget, cell_kb)
        if time.monotonic() - last[0] > SAVE_EVERY_S:
            save()

    import shutil
    Path(cwd).mkdir(parents=True, exist_ok=True)
    kernel_name, spec_root = _own_kernelspec(Path(out).resolve().parent)
    client = NotebookClient(nb, timeout=cell_timeout, kernel_name=kernel_name, allow_errors=True,
                            resources={"metadata": {"path": cwd}}, on_cell_executed=executed)
    try:
        client.execute()
    except CellTimeoutError as exc:
        save()
        print(f"cell timeout: {exc}", file=sys.stderr)
        return 3
    except DeadKernelError as exc:
        save()
        print(f"kernel died: {exc}", file=sys.stderr)
        return 4
    finally:
        shutil.rmtree(spec_root, ignore_errors=True)
    save()
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="execute a notebook (child process of autograder.execute.run)")
    p.add_argument("src")
    p.add_argument("out")
    p.add_argument("--cell-timeout", type=int, default=120)
    p.add_argument("--cwd", default=".")
    p.add_argument("--max-output-kb", type=int, default=256, help="outputs kept per cell")
    p.add_argument("--max-notebook-mb", type=float, default=20, help="outputs kept per notebook")
    a = p.parse_args(argv)
    return _child(a.src, a.out, a.cell_timeout, a.cwd, a.max_output_kb, a.max_notebook_mb)


if __name__ == "__main__":
    sys.exit(main())
