"""Launch planned cases in a sandbox (``autograder.judge.runner`` inside ``autograder.sandbox``).

The grader writes the job (sources, launch plans, input arrays; no references, no tolerances), starts the
runner sandboxed, and reads back what it wrote, size-capped and without pickle. A case whose result never
came back (the process crashed, hung or ran out of memory on it) fails with that reason, and the cases
after it run again in a fresh sandbox, so one bad family cannot take the others down with it.
"""
from __future__ import annotations

import io
import json
import os
import shutil
import signal
import sys
import zipfile
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import numpy as np

from .. import cases, sandbox
from ..sandbox import core as sbx
from ..settings import GradingSettings
from .runner import JOB_SCHEMA, pack, unpack

MAX_ROUNDS = 3
MAX_OUTPUT_BYTES_PER_CASE = 64 * 2**20
# a timeout is slow to reach: after one, the item's later families are not run (the item is lost anyway)
SLOW_FAILURES = ("timeout",)


def trusted_runtime_files() -> Dict[str, str]:
    """The emulator's prebuilt runtime objects, built by the grader and shown read-only to sandboxes
    (a submission can read them but never replace one another submission would link)."""
    from kernels.cpu import build
    files = {}
    for mode in ("native", "memcheck", "racecheck"):
        for obj in build.runtime_objects(mode):
            files[f"cache/cpu/{obj.name}"] = str(obj)
    native = build.runtime_objects("native")
    build.allowed_symbols(native)
    allowed = build.allowed_symbols_file(native)
    if allowed.exists():
        files[f"cache/cpu/{allowed.name}"] = str(allowed)
    flags = build.user_flags(())                  # the lessons' flags; other flags build their own
    main = build.memcheck_main_object(flags)
    files[f"cache/cpu/{main.name}"] = str(main)
    for mode_flags in (build.NATIVE_FLAGS, build.RACECHECK_FLAGS, build.MEMCHECK_FLAGS):
        header = build.precompiled_header(mode_flags, flags)
        if header.parent != build.INCLUDE_DIR:
            for f in (header, header.with_name("emu.h.gch")):
                files[f"cache/cpu/{header.parent.name}/{f.name}"] = str(f)
    return files


def bundle_dir() -> Path:
    """Grader-owned store of emulator builds, one folder per (source, options, names, checks, runtime)."""
    from kernels.cpu.build import cache_dir
    d = cache_dir() / "judge-builds"
    d.mkdir(parents=True, exist_ok=True)
    return d


def _bundle_key(sources: dict, checks) -> str:
    import hashlib

    from kernels.cpu.build import runtime_version
    blob = json.dumps({"sources": sources, "checks": sorted(checks), "runtime": runtime_version()}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


BUILD_FILES = ("mod-", "race-", "memcheck-")


def _signal_name(rc: int) -> str:
    try:
        return signal.Signals(-rc).name
    except (ValueError, TypeError):
        return str(rc)


def _why_lost(out: sbx.Outcome, settings: GradingSettings, wall: float) -> tuple:
    if out.killed == "time":
        return "timeout", f"运行超时：评测进程超过 {wall:g} 秒没有结束（kernel 死循环或过慢），已被终止"
    if out.killed == "memory":
        return "memory", f"内存超限：评测进程占用内存超过 {settings.memory_mb} MB，已被终止"
    if out.killed == "disk":
        return "crash", "评测进程写出的文件超过磁盘限额，已被终止"
    if out.rc is not None and out.rc < 0:
        name = _signal_name(out.rc)
        what = {"SIGSEGV": "段错误（非法内存访问）", "SIGBUS": "总线错误", "SIGABRT": "程序中止",
                "SIGKILL": "被系统终止", "SIGXCPU": "CPU 时间超限", "SIGXFSZ": "写出的文件超过大小限制"}
        return "crash", f"运行 kernel 的进程崩溃：{what.get(name, name)}"
    tail = (out.stderr or "").strip().splitlines()[-1:] or [""]
    return "crash", f"运行 kernel 的进程异常退出（退出码 {out.rc}）{tail[0][:160]}"


def _load_npz(raw: Optional[bytes], outputs, tags) -> Tuple[Optional[Dict[str, np.ndarray]], str]:
    """(the outputs the runner wrote, or None; why not, in words an instructor can act on)."""
    if not raw:
        return None, "no output file"
    try:
        zf = zipfile.ZipFile(io.BytesIO(raw))
        if sum(i.file_size for i in zf.infolist()) > MAX_OUTPUT_BYTES_PER_CASE:
            return None, "outputs larger than the limit"
        with np.load(io.BytesIO(raw), allow_pickle=False) as z:
            got = {o: unpack(z[o], tags.get(o, "")) for o in outputs if o in z.files}
    except Exception as exc:
        return None, f"{type(exc).__name__}: {exc}"[:300]
    missing = [o for o in outputs if o not in got]
    return (None, f"missing {', '.join(missing)}") if missing else (got, "")


class SandboxExecutor:
    """``cases.run_items(..., executor=SandboxExecutor(settings, workdir))``: runs every plan sandboxed."""

    def __init__(self, settings: GradingSettings, work: Path, backend: str = "cpu"):
        self.settings = settings
        self.work = Path(work)
        self.backend = backend
        self.sandboxed: Optional[bool] = None
        self.rounds: List[sbx.Outcome] = []

    def _shared_builds(self, sources: dict, checks, wall: float) -> Dict[str, str]:
        """Emulator builds of these sources, made once and shared read-only: a build-only sandbox (the
        compiler runs, the learner's code does not) fills the grader's store the first time a source is
        seen; every later submission with the same source links the same files, unable to change them."""
        key = _bundle_key(sources, checks)
        store = bundle_dir() / key
        if not store.is_dir():
            # a fresh directory no sandbox of this submission has written: a build cache the learner's code
            # could reach (an earlier round's run) could hold planted objects the build would reuse
            root = sbx.prepare_workdir(prefix="build-")
            try:
                if not self._build_into(root, sources, checks, wall, key, store):
                    return {}                  # a compile error: the runner reports it where it belongs
            finally:
                sbx.reclaim(root)
        return {f"cache/cpu/{f.name}": str(f) for f in store.iterdir()}

    def _build_into(self, root: Path, sources: dict, checks, wall: float, key: str, store: Path) -> bool:
        build = root / "build"
        build.mkdir(parents=True, exist_ok=True)
        (build / "job.json").write_text(json.dumps({"sources": sources, "checks": list(checks)}), encoding="utf-8")
        env = {"KERNELS_BACKEND": "cpu", "KERNELS_CACHE_DIR": "{work}/buildcache", "KERNELS_CHECK": "",
               "AUTOGRADER_RUNNING": "1"}
        ro = {f"buildcache/{k[len('cache/'):]}": v for k, v in trusted_runtime_files().items()}
        out = sandbox.run([sys.executable, "-m", "autograder.judge.runner", "--build-only", "build"], root,
                          limits=self.settings.limits(wall), env=env, mode=self.settings.sandbox, ro_files=ro)
        raw = sbx.read_result(build / "built.json", 1)
        try:
            built = json.loads(raw) if raw else {}
        except ValueError:
            built = {}
        if out.rc != 0 or not built or any(v != "built" for v in built.values()):
            return False
        tmp = bundle_dir() / f".{key}.{os.getpid()}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        for f in (root / "buildcache" / "cpu").iterdir():
            if f.name.startswith(BUILD_FILES) and not f.name.endswith(".lock") and f.is_file() \
                    and not f.is_symlink():
                shutil.copyfile(f, tmp / f.name)
                os.chmod(tmp / f.name, 0o755 if f.name.startswith("memcheck-") else 0o644)
        try:
            os.rename(tmp, store)
        except OSError:                     # another worker stored the same build first
            shutil.rmtree(tmp, ignore_errors=True)
        return True

    def _devices(self) -> List[str]:
        return sbx.gpu_devices() if self.backend == "cupy" else []

    def __call__(self, lesson, codes, plans: List[cases.CasePlan], checks) -> List[cases.LaunchOutcome]:
        results: Dict[int, cases.LaunchOutcome] = {}
        pending = list(range(len(plans)))
        groups = [getattr(p, "group", "") for p in plans]
        isolated = sandbox.will_isolate(self.settings.sandbox)
        ro = trusted_runtime_files() if self.backend == "cpu" and isolated else {}
        for rnd in range(MAX_ROUNDS):
            if not pending:
                break
            job = self.work / f"job{rnd}"
            job.mkdir(parents=True, exist_ok=True)
            spec_cases = []
            for i in pending:
                plan = plans[i]
                arrays, tags = {}, {}
                for a, h in plan.arrays.items():
                    arrays["a:" + a], tags["a:" + a] = pack(h)
                launches = []
                for li, ln in enumerate(plan.launches):
                    args = []
                    for ai, (k, v) in enumerate(ln.args):
                        if k == "array":
                            args.append(["array", v])
                        elif k == "view":
                            args.append(["view", [v[0], v[1], list(v[2])]])
                        else:
                            key = f"s:{li}.{ai}"
                            arrays[key], tags[key] = pack(np.asarray(v))
                            args.append(["scalar", key])
                    launches.append({"source": ln.source, "function": ln.function, "grid": list(ln.grid),
                                     "block": list(ln.block), "shared_mem": ln.shared_mem, "args": args})
                np.savez(job / f"case-{i}.npz", **arrays)
                spec_cases.append({"index": i, "group": groups[i], "sources": plan.sources,
                                   "arrays": list(plan.arrays), "outputs": plan.outputs, "launches": launches,
                                   "tags": {k: t for k, t in tags.items() if t}})
            sids = sorted({s for i in pending for s in plans[i].sources})
            sources = {}
            for sid in sids:
                options, names = cases.compile_spec(lesson, sid)
                sources[sid] = {"code": codes[sid], "options": list(options), "name_expressions": names}
            (job / "job.json").write_text(json.dumps({"schema": JOB_SCHEMA, "checks": list(checks),
                                                      "slow_failures": list(SLOW_FAILURES),
                                                      "sources": sources, "cases": spec_cases}), encoding="utf-8")
            wall = self.settings.cases_time_limit_s
            if isolated and self.backend == "cpu":
                ro = {**ro, **self._shared_builds(sources, checks, wall)}
            from kernels.cpu.build import cache_dir
            # isolated: a private build cache (a submission must never write a build another one links);
            # not isolated, the learner's own code runs as the user anyway, and the shared cache saves compiles
            env = {"KERNELS_BACKEND": self.backend,
                   "KERNELS_CACHE_DIR": "{work}/cache" if isolated else str(cache_dir().parent),
                   "KERNELS_TIMEOUT": str(self.settings.launch_timeout_s), "KERNELS_CHECK": "",
                   "AUTOGRADER_RUNNING": "1"}
            out = sandbox.run([sys.executable, "-m", "autograder.judge.runner", f"job{rnd}"], self.work,
                              limits=self.settings.limits(wall), env=env, mode=self.settings.sandbox,
                              ro_files=ro, devices=self._devices())
            self.rounds.append(out)
            self.sandboxed = out.sandboxed if self.sandboxed is None else (self.sandboxed and out.sandboxed)
            lost = []
            for i in pending:
                raw = sbx.read_result(job / "out" / f"result-{i}.json", 1)
                try:
                    res = json.loads(raw.decode("utf-8")) if raw else None
                except (ValueError, UnicodeDecodeError):
                    res = None
                if not isinstance(res, dict):
                    lost.append(i)
                    continue
                if res.get("ok"):
                    blob = sbx.read_result(job / "out" / f"out-{i}.npz", MAX_OUTPUT_BYTES_PER_CASE / 2**20)
                    got, why = _load_npz(blob, plans[i].outputs, res.get("tags") or {})
                    if got is None:     # the reason travels: it is the grader's fault to find, not the learner's
                        results[i] = cases.LaunchOutcome(kind="malformed",
                                                         message=f"kernel 的输出没有正确返回（评测记录：{why}）")
                    else:
                        results[i] = cases.LaunchOutcome(outputs=got)
                else:
                    diag = res.get("diagnostic")
                    diag = diag if isinstance(diag, dict) and len(json.dumps(diag)) < 20000 else None
                    results[i] = cases.LaunchOutcome(kind=str(res.get("kind") or "error")[:40],
                                                     message=str(res.get("message") or "")[:4000], diagnostic=diag)
            if not lost:
                pending = []
                break
            started = [i for i in lost if (job / "out" / f"started-{i}.json").exists()]
            culprit = started[0] if started else lost[0]
            kind, why = _why_lost(out, self.settings, wall)
            results[culprit] = cases.LaunchOutcome(kind=kind, message=why)
            pending = [i for i in lost if i != culprit]
            if kind == "timeout":      # the item of a hanging case is lost: do not spend the limit again on it
                for i in list(pending):
                    if groups[i] == groups[culprit]:
                        results[i] = cases.LaunchOutcome(kind="skipped", message="没有运行：同一评分项前面的用例已超时")
                        pending.remove(i)
        for i in pending:
            results[i] = cases.LaunchOutcome(kind="crash", message="没有运行：前面的用例让评测进程反复崩溃")
        return [results[i] for i in range(len(plans))]
