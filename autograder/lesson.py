"""The notebook-facing API (cell conventions: /work/coord/notebook_conventions.md).

    from autograder import lesson
    L = lesson.load("04_rmsnorm")       # banner; installs %%cuda, the failure panels, the extension link
    %%cuda RMSNORM_CU                   # (a cell) the CUDA source, stored in RMSNORM_CU
    mod = L.compile(RMSNORM_CU)         # None, with the student's lines and a caret, on compile errors
    L.require_compiled(rmsnorm)         # "先补齐填空" panel (StudentError) when it did not compile
    L.assert_close(y, ref, atol=.., rtol=..)   # visible check: first mismatching index, expected vs got
    L.check("code") / L.check("q1")     # one item now, on what is on screen, with the grader's engine
    L.hints()                           # hint buttons (a click shows the next level; Run All never does)
    L.self_check()                      # save, then grade the saved notebook like `autograder check`
    L.run("rmsnorm", M=4, N=300)        # one launch of a rubric recipe on fresh inputs
    L.grade("code_normal")              # hidden test cells (grading runs): AssertionError on failure

Inside grading runs (``AUTOGRADER_RUNNING=1``) hints, checks and the self-check only print a
note, so executing a notebook never recurses into the grader.
"""
from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

import numpy as np

from . import cases, config, cuda_cell, display, frontend, hints, messages
from . import notebook as nbio
from .display import StudentError
from .notebook import GRADE_MIME, HINT_MIME, LESSON_MIME
from .verdict import ItemScore

SAVE_WAIT_S = 20.0      # how long the self-check waits for the extension's save to reach the disk


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
        from IPython.display import display as ipy_display
        ipy_display({mime: data, "text/plain": text}, raw=True)
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


# ----------------------------------------------------------------------------- the grading engine, one seam

def check_item(lesson_id: str, item_id: str, payload, *, seed: Optional[int] = None) -> ItemScore:
    """Score one item with the instructor's engine (``autograder.judge.check_item``): ``payload`` is
    ``{source_id: CUDA}`` for a code item, the answer text for a written one."""
    from .judge import check_item as judge_check_item
    return judge_check_item(lesson_id, item_id, payload, seed=seed)


class Lesson:
    def __init__(self, lesson_id: str, cfg: Dict[str, Any], backend: str, device: str):
        self.id = lesson_id
        self.cfg = cfg
        self.backend = backend
        self.device = device
        self._modules: Dict[str, Any] = {}
        self._compiled: Dict[str, str] = {}     # source id -> the CUDA text last compiled
        self.last_grade = None            # cases.ItemResult of the latest L.grade
        self.last_check: Dict[str, ItemScore] = {}
        self.last_hint_level = None
        self.last_check_passed = None
        self.last_self_check: Optional[Dict[str, Any]] = None

    def __repr__(self):
        return f"<Lesson {self.id} backend={self.backend}>"

    # ------------------------------------------------------------------ sources
    def _source_id_for(self, src: str) -> Optional[str]:
        ns = _caller_namespace(3)
        for sid, spec in (self.cfg.get("sources") or {}).items():
            if ns.get(spec["var"]) is src:
                return sid
        srcs = list(self.cfg.get("sources") or {})
        return srcs[0] if len(srcs) == 1 else None

    def _codes(self, source_ids, ns) -> Dict[str, str]:
        """``{source_id: CUDA text}`` from the kernel's variables (what the CUDA cells last stored)."""
        codes = {}
        for sid, spec in (self.cfg.get("sources") or {}).items():
            if sid in source_ids:
                if spec["var"] not in ns or not isinstance(ns[spec["var"]], str):
                    raise StudentError(f"找不到 CUDA 源码 {spec['var']}：请先运行 `%%cuda {spec['var']}` 那个单元格。",
                                       title="先运行 CUDA 单元格")
                codes[sid] = ns[spec["var"]]
        return codes

    def _item_sources(self, item_id: str):
        kset = set()
        for case in self.cfg["items"][item_id].get("cases") or []:
            kset |= _all_kernels(case["kernel"])
        return {self.cfg["kernels"][k]["source"] for k in kset}

    # ------------------------------------------------------------------ compile / run
    def compile(self, src: str, source_id: Optional[str] = None):
        """RawModule for ``src`` with the lesson's name_expressions; None (explained) when it cannot compile."""
        from kernels import errors as kerr
        sid = source_id or self._source_id_for(src)
        spec = (self.cfg.get("sources") or {}).get(sid, {})
        blanks = messages.blank_problems(src)
        if blanks:
            display.show_problems("先补齐填空", blanks, src, messages.compile_advice(blanks), kind="todo")
            self._not_compiled = None
            return None
        try:
            mod = cases.compile_sources({**self.cfg, "sources": {sid or "_": spec}}, {sid or "_": src})[sid or "_"]
        except kerr.CompileError as exc:
            problems = messages.compile_problems(exc, src)
            display.show_problems("编译失败", problems, src, messages.compile_advice(problems))
            self._not_compiled = "编译失败（" + "；".join(
                (f"第 {p.line} 行：" if p.line else "") + p.text for p in problems) + "）"
            return None
        self._not_compiled = None
        if sid:
            self._modules[sid] = mod
            self._compiled[sid] = src
        warnings = list(getattr(mod, "compile_warnings", None) or [])
        lines = [f"后端 {self.backend}。下一步：运行下面的检查单元格。"]
        lines += [f"编译器警告 第 {line} 行：{messages.compiler_text_zh(text).replace('编译器报告：', '')}"
                  for line, _sev, text in warnings[:6]]
        display.show_panel("ok" if not warnings else "warn", "编译成功", lines)
        return mod

    def require_compiled(self, fn, what: str = "kernel") -> None:
        """Raise the "先补齐填空" panel when ``fn`` (a compiled kernel) is None."""
        if fn is None:
            why = getattr(self, "_not_compiled", None)
            if why:     # it compiled with an error: say which, not "fill the blank"
                raise StudentError(f"{what} 还没有编译成功——{why}。改好 CUDA 单元格后，再依次运行 CUDA 单元格和编译单元格。",
                                   title="编译没有通过")
            raise StudentError(f"{what} 还没有编译成功：先补齐 CUDA 单元格里的填空（______），"
                               "再依次运行 CUDA 单元格和编译单元格。", title="先补齐填空")

    def run(self, kernel: str, seed: Optional[int] = None, **params):
        """Launch one rubric kernel recipe on fresh inputs with ``params``, compare to the reference.

        Shows the verdict and returns ``{"passed", "max_error", "seed"}`` (None on a kernel error).
        """
        from kernels import errors as kerr
        ns = _caller_namespace()
        if kernel not in (self.cfg.get("kernels") or {}):
            raise KeyError(f"本课没有 kernel 配方「{kernel}」；可用：{', '.join(self.cfg.get('kernels') or {})}")
        ks = self.cfg["kernels"][kernel]
        codes = self._codes({ks["source"]}, ns)
        seed = cases.new_seed() if seed is None else seed
        case = {"family": "run", "kernel": kernel, "params": params}
        evidence: Dict[str, Any] = {}
        try:
            mods = cases.compile_sources(self.cfg, codes)
            ok, err, kind, frag = cases.run_case(self.cfg, case, mods, np.random.default_rng(seed),
                                                 tuple(self.cfg["settings"].get("checks", ())), evidence)
        except kerr.KernelError as exc:
            display.show_diagnostic(exc.to_dict(), codes.get(ks["source"]))
            return None
        fr = cases.FamilyResult("run", ok, frag, err, kind, **{k: evidence.get(k) for k in (
            "params", "shapes", "output", "index", "expected", "got", "tol", "mismatches", "size")})
        render_families(f"L.run(\"{kernel}\")", [fr.to_dict()], seed, codes.get(ks["source"]), replay=None)
        return {"passed": ok, "max_error": err, "seed": seed}

    # ------------------------------------------------------------------ visible checks
    def assert_close(self, got, want, atol: float = 1e-5, rtol: float = 1e-5, what: str = "") -> None:
        """A visible test: AssertionError naming the first mismatching element, expected vs got, the tolerance."""
        evidence: Dict[str, Any] = {}
        ok, err, kind, frag = cases.compare("y", np.asarray(got), np.asarray(want), float(atol), float(rtol),
                                            evidence=evidence)
        if ok:
            return
        head = f"{what}：" if what else ""
        if evidence.get("index") is not None:
            idx = ", ".join(str(i) for i in evidence["index"])
            tol = evidence["tol"]
            raise AssertionError(
                f"{head}结果与参考不符：第一个不符的元素 [{idx}]：期望 {fmt_value(evidence['expected'])}，"
                f"实际 {fmt_value(evidence['got'])}（容差 atol={tol['atol']:g}, rtol={tol['rtol']:g}，"
                f"此处允许 {fmt_value(tol['at_index'])}）；共 {evidence['mismatches']}/{evidence['size']} 个元素不符")
        raise AssertionError(f"{head}{frag}")

    # ------------------------------------------------------------------ hidden tests (grading runs)
    def grade(self, item_id: str, seed: Optional[int] = None):
        """Run the item's case families against the caller's source variables (hidden test cells)."""
        items = self.cfg["items"]
        if item_id not in items or items[item_id]["kind"] != "cases":
            raise KeyError(f"评分项「{item_id}」不存在或不是代码用例项")
        if grading_run():   # the judge runs the hidden cases itself, outside this notebook's sandbox
            print(f"（评分运行中：评分项 {item_id} 的隐藏用例由评分器在沙箱外单独运行，结果见评分报告）")
            return None
        ns = _caller_namespace()
        codes = self._codes(self._item_sources(item_id), ns)
        res = cases.run_item(self.cfg, item_id, codes, seed=seed)
        rows = [f"  {'通过' if f.passed else '未通过'} {f.family}" +
                (f"（最大误差 {f.max_error:.1e}）" if f.passed and f.max_error is not None else "")
                for f in res.families]
        text = f"评分项 {item_id}：" + ("通过" if res.passed else "未通过") + "\n" + "\n".join(rows)
        _emit(GRADE_MIME, res.to_dict(), text)
        self.last_grade = res
        if not res.passed:
            raise AssertionError(res.summary)
        # returns None so a test cell ending in L.grade(...) shows no Out[] value; see L.last_grade

    # ------------------------------------------------------------------ per-item checks
    def _check_targets(self, item: str) -> List[str]:
        items = self.cfg["items"]
        if item == "code":
            return [i for i, it in items.items() if it["kind"] == "cases"]
        if item not in items:
            known = "、".join(["code"] + list(items))
            raise StudentError(f"没有评分项「{item}」；可以检查：{known}", title="检查项不存在")
        return [item]

    def check(self, item: str = "code", seed: Optional[int] = None):
        """Grade ``item`` now ("code" = every code item) on what is on screen, with the grader's engine.

        Code: the CUDA the kernel last ran (the %%cuda cell) on the hidden case families (fresh seed,
        memcheck + racecheck). Written answers: the text on screen (the extension sends it), else the
        saved file, said so. Nothing is saved. ``seed`` replays a draw.
        """
        if grading_run():
            print("（评分运行中：跳过单项检查）")
            return None
        targets = self._check_targets(item)
        code_items = [t for t in targets if self.cfg["items"][t]["kind"] == "cases"]
        if code_items:
            self._check_code(item, code_items, seed)
        for t in targets:
            if t not in code_items:
                self._check_answer(t)

    def _check_code(self, label: str, item_ids: List[str], seed: Optional[int]) -> None:
        ns = _caller_namespace()
        sids = set()
        for iid in item_ids:
            sids |= self._item_sources(iid)
        codes = self._codes(sids, ns)
        stale = _unrun_source_cells(self.cfg, codes)
        if stale:
            display.show_panel("warn", "CUDA 单元格改过，但还没有重新运行",
                               [f"屏幕上的 {'、'.join(stale)} 与内核里上次运行的版本不同：本次检查的是上次运行的版本。"
                                "先运行 CUDA 单元格（Shift+Enter），再运行本单元格。"])
        blanks = {sid: messages.blank_problems(src) for sid, src in codes.items()}
        if any(blanks.values()):
            for sid, probs in blanks.items():
                if probs:
                    display.show_problems("先补齐填空：还没有运行用例", probs, codes[sid],
                                          messages.compile_advice(probs), kind="todo")
            self.last_check = {iid: None for iid in item_ids}
            return
        seed = cases.new_seed() if seed is None else int(seed)
        scores = [check_item(self.id, iid, codes, seed=seed) for iid in item_ids]
        self.last_check = {s.item: s for s in scores}
        src = next(iter(codes.values())) if len(codes) == 1 else None
        render_code_check(label, scores, seed, src)

    def _check_answer(self, item_id: str) -> None:
        item = self.cfg["items"][item_id]
        gid = item.get("grade_id") or item_id
        text, where = _answer_on_screen(self.cfg, gid)
        if text is None:
            display.show_panel("fail", f"找不到答题单元格「{gid}」", [where])
            return
        score = check_item(self.id, item_id, text, seed=None)
        self.last_check = {item_id: score}
        render_answer_check(item_id, score, where, blank=not text.strip())

    # ------------------------------------------------------------------ hints
    def hints(self, *items: str, notebook: Optional[str] = None):
        """Hint buttons for ``items`` (default: all); a click shows the next level, Run All never does."""
        if grading_run():
            print("（评分运行中：不显示提示）")
            return None
        from . import hint_buttons
        hint_buttons.show(self, list(items) or None, notebook)

    def hint(self, item: str, level: Optional[int] = None, notebook: Optional[str] = None):
        """Show the next level of ``item``'s hint ladder (or ``level``) and record it (no button)."""
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
    def self_check(self, path: Optional[str] = None, seed: Optional[int] = None, timeout: Optional[int] = None):
        """Grade the whole notebook like the instructor does: the SAVED file, after making sure it is
        what is on screen (the extension saves it) and what the kernel ran."""
        if grading_run():
            print("（评分运行中：跳过自检）")
            return None
        nb_path = notebook_path(path, self.cfg)
        if not nb_path:
            display.show_panel("fail", "找不到本笔记本的文件",
                               [f"请把路径告诉自检：L.self_check('路径/{self.cfg.get('notebook', '')}')"])
            return None
        ok, notes = ensure_saved(self.cfg, nb_path, _caller_namespace())
        if not ok:
            self.last_check_passed = None
            return None
        cmd = [sys.executable, "-m", "autograder.cli", "check", str(nb_path), "--lesson", self.id, "--json"]
        if seed is not None:
            cmd += ["--seed", str(int(seed))]
        env = dict(os.environ)
        env.pop("AUTOGRADER_SEED", None)
        root = str(Path(__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
        print(f"正在用评分引擎检查已保存的 {nb_path.name}（与老师评分相同；约需一分钟）……", flush=True)
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env,
                                  timeout=timeout or self.cfg["settings"]["time_limit_s"] + 60)
        except subprocess.TimeoutExpired:
            display.show_panel("fail", "自检超时", ["评分超过了时间限制：检查 kernel 里是否有死循环。"])
            return None
        try:
            result = json.loads(proc.stdout)
        except ValueError:
            display.show_panel("fail", "自检没有得到结果",
                               ["评分进程没有输出结果（这是课程工具的问题，请把下面的信息发给老师）："],
                               (proc.stdout + proc.stderr)[-2000:])
            return None
        self.last_self_check = result
        self.last_check_passed = bool(result.get("passed"))
        result.setdefault("pass_score", self.cfg["settings"]["pass_score"])
        if result.get("pass_score") is None:
            result["pass_score"] = self.cfg["settings"]["pass_score"]
        render_verdict(result, nb_path, notes, blanks=_saved_blanks(self.cfg, nb_path), replay=True)


# ----------------------------------------------------------------------------- on screen vs on disk

def _answer_on_screen(cfg, gid: str):
    """``(answer text, where it came from)``: the snapshot the extension sent, else the saved file."""
    snap = frontend.snapshot()
    if snap is not None:
        cell = frontend.screen_cells(snap).get(gid)
        if cell is None:
            return None, f"屏幕上的笔记本里没有 grade_id 为「{gid}」的答题单元格（被删除了？）"
        return nbio.answer_text(nbio_cell(cell)), "屏幕上的答案（未保存也算）"
    path = notebook_path(None, cfg)
    if not path:
        return None, "找不到笔记本文件，也没有收到屏幕上的内容"
    cell = nbio.cells_by_grade_id(nbio.read(path)).get(gid)
    if cell is None:
        return None, f"已保存的笔记本里没有答题单元格「{gid}」"
    saved = time.strftime("%H:%M:%S", time.localtime(path.stat().st_mtime))
    return nbio.answer_text(cell), (f"已保存的文件（{saved} 保存；没有检测到课程的 JupyterLab 扩展，"
                                     "刚改的答案请先 Ctrl+S 保存）")


def nbio_cell(screen_cell: Dict[str, Any]):
    import nbformat
    return nbformat.from_dict({"cell_type": screen_cell.get("cell_type", "markdown"), "metadata": {},
                               "source": screen_cell.get("source", "")})


def _unrun_source_cells(cfg, codes: Dict[str, str]) -> List[str]:
    """Source cells whose on-screen CUDA differs from what the kernel ran (needs the snapshot)."""
    snap = frontend.snapshot()
    if snap is None:
        return []
    cells = frontend.screen_cells(snap)
    out = []
    for sid, code in codes.items():
        c = cells.get(sid)
        if c is None:
            continue
        shown = nbio.python_string_var(c.get("source", ""), cfg["sources"][sid]["var"])
        if shown is not None and shown.rstrip() != code.rstrip():
            out.append(sid)
    return out


def _graded_ids(cfg) -> List[str]:
    ids = list((cfg.get("sources") or {}).keys())
    for iid, it in cfg["items"].items():
        if it["kind"] == "rubric":
            ids.append(it.get("grade_id") or iid)
    return ids


def _norm(s: str) -> str:
    return "\n".join(ln.rstrip() for ln in (s or "").strip().splitlines())


def differing_cells(cfg, disk_nb, screen: Dict[str, Dict[str, Any]]) -> List[str]:
    """grade_ids (sources and answers) whose text on disk differs from the screen snapshot."""
    disk = nbio.cells_by_grade_id(disk_nb)
    out = []
    for gid in _graded_ids(cfg):
        s, d = screen.get(gid), disk.get(gid)
        if s is None and d is None:
            continue
        if s is None or d is None or _norm(s.get("source", "")) != _norm(d.source):
            out.append(gid)
    return out


def ensure_saved(cfg, nb_path: Path, ns: Dict[str, Any], wait_s: float = SAVE_WAIT_S):
    """True when the file on disk holds what is on screen and what the kernel ran; else a loud refusal.

    With the extension: it saved the notebook as this cell was sent; wait for that save to land and
    compare every source / answer cell with the screen. Without it: compare the CUDA the kernel ran
    (the %%cuda cells) with the file, and say that unsaved answers cannot be seen.
    """
    notes: List[str] = []
    snap = frontend.snapshot()
    if snap is not None:
        screen = frontend.screen_cells(snap)
        deadline = time.time() + (wait_s if snap.get("will_save") else 0)
        while True:
            try:
                diff = differing_cells(cfg, nbio.read(nb_path), screen)
            except Exception:
                diff = ["（文件暂时读不出来）"]
            if not diff or time.time() > deadline:
                break
            time.sleep(0.3)
        if diff:
            display.show_panel("fail", "没有自检：磁盘上的文件比屏幕上的旧",
                               [f"这些单元格在屏幕上和已保存的文件里不一样：{'、'.join(diff)}。",
                                "自检只检查已保存的文件（提交的也是它）。请按 Ctrl+S 保存，再运行本单元格。"])
            return False, notes
        notes.append("已保存：检查的文件与屏幕上的内容一致。")
        return True, notes
    disk = nbio.read(nb_path)
    stale = []
    disk_cells = nbio.cells_by_grade_id(disk)
    for sid, spec in (cfg.get("sources") or {}).items():
        ran = ns.get(spec["var"])
        cell = disk_cells.get(sid)
        if not isinstance(ran, str) or cell is None:
            continue
        saved = nbio.python_string_var(cell.source, spec["var"])
        if saved is not None and _norm(saved) != _norm(ran):
            stale.append(sid)
    if stale:
        display.show_panel("fail", "没有自检：磁盘上的文件比内核运行的旧",
                           [f"内核运行的 {'、'.join(stale)} 和已保存的文件不一样（改了还没保存）。",
                            "请按 Ctrl+S 保存，再运行本单元格。"])
        return False, notes
    saved = time.strftime("%H:%M:%S", time.localtime(nb_path.stat().st_mtime))
    notes.append(f"没有检测到课程的 JupyterLab 扩展，无法确认问答是否已保存：检查的是 {saved} 保存的文件。")
    return True, notes


def _saved_blanks(cfg, nb_path: Path) -> List[str]:
    out = []
    try:
        cells = nbio.cells_by_grade_id(nbio.read(nb_path))
    except Exception:
        return out
    for sid, spec in (cfg.get("sources") or {}).items():
        c = cells.get(sid)
        src = nbio.python_string_var(c.source, spec["var"]) if c is not None else None
        for line, _col in cuda_cell.blanks(src or ""):
            out.append(f"{sid} 第 {line} 行")
    return out


# ----------------------------------------------------------------------------- rendering results

def fmt_value(v) -> str:
    if isinstance(v, str):
        return v
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def _inputs(f: Dict[str, Any]) -> str:
    parts = []
    if f.get("shapes"):
        parts.append(" ".join(f"{k}{list(v)}" for k, v in f["shapes"].items()))
    if f.get("params"):
        parts.append(", ".join(f"{k}={fmt_value(v)}" for k, v in f["params"].items()))
    return "；".join(parts)


def _mismatch(f: Dict[str, Any]):
    if f.get("index") is None:
        return "", "", "", ""
    idx = f"{f.get('output') or 'y'}[{', '.join(str(i) for i in f['index'])}]"
    if f.get("mismatches") is not None:
        idx += f"（共 {f['mismatches']}/{f['size']} 个不符）"
    tol = f.get("tol") or {}
    tol_s = f"atol={tol.get('atol', 0):g}, rtol={tol.get('rtol', 0):g}" if tol else ""
    return idx, fmt_value(f.get("expected")), fmt_value(f.get("got")), tol_s


def _status(f: Dict[str, Any]) -> str:
    if f.get("passed"):
        return "通过"
    kind = f.get("error_kind")
    if kind in ("mismatch", "nan", "inf", "unwritten", "shape"):
        return {"mismatch": "结果不符", "nan": "出现 NaN", "inf": "inf 不符", "unwritten": "有元素未写入或为 NaN",
                "shape": "形状不符"}[kind]
    return messages.diagnostic_title(kind) if kind else "未通过"


def render_families(title: str, families: List[Dict[str, Any]], seed: Optional[int], source: Optional[str],
                    replay: Optional[str]) -> None:
    """A table of case families (family, result, inputs, first mismatch, expected vs got, tolerance),
    then one panel per distinct diagnostic."""
    headers = ["用例族", "结果", "输入", "第一个不符的位置", "期望", "实际", "容差", "最大误差"]
    rows, html_rows = [], []
    for f in families:
        idx, exp, got, tol = _mismatch(f)
        err = f"{f['max_error']:.1e}" if f.get("max_error") is not None else ""
        status = _status(f)
        cells = [f.get("family", ""), status, _inputs(f), idx, exp, got, tol, err]
        rows.append(cells)
        html_rows.append([display.esc(cells[0]), display.badge(status, "ok" if f.get("passed") else "fail")]
                         + [display.esc(c) for c in cells[2:]])
    seed_line = "" if seed is None else f"随机种子 seed={seed}" + (f"；复现：{replay.format(seed=seed)}" if replay else "")
    head = f'<div style="font-weight:600">{display.esc(title)}</div>'
    foot = f'<div style="color:#57606a">{display.esc(seed_line)}</div>' if seed_line else ""
    display.show(head + display.html_table(headers, html_rows, raw_cols=range(len(headers))) + foot,
                 title + "\n" + display.text_table(headers, rows) + ("\n" + seed_line if seed_line else ""))
    shown = set()
    for f in families:
        diag = f.get("diagnostic")
        if f.get("passed") or not diag:
            continue
        key = (diag.get("kind"), diag.get("line"), diag.get("message"))
        if key in shown:
            continue
        shown.add(key)
        if diag.get("kind") == "compile":
            class _E:  # the compile diagnostics as messages.compile_problems reads them
                diagnostics = [tuple(d) for d in diag.get("diagnostics") or []]
                log = diag.get("message", "")
            probs = messages.compile_problems(_E, source)
            display.show_problems("编译失败", probs, source or "", messages.compile_advice(probs))
        else:
            display.show_diagnostic(diag, source, title_prefix=f"用例族「{f.get('family')}」：")


def render_code_check(label: str, scores: List[ItemScore], seed: int, source: Optional[str]) -> None:
    total = sum(s.points for s in scores)
    top = sum(s.max_points for s in scores)
    passed = all(s.points >= s.max_points for s in scores)
    parts = "，".join(f"{s.item} {s.points:g}/{s.max_points:g}" for s in scores)
    display.show(f'<div>{display.badge("通过" if passed else "未通过", "ok" if passed else "fail")} '
                 f'<b>L.check("{display.esc(label)}")</b>：{display.esc(parts)}（共 {total:g}/{top:g} 分，隐藏用例，'
                 f'与评分相同的引擎）</div>',
                 f"L.check(\"{label}\")：{'通过' if passed else '未通过'}，{parts}（共 {total:g}/{top:g} 分）")
    families = [dict(f, family=f"{s.item} · {f.get('family', '')}") for s in scores for f in s.families]
    render_families("隐藏用例（每次新的随机输入；memcheck + racecheck）", families, seed, source,
                    replay=f"L.check(\"{label}\", seed={{seed}})")


def render_answer_check(item_id: str, score: ItemScore, where: str, blank: bool) -> None:
    if blank:
        display.show_panel("todo", f"{item_id}：还没有作答", [f"在上面的答题单元格里写下你的回答（{where}）。"])
        return
    full = score.points >= score.max_points
    kind = "ok" if full else ("warn" if score.points > 0 else "fail")
    display.show_panel(kind, f"{item_id}：{score.points:g}/{score.max_points:g} 分",
                       [score.message, f"评的是：{where}。"])


def render_verdict(result: Dict[str, Any], nb_path: Path, notes: List[str], blanks: List[str],
                   replay: bool = True) -> None:
    """The self-check result: pass/fail, score, items, vetoes with evidence, seed."""
    passed = bool(result.get("passed"))
    score, top, line = result.get("score", 0), result.get("max_score", 0), result.get("pass_score")
    seed = result.get("seed")
    head = (f'<div style="font-size:1.1em">{display.badge("通过" if passed else "未通过", "ok" if passed else "fail")} '
            f'<b>自检结果：{score:g} / {top:g} 分</b>（通过线 {line:g} 分且没有一票否决）</div>')
    text = [f"自检结果：{'通过' if passed else '未通过'}，{score:g} / {top:g} 分（通过线 {line:g}）"]
    todo = []
    if blanks:
        todo.append(f"先补齐填空：{'、'.join(blanks)} 还是 ______。")
    unanswered = [i["id"] for i in result.get("items") or [] if str(i.get("message", "")).startswith("未作答")]
    if unanswered:
        todo.append(f"还没有作答：{'、'.join(unanswered)}。")
    body = head + "".join(f'<div style="color:#9a6700;font-weight:600">{display.esc(t)}</div>' for t in todo)
    text += todo
    rows, text_rows = [], []
    for it in result.get("items") or []:
        ok = float(it.get("points", 0)) >= float(it.get("max_points", 0))
        msg = str(it.get("message", ""))
        rows.append([display.esc(it.get("id", "")), display.badge(f"{it.get('points', 0):g}/{it.get('max_points', 0):g}",
                                                                  "ok" if ok else "fail"),
                     display.esc(msg if len(msg) <= 400 else msg[:397] + "…")])
        text_rows.append([it.get("id", ""), f"{it.get('points', 0):g}/{it.get('max_points', 0):g}", msg[:200]])
    body += display.html_table(["评分项", "得分", "说明"], rows, raw_cols=(0, 1, 2))
    text.append(display.text_table(["评分项", "得分", "说明"], text_rows))
    for v in result.get("vetoes") or []:
        body += display.panel("fail", f"一票否决：{v.get('id')}", f"<div>{display.esc(v.get('message', ''))}</div>"
                              + (f"<pre>{display.esc(v.get('evidence', ''))}</pre>" if v.get("evidence") else ""), "")
        text.append(f"一票否决 {v.get('id')}：{v.get('message', '')}\n{v.get('evidence', '')}")
    for e in result.get("errors") or []:
        body += f'<div style="color:#cf222e">{display.esc(e)}</div>'
        text.append(str(e))
    extra = list(notes) + list(result.get("notes") or [])
    used = result.get("hints_used") or {}
    if used:
        extra.append("使用的提示：" + "，".join(f"{k} 第 {v} 级" for k, v in used.items()))
    if seed is not None:
        extra.append(f"随机种子 seed={seed}" + (f"；复现：L.self_check(seed={seed})" if replay else ""))
    body += "".join(f'<div style="color:#57606a">{display.esc(n)}</div>' for n in extra)
    text += extra
    display.show(body, "\n".join(text))


# ----------------------------------------------------------------------------- helpers

def _all_kernels(spec) -> set:
    if isinstance(spec, str):
        return {spec}
    out = set()
    for x in spec:
        out |= _all_kernels(x if isinstance(x, str) else x["kernel"])
    return out


def notebook_path(explicit: Optional[str], cfg: Dict[str, Any]) -> Optional[Path]:
    """The notebook file this kernel runs: argument, the extension's snapshot, JPY_SESSION_NAME, VS Code,
    or cwd/<notebook>."""
    cands = [explicit]
    snap = frontend._state.get("snapshot")
    if snap and snap.get("path"):
        cands.append(os.path.join(os.getcwd(), os.path.basename(snap["path"])))
    cands.append(os.environ.get("JPY_SESSION_NAME"))
    ip = _ipython()
    if ip is not None:
        cands.append((getattr(ip, "user_ns", {}) or {}).get("__vsc_ipynb_file__"))
    cands.append(os.path.join(os.getcwd(), cfg.get("notebook", "")))
    for c in cands:
        if c and str(c).endswith(".ipynb") and Path(c).exists():
            return Path(c).resolve()
    return None


def load(lesson_id: str) -> Lesson:
    """Load a lesson's grading config, print the backend banner (recorded as an output), and install
    the notebook side of the course: %%cuda, failure panels, the extension's comm, a CJK plot font."""
    import kernels
    cfg = config.lesson(lesson_id)
    backend = kernels.backend()
    device = _device_name(backend)
    title = cfg.get("title", lesson_id)
    note = "" if backend == "cupy" else "（无 GPU：在 CPU 模拟器上运行，结果语义与 CUDA 一致，但计时没有意义）"
    ip = _ipython()
    if ip is not None:
        cuda_cell.register(ip)
        display.install_exception_panels(ip)
        frontend.install(ip)
    font = display.use_cjk_font()
    font_note = "" if font or grading_run() else (
        "\n（没有找到中文字体：图中的中文会显示成方框。Debian/Ubuntu：sudo apt install fonts-wqy-zenhei）")
    _emit(LESSON_MIME, {"lesson": lesson_id, "backend": backend, "device": device},
          f"{title}\n后端：{backend} · 设备：{device}{note}{font_note}")
    return Lesson(lesson_id, cfg, backend, device)


__all__ = ["load", "Lesson", "notebook_path", "check_item", "StudentError"]
