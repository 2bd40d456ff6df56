"""The notebook-facing API.

    from autograder import lesson
    L = lesson.load("05_layernorm")     # banner: backend + device; recorded as an output
    mod = L.compile(LAYERNORM_CU)       # None (with a Chinese explanation) on compile errors
    L.run("layernorm", M=4, N=300)      # one launch of a rubric kernel recipe, compared to the reference
    L.grade("code_normal")              # hidden test cells: AssertionError with a Chinese summary
    L.hint("code")                      # next level of the 4-level ladder, recorded
    L.self_check()                      # grades the SAVED notebook like `autograder check`

Inside grading runs (``AUTOGRADER_RUNNING=1``) ``hint`` and ``self_check`` only
print a note, so executing a notebook never recurses into the grader.
"""
from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, Optional

import numpy as np

from . import cases, config, hints, messages
from .notebook import GRADE_MIME, HINT_MIME, LESSON_MIME


def grading_run() -> bool:
    return os.environ.get("AUTOGRADER_RUNNING", "") == "1"


def _ipython():
    try:
        from IPython import get_ipython
        return get_ipython()
    except Exception:
        return None


def _emit(mime: str, data: Dict[str, Any], text: str) -> None:
    """A display output carrying machine-readable data (plain print outside IPython)."""
    ip = _ipython()
    if ip is not None and getattr(ip, "display_pub", None) is not None:
        from IPython.display import display
        display({mime: data, "text/plain": text}, raw=True)
    else:
        print(text)


def _caller_namespace(depth: int = 2) -> Dict[str, Any]:
    ip = _ipython()
    if ip is not None and getattr(ip, "user_ns", None) is not None:
        return ip.user_ns
    frame = inspect.stack()[depth].frame
    return {**frame.f_globals, **frame.f_locals}


def _device_name(backend: str) -> str:
    if backend == "cupy":
        try:
            import cupy
            props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
            name = props["name"]
            return name.decode() if isinstance(name, bytes) else str(name)
        except Exception:
            return "GPU"
    import platform
    return f"CPU 模拟器（{platform.machine()}，{os.cpu_count()} 核）"


class Lesson:
    def __init__(self, lesson_id: str, cfg: Dict[str, Any], backend: str, device: str):
        self.id = lesson_id
        self.cfg = cfg
        self.backend = backend
        self.device = device
        self._modules: Dict[str, Any] = {}
        self.last_grade = None            # cases.ItemResult of the latest L.grade
        self.last_hint_level = None
        self.last_check_passed = None

    def __repr__(self):
        return f"<Lesson {self.id} backend={self.backend}>"

    # ------------------------------------------------------------------ compile / run
    def _source_id_for(self, src: str) -> Optional[str]:
        ns = _caller_namespace(3)
        for sid, spec in (self.cfg.get("sources") or {}).items():
            if ns.get(spec["var"]) is src:
                return sid
        srcs = list(self.cfg.get("sources") or {})
        return srcs[0] if len(srcs) == 1 else None

    def compile(self, src: str, source_id: Optional[str] = None):
        """RawModule for ``src`` with the lesson's name_expressions; None (explained) on CompileError."""
        from kernels import errors as kerr
        sid = source_id or self._source_id_for(src)
        spec = (self.cfg.get("sources") or {}).get(sid, {})
        try:
            mod = cases.compile_sources({**self.cfg, "sources": {sid or "_": spec}}, {sid or "_": src})[sid or "_"]
        except kerr.CompileError as exc:
            print("❌ " + messages.explain(exc))
            return None
        if sid:
            self._modules[sid] = mod
        print(f"✅ 编译成功（{self.backend}）")
        warnings = list(getattr(mod, "compile_warnings", None) or [])
        if warnings:   # e.g. an unused variable left from a half-finished edit
            print("⚠️ 编译器警告：")
            for line, sev, text in warnings[:6]:
                print(f"  第 {line} 行 {sev}: {text}")
        return mod

    def _codes(self, item_or_kernels, ns) -> Dict[str, str]:
        """``{source_id: CUDA text}`` from the caller's variables."""
        codes = {}
        for sid, spec in (self.cfg.get("sources") or {}).items():
            if sid in item_or_kernels:
                if spec["var"] not in ns or not isinstance(ns[spec["var"]], str):
                    raise AssertionError(f"找不到 CUDA 源码变量 {spec['var']}：请先运行定义它的单元格。")
                codes[sid] = ns[spec["var"]]
        return codes

    def _item_sources(self, item_id: str):
        kset = set()
        for case in self.cfg["items"][item_id].get("cases") or []:
            kset |= _all_kernels(case["kernel"])
        return {self.cfg["kernels"][k]["source"] for k in kset}

    def run(self, kernel: str, seed: Optional[int] = None, **params):
        """Launch one rubric kernel recipe on fresh inputs with ``params``, compare to the reference.

        Prints the verdict and returns ``{"passed", "max_error", "seed"}`` (None on a kernel error).
        """
        ns = _caller_namespace()
        if kernel not in (self.cfg.get("kernels") or {}):
            raise KeyError(f"本课没有 kernel 配方「{kernel}」；可用：{', '.join(self.cfg.get('kernels') or {})}")
        ks = self.cfg["kernels"][kernel]
        codes = self._codes({ks["source"]}, ns)
        seed = cases.new_seed() if seed is None else seed
        case = {"family": "run", "kernel": kernel, "params": params}
        try:
            mods = cases.compile_sources(self.cfg, codes)
            ok, err, kind, frag = cases.run_case(self.cfg, case, mods, np.random.default_rng(seed),
                                                 tuple(self.cfg["settings"].get("checks", ())))
        except Exception as exc:  # kernel diagnostics -> Chinese explanation, no traceback wall
            print("❌ " + messages.explain(exc))
            return None
        print(("✅ 与参考结果一致" if ok else "❌ " + frag) + (f"（最大误差 {err:.2e}）" if err is not None else ""))
        return {"passed": ok, "max_error": err, "seed": seed}

    # ------------------------------------------------------------------ grading
    def grade(self, item_id: str, seed: Optional[int] = None):
        """Run the item's case families against the caller's source variables."""
        items = self.cfg["items"]
        if item_id not in items or items[item_id]["kind"] != "cases":
            raise KeyError(f"评分项「{item_id}」不存在或不是代码用例项")
        if grading_run():   # the judge runs the hidden cases itself, outside this notebook's sandbox
            print(f"（评分运行中：评分项 {item_id} 的隐藏用例由评分器在沙箱外单独运行，结果见评分报告）")
            return None
        ns = _caller_namespace()
        codes = self._codes(self._item_sources(item_id), ns)
        res = cases.run_item(self.cfg, item_id, codes, seed=seed)
        rows = [f"  {'✅' if f.passed else '❌'} {f.family}" +
                (f"（最大误差 {f.max_error:.1e}）" if f.passed and f.max_error is not None else "")
                for f in res.families]
        text = f"评分项 {item_id}：" + ("通过" if res.passed else "未通过") + "\n" + "\n".join(rows)
        _emit(GRADE_MIME, res.to_dict(), text)
        self.last_grade = res
        if not res.passed:
            raise AssertionError(res.summary)
        # returns None so a test cell ending in L.grade(...) shows no Out[] value; see L.last_grade

    # ------------------------------------------------------------------ hints
    def hint(self, item: str, level: Optional[int] = None, notebook: Optional[str] = None):
        """Show the next level of ``item``'s hint ladder (or ``level``) and record it."""
        if grading_run():
            print("（评分运行中：不显示提示）")
            return None
        path = notebook_path(notebook, self.cfg)
        used = hints.read_sidecar(path).get(item, 0) if path else 0
        lvl, text = hints.next_level(self.cfg, item, used, level)
        if path:
            hints.record(path, self.id, item, lvl)
        total = len(hints.ladder(self.cfg, item))
        _emit(HINT_MIME, {"lesson": self.id, "item": item, "level": lvl}, hints.format_hint(item, lvl, text, total))
        self.last_hint_level = lvl

    # ------------------------------------------------------------------ self check
    def self_check(self, path: Optional[str] = None, timeout: Optional[int] = None):
        """Grade the saved notebook in a subprocess (save first!) and print the report."""
        if grading_run():
            print("（评分运行中：跳过自检）")
            return None
        nb = notebook_path(path, self.cfg)
        if not nb:
            print("❌ 找不到本笔记本的文件路径：请用 L.self_check('路径/05_layernorm.ipynb')。")
            return None
        cmd = [sys.executable, "-m", "autograder.cli", "check", str(nb), "--lesson", self.id]
        print(f"正在评分已保存的笔记本 {nb}（请确认已保存）……")
        env = dict(os.environ)
        env.pop("AUTOGRADER_SEED", None)
        root = str(Path(__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env,
                                  timeout=timeout or self.cfg["settings"]["time_limit_s"] + 60)
        except subprocess.TimeoutExpired:
            print("❌ 自检超时")
            return None
        print(proc.stdout.rstrip())
        if proc.returncode not in (0, 1):
            print(proc.stderr[-3000:])
        self.last_check_passed = proc.returncode == 0


def _all_kernels(spec) -> set:
    if isinstance(spec, str):
        return {spec}
    out = set()
    for x in spec:
        out |= _all_kernels(x if isinstance(x, str) else x["kernel"])
    return out


def notebook_path(explicit: Optional[str], cfg: Dict[str, Any]) -> Optional[Path]:
    """The notebook file this kernel runs: argument, JPY_SESSION_NAME, VS Code, or cwd/<notebook>."""
    cands = [explicit, os.environ.get("JPY_SESSION_NAME")]
    ip = _ipython()
    if ip is not None:
        cands.append((getattr(ip, "user_ns", {}) or {}).get("__vsc_ipynb_file__"))
    cands.append(os.path.join(os.getcwd(), cfg.get("notebook", "")))
    for c in cands:
        if c and str(c).endswith(".ipynb") and Path(c).exists():
            return Path(c).resolve()
    return None


def load(lesson_id: str) -> Lesson:
    """Load a lesson's grading config, print the backend banner, record it as an output."""
    import kernels
    cfg = config.lesson(lesson_id)
    backend = kernels.backend()
    device = _device_name(backend)
    title = cfg.get("title", lesson_id)
    note = "" if backend == "cupy" else "（无 GPU：在 CPU 模拟器上运行，结果语义与 CUDA 一致，但计时没有意义）"
    _emit(LESSON_MIME, {"lesson": lesson_id, "backend": backend, "device": device},
          f"{title}\n后端：{backend} · 设备：{device}{note}")
    return Lesson(lesson_id, cfg, backend, device)


__all__ = ["load", "Lesson", "notebook_path"]
