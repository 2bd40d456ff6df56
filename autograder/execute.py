"""Execute a notebook in its own process with a wall-clock limit.

The parent never runs notebook code: a child ``python -m autograder.execute``
runs nbclient (which starts its own kernel) and saves the notebook after every
cell, so a hang, a crash or a kernel death still leaves the cells executed so
far for grading.  The whole child session is killed past the limit.
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Optional

import nbformat


@dataclass
class Execution:
    nb: nbformat.NotebookNode          # executed (possibly partially)
    error: Optional[str]               # Chinese reason when the run did not finish normally
    seconds: float


def run(nb, *, cwd=None, time_limit_s: float = 240, cell_timeout_s: int = 120,
        env: Optional[Dict[str, str]] = None) -> Execution:
    """Run ``nb`` (a NotebookNode) in a child process; never raises for notebook problems."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="autograder-exec-") as tmp:
        src, out, log = Path(tmp, "in.ipynb"), Path(tmp, "out.ipynb"), Path(tmp, "child.log")
        nbformat.write(nb, str(src))
        child_env = dict(os.environ)
        child_env.update(env or {})
        child_env["AUTOGRADER_RUNNING"] = "1"
        # the kernel runs in the notebook's folder: make this checkout importable there too
        root = str(Path(__file__).resolve().parent.parent)
        child_env["PYTHONPATH"] = os.pathsep.join(p for p in (root, child_env.get("PYTHONPATH", "")) if p)
        argv = [sys.executable, "-m", "autograder.execute", str(src), str(out),
                "--cell-timeout", str(int(cell_timeout_s)), "--cwd", str(cwd or tmp)]
        error = None
        with open(log, "wb") as logf:
            proc = subprocess.Popen(argv, stdout=logf, stderr=subprocess.STDOUT, env=child_env,
                                    start_new_session=True, cwd=str(Path(__file__).resolve().parent.parent))
            try:
                rc = proc.wait(timeout=time_limit_s)
                if rc == 3:
                    error = f"有单元格运行超过 {cell_timeout_s} 秒（单元格时间限制），后续单元格没有运行。"
                elif rc == 4:
                    error = ("Python 内核意外退出（代码调用了 os._exit()/exit 一类的退出函数，或段错误、内存耗尽），"
                             "后续单元格没有运行。")
                elif rc != 0:
                    tail = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-3:]
                    error = f"执行笔记本的进程异常退出（退出码 {rc}）：" + " / ".join(tail)[-300:]
            except subprocess.TimeoutExpired:
                _kill(proc)
                error = f"整本笔记本运行超过 {time_limit_s:g} 秒的时间限制，已被终止（可能有死循环或过慢的单元格）。"
        executed = nb
        if out.exists():
            try:
                executed = nbformat.read(str(out), as_version=4)
            except Exception:  # torn write during the kill: fall back to the unexecuted notebook
                pass
        if error:
            culprit = _unfinished_cell(executed)
            if culprit:
                error += f"出问题的是{culprit}。"
        return Execution(executed, error, round(time.monotonic() - started, 2))


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


def _kill(proc: subprocess.Popen) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=3)
            return
        except subprocess.TimeoutExpired:
            continue


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


def _child(src: str, out: str, cell_timeout: int, cwd: str) -> int:
    from nbclient import NotebookClient
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    nb = nbformat.read(src, as_version=4)
    for c in nb.cells:
        if c.cell_type == "code":
            c.outputs, c.execution_count = [], None

    def save(**_):
        tmp = out + ".tmp"
        nbformat.write(nb, tmp)
        os.replace(tmp, out)

    import shutil
    kernel_name, spec_root = _own_kernelspec(Path(out).resolve().parent)
    client = NotebookClient(nb, timeout=cell_timeout, kernel_name=kernel_name, allow_errors=True,
                            resources={"metadata": {"path": cwd}}, on_cell_executed=save)
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
    a = p.parse_args(argv)
    return _child(a.src, a.out, a.cell_timeout, a.cwd)


if __name__ == "__main__":
    sys.exit(main())
