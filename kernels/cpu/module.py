"""CpuModule / CpuFunction: the CPU emulator backend behind kernels.RawModule."""
from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import tempfile
import threading
import warnings
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import numpy as np

from .. import _config
from .. import counters as _counters
from .. import errors
from .. import ptx as _ptx
from . import build as _build
from . import memory as _memory
from .diagnostics import addr2line, load_base, parse_sanitizer_report, user_static_objects

# Launches are serialised: the runtime keeps one launch state per process.
_LAUNCH_LOCK = threading.RLock()

EMU_POLICY_REVERSE = 1
EMU_POLICY_GREEDY = 2
# Alternative schedules racecheck compares against the default round-robin order.
# The first runs the shadow-memory build in the default order (hazards show up in program order,
# e.g. a WAR as "write after read"); the others are plain builds whose outputs are compared.
RACE_POLICIES = (0, EMU_POLICY_REVERSE | EMU_POLICY_GREEDY, EMU_POLICY_GREEDY)
# racecheck shadows the launch's global arrays (56 bytes per 4-byte word) up to this much array data
GLOBAL_SHADOW_LIMIT_BYTES = 16 << 20

(EMU_OK, EMU_DEADLOCK, EMU_SHUFFLE_MASK, EMU_TIMEOUT, EMU_FAULT, EMU_ASSERT, EMU_LAUNCH, EMU_ARITH,
 EMU_TRAP, EMU_RACE, EMU_INTERRUPTED, EMU_UNSUPPORTED, EMU_SYNCCHECK) = range(13)
# emu_launch_cfg.flags (emu_rt.h)
FLAG_SYNCCHECK, FLAG_WARPCHECK, FLAG_STEP_SHARED, FLAG_STEP_GLOBAL, FLAG_COUNTERS = 1, 2, 4, 8, 16


class LaunchCfg(ctypes.Structure):
    _fields_ = [("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3), ("shared_mem", ctypes.c_ulonglong),
                ("timeout_s", ctypes.c_double), ("policy", ctypes.c_int), ("flags", ctypes.c_int)]


class LaunchResult(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("line", ctypes.c_int), ("block", ctypes.c_uint * 3),
                ("thread", ctypes.c_uint * 3), ("addr", ctypes.c_ulonglong), ("pc", ctypes.c_ulonglong),
                ("pc2", ctypes.c_ulonglong), ("thread2", ctypes.c_uint * 3), ("block2", ctypes.c_uint * 3),
                ("race_kind", ctypes.c_int),
                ("signo", ctypes.c_int), ("float_atomics", ctypes.c_int), ("message", ctypes.c_char * 1024),
                ("printf_buf", ctypes.c_void_p), ("printf_len", ctypes.c_ulonglong),
                ("float_atomic_mag", ctypes.c_double), ("line2", ctypes.c_int), ("reserved", ctypes.c_int)]


class Counters(ctypes.Structure):
    _fields_ = [(n, ctypes.c_ulonglong) for n in ("gld_requests", "gld_sectors", "gst_requests", "gst_sectors",
                                                  "sld_requests", "sld_wavefronts", "sld_ideal", "sst_requests",
                                                  "sst_wavefronts", "sst_ideal")]


_ENTRY = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(LaunchCfg), ctypes.c_void_p, ctypes.POINTER(LaunchResult))


def _dim3(v) -> tuple:
    if isinstance(v, (int, np.integer)):
        v = (int(v),)
    v = tuple(int(x) for x in v)
    if not 1 <= len(v) <= 3:
        raise errors.LaunchError(f"grid/block must have 1 to 3 dimensions, got {v}")
    return v + (1,) * (3 - len(v))


class CpuModule:
    """Device code compiled for the CPU emulator.

    ``kernels`` maps each callable (kernel name or name expression such as
    ``"layernorm_kernel<256>"``) to its parameter list (kernels.signature.Param);
    when omitted, ``name_expressions`` are the callables and parameters are
    taken from the launch arguments.
    """

    def __init__(self, code: str, options: Sequence[str] = (), name_expressions: Sequence[str] = (),
                 kernels: Optional[Dict[str, list]] = None, lockstep: Optional[Dict[str, dict]] = None):
        self.code = code
        self.options = tuple(options or ())
        self.kernels = dict(kernels) if kernels else {n: None for n in (name_expressions or ())}
        # callable -> kernels.ptx.Analysis: whether its warps' lanes must run in lockstep (issue 21)
        self.lockstep = {k: _ptx.Analysis.from_json(v) for k, v in (lockstep or {}).items()}
        self._lib = None
        self._lib_path: Optional[Path] = None
        self._runner: Optional[Path] = None
        self._race_lib = None
        self._race_path: Optional[Path] = None
        self._lock = threading.Lock()

    # callables are sorted so the entry numbering (and the cache key) is stable
    def _callables(self) -> List[str]:
        return sorted(self.kernels)

    def _load(self):
        with self._lock:
            if self._lib is None:
                self._lib_path = _build.build(self.code, self.options, self._callables(), "native")
                self._lib = ctypes.CDLL(str(self._lib_path))
            return self._lib

    def compile(self) -> "CpuModule":
        """Build now (otherwise the first get_function/launch builds)."""
        self._load()
        return self

    def unsupported(self) -> Dict[str, tuple]:
        """{function: (line, construct)} the emulator left out of this module's build (their kernels raise
        UnsupportedFeatureError when launched; the others run)."""
        self._load()
        return _build.stubbed(self._lib_path)

    def race_lib(self):
        """The instrumented build: racecheck's shadow memory, lockstep warps and memory counters
        (compiler instrumentation of every access, runtime/racecheck_shim.cpp)."""
        with self._lock:
            if self._race_lib is False:
                return None
            if self._race_lib is None:
                try:
                    self._race_path = _build.build(self.code, self.options, self._callables(), "racecheck")
                    lib = ctypes.CDLL(str(self._race_path))
                except (OSError, errors.CompileError) as exc:   # e.g. a hook we do not provide yet
                    warnings.warn(f"racecheck shadow build unusable ({exc}); comparing schedules only")
                    self._race_lib = False
                    return None
                base = load_base(str(self._race_path))
                objs = user_static_objects(str(self._race_path)) if base is not None else ()
                pairs = (ctypes.c_ulonglong * max(1, 2 * len(objs)))()
                for i, (off, size, _name) in enumerate(objs):
                    pairs[2 * i], pairs[2 * i + 1] = base + off, base + off + size
                lib.emu_race_set_regions(pairs, len(objs))
                lib.emu_set_static_regions(pairs, len(objs))
                self._race_lib = lib
            return self._race_lib

    def runner(self) -> Path:
        with self._lock:
            if self._runner is None:
                self._runner = _build.build(self.code, self.options, self._callables(), "memcheck")
            return self._runner

    def get_function(self, name: str) -> "CpuFunction":
        if name not in self.kernels:
            with self._lock:   # a plain kernel name not announced up front: rebuild with it
                self.kernels[name] = None
                self._lib = None
                self._runner = None
                self._race_lib = None
        analysis = self.lockstep.get(name)
        # a kernel that always runs in lockstep never needs the plain build
        lib = self.race_lib() if (analysis is not None and analysis.shared) else None
        lib = lib or self._load()
        index = self._callables().index(name)
        return CpuFunction(self, name, index, self.kernels.get(name), lib)


class CpuFunction:
    def __init__(self, module: CpuModule, name: str, index: int, params: Optional[list], lib):
        self.module = module
        self.name = name
        self.index = index
        self.params = params
        self.arity = int(getattr(lib, f"emu_arity_{index}")())
        self._native_entry = None

    @property
    def _entry(self):
        if self._native_entry is None:
            self._native_entry = ctypes.cast(getattr(self.module._load(), f"emu_entry_{self.index}"), _ENTRY)
        return self._native_entry

    def _inst_entry(self):
        lib = self.module.race_lib()
        if lib is None:
            raise errors.KernelError("the emulator's instrumented build failed; lockstep is unavailable",
                                     kernel=self.name)
        return lib, ctypes.cast(getattr(lib, f"emu_entry_{self.index}"), _ENTRY)

    def step_flags(self, args: list) -> int:
        """FLAG_STEP_* this launch needs: lockstep on shared memory when the kernel's PTX has an unsynchronised
        shared store -> load path; on global memory too when one of its global store -> load paths can meet
        in the arrays this launch passes (kernels.ptx)."""
        a = self.module.lockstep.get(self.name)
        if a is None:
            return 0
        flags = FLAG_STEP_SHARED if a.shared else 0
        if a.pairs:
            arrays = {i: (x.ctypes.data, x.ctypes.data + x.nbytes) for i, x in enumerate(args)
                      if isinstance(x, np.ndarray)}
            if any(_ptx.may_alias(s, l, arrays) for s, l in a.pairs):
                flags |= FLAG_STEP_SHARED | FLAG_STEP_GLOBAL
        return flags

    def __call__(self, grid, block, args, shared_mem: int = 0):
        self.launch(grid, block, args, shared_mem=shared_mem)

    # --- public entry ----------------------------------------------------------
    def launch(self, grid: tuple, block: tuple, args: list, shared_mem: int = 0) -> None:
        grid, block = _dim3(grid), _dim3(block)
        args = list(args)
        if len(args) != self.arity:
            raise errors.ArgumentError(f"kernel {self.name} takes {self.arity} arguments, {len(args)} given",
                                       kernel=self.name)
        checks = _config.active_checks()
        recorder = _counters.current()
        flags = FLAG_SYNCCHECK if "synccheck" in checks else 0
        if checks & {"memcheck", "racecheck"}:
            flags |= FLAG_WARPCHECK       # reading a lane that does not take part: undefined on the GPU
        step = self.step_flags(args)
        flags |= step | (FLAG_COUNTERS if recorder is not None else 0)
        instrumented = bool(step) or recorder is not None
        cfg = LaunchCfg((ctypes.c_uint * 3)(*grid), (ctypes.c_uint * 3)(*block), int(shared_mem or 0),
                        float(_config.timeout_s()), 0, flags)
        arrays = [i for i, a in enumerate(args) if isinstance(a, np.ndarray)]
        # racecheck runs again on copies taken before the kernel touches anything
        # (one per alternative schedule, plus a pristine one to watch a differing element)
        # per allocation, so arguments that alias one array still do and views keep their alignment
        race_inputs = ([_memory.clone(args) for _ in range(len(RACE_POLICIES) + 1)]
                       if "racecheck" in checks else None)
        counted = None
        with _LAUNCH_LOCK:
            if "memcheck" in checks and instrumented:
                # the ASan runner cannot run lanes in lockstep: it checks memory on copies, and the results
                # come from the lockstep build
                copies, _ = _memory.clone(args)
                res, printed = self._launch_memcheck(cfg, copies)
                if res.code == EMU_OK:
                    res, printed, counted = self._launch_instrumented(cfg, args)
            elif "memcheck" in checks:
                res, printed = self._launch_memcheck(cfg, args)
            elif instrumented:
                res, printed, counted = self._launch_instrumented(cfg, args)
            else:
                res, printed = self._launch_native(cfg, args)
        _emit_printf(printed)
        if res.code != EMU_OK:
            raise self._error(res, self.module._race_path if instrumented else self.module._lib_path)
        if recorder is not None and counted is not None:
            recorder._add(self.name, grid, block, counted)
        if race_inputs is not None:
            self._racecheck(cfg, args, race_inputs, arrays,
                            max(res.float_atomic_mag, 1e-30) if res.float_atomics else 0.0)

    def _launch_instrumented(self, cfg: LaunchCfg, args: list, race: bool = False):
        lib, entry = self._inst_entry()
        _set_arrays(lib, [a for a in args if isinstance(a, np.ndarray)])
        lib.emu_race_enable(1 if race else 0)
        try:
            res, printed = self._launch_native(cfg, args, entry)
        finally:
            lib.emu_race_enable(0)
        counted = None
        if cfg.flags & FLAG_COUNTERS:
            counted = Counters()
            lib.emu_counters_get(ctypes.byref(counted))
        return res, printed, counted

    # --- native (in-process) launch ----------------------------------------------
    def _launch_native(self, cfg: LaunchCfg, args: list, entry=None):
        slots = (ctypes.c_void_p * max(1, len(args)))()
        keep = []
        for i, a in enumerate(args):
            if isinstance(a, np.ndarray):
                if not a.flags.c_contiguous:
                    raise errors.ArgumentError(f"argument {i} must be C-contiguous", kernel=self.name, index=i)
                holder = ctypes.c_void_p(a.ctypes.data)
            else:
                value = np.asarray(a)
                if value.dtype == object or value.ndim != 0:
                    raise errors.ArgumentError(f"argument {i}: expected a numpy scalar or array, got {type(a).__name__}",
                                               kernel=self.name, index=i)
                holder = ctypes.create_string_buffer(value.tobytes(), max(8, value.nbytes))
            keep.append(holder)
            slots[i] = ctypes.addressof(holder)
        res = LaunchResult()
        (entry or self._entry)(ctypes.byref(cfg), ctypes.cast(slots, ctypes.c_void_p), ctypes.byref(res))
        printed = ctypes.string_at(res.printf_buf, res.printf_len) if res.printf_len else b""
        return res, printed

    # --- memcheck: ASan/UBSan runner subprocess -----------------------------------
    def _launch_memcheck(self, cfg: LaunchCfg, args: list):
        runner = self.module.runner()
        with tempfile.TemporaryDirectory(prefix="kernels-memcheck-") as tmp:
            job, out = Path(tmp) / "job.bin", Path(tmp) / "out.bin"
            allocs = _memory.allocations(args)
            with open(job, "wb") as f:
                f.write(b"EMUJOB2\0")
                f.write(np.int32(self.index).tobytes())
                f.write(bytes(cfg))
                f.write(np.int32(len(allocs)).tobytes())
                for al in allocs:
                    f.write(np.uint64(al.pad).tobytes())
                    f.write(np.uint64(al.nbytes).tobytes())
                    f.write(al.read())
                f.write(np.int32(len(args)).tobytes())
                for i, a in enumerate(args):
                    if isinstance(a, np.ndarray):
                        f.write(np.int32(1).tobytes())
                        f.write(np.int32(_memory.owner_of(allocs, i)).tobytes())
                        f.write(np.uint64(_memory.offset_of(allocs, args, i)).tobytes())
                        f.write(np.uint64(a.nbytes).tobytes())
                    else:
                        data = np.asarray(a).tobytes()
                        f.write(np.int32(0).tobytes())
                        f.write(np.uint64(len(data)).tobytes())
                        f.write(data)
            env = dict(os.environ)
            env["ASAN_OPTIONS"] = ("detect_leaks=0:halt_on_error=1:abort_on_error=0:symbolize=1:"
                                   "detect_stack_use_after_return=0:allow_user_segv_handler=0:"
                                   "print_summary=1:color=never")
            env["UBSAN_OPTIONS"] = "halt_on_error=1:abort_on_error=1:print_stacktrace=1:color=never"
            try:
                proc = subprocess.run([str(runner), str(job), str(out)], capture_output=True, text=True,
                                      env=env, timeout=float(cfg.timeout_s) + 60)
            except subprocess.TimeoutExpired:
                raise errors.KernelTimeout(f"kernel did not finish within {cfg.timeout_s:g} s (memcheck)",
                                           kernel=self.name)
            if not out.exists():
                names = self._param_names(len(args))
                info = parse_sanitizer_report(proc.stderr, str(runner), names)
                if info is None:
                    raise errors.KernelError(f"memcheck runner failed (exit {proc.returncode})", kernel=self.name,
                                             details=proc.stderr[-4000:])
                line = info.get("line")
                raise errors.OutOfBoundsError(info["message"], kernel=self.name, line=line,
                                              source_line=self._source_line(line), block=info.get("block"),
                                              thread=info.get("thread"), details=_trim_report(proc.stderr))
            blob = out.read_bytes()
        if blob[:8] != b"EMUOUT2\0":
            raise errors.KernelError("memcheck runner wrote a corrupt result file", kernel=self.name)
        pos = 8
        res = LaunchResult.from_buffer_copy(blob[pos:pos + ctypes.sizeof(LaunchResult)])
        pos += ctypes.sizeof(LaunchResult)
        plen = int(np.frombuffer(blob[pos:pos + 8], np.uint64)[0])
        pos += 8
        printed = blob[pos:pos + plen]
        pos += plen
        for al in allocs:
            n = int(np.frombuffer(blob[pos:pos + 8], np.uint64)[0])
            pos += 8
            al.write(blob[pos:pos + n])
            pos += n
        if res.code != EMU_OK and not res.line and res.pc:
            res.line = addr2line(str(runner), res.pc) or 0
        res.pc = 0   # an offset into the runner, not an address in this process
        return res, printed

    # --- racecheck ---------------------------------------------------------------
    def _racecheck(self, cfg: LaunchCfg, args: list, race_inputs: list, arrays: List[int], float_atomics: float):
        step = cfg.flags & (FLAG_STEP_SHARED | FLAG_STEP_GLOBAL)
        for k, (policy, (other, buffers)) in enumerate(zip(RACE_POLICIES, race_inputs)):
            # counters are the main launch's only; lockstep kernels run in lockstep under every schedule
            alt = LaunchCfg(cfg.grid, cfg.block, cfg.shared_mem, cfg.timeout_s, policy, cfg.flags & ~FLAG_COUNTERS)
            instrumented = k == 0
            with _LAUNCH_LOCK:
                lib = self.module.race_lib() if (instrumented or step) else None
                if lib is not None and instrumented:
                    entry = ctypes.cast(getattr(lib, f"emu_entry_{self.index}"), _ENTRY)
                    shadowed = list(buffers)   # one shadow per allocation: aliasing arguments share it
                    if sum(a.nbytes for a in shadowed) > GLOBAL_SHADOW_LIMIT_BYTES:
                        shadowed = []
                    _set_globals(lib, shadowed)
                    _set_arrays(lib, [other[j] for j in arrays])
                    lib.emu_race_enable(1)
                    try:
                        res, _ = self._launch_native(alt, other, entry)
                    finally:
                        lib.emu_race_enable(0)
                        _set_globals(lib, [])
                elif lib is not None:
                    res, _, _ = self._launch_instrumented(alt, other)
                else:
                    res, _ = self._launch_native(alt, other)
            if res.code == EMU_INTERRUPTED:
                raise KeyboardInterrupt(f"kernel {self.name} interrupted")
            if res.code == EMU_RACE:
                raise self._race_error(res, [(j, other[j]) for j in arrays])
            if res.code != EMU_OK:
                # a different (legal) thread order hit an error the default order did not: report it
                err = self._error(res, self.module._lib_path)
                raise errors.RaceError("the kernel fails only under another legal thread order: " + err.message,
                                       kernel=self.name, line=err.line, source_line=err.source_line,
                                       block=err.block, thread=err.thread)
            for i in arrays:
                a, b = args[i], other[i]
                if _same(a, b, float_atomics):
                    continue
                flat_a, flat_b = a.reshape(-1), b.reshape(-1)
                diff = np.flatnonzero(~_equal_mask(flat_a, flat_b, float_atomics))
                first = int(diff[0]) if diff.size else 0
                index = tuple(int(x) for x in np.unravel_index(first, a.shape)) if a.ndim > 1 else first
                pname = self._param_names(len(args))[i]
                accesses = self._watch_element(cfg, race_inputs[-1][0], i, first)
                writes = [h for h in accesses if h["write"]]
                where = writes or accesses
                line = where[0]["line"] if where else None
                details = "\n".join(
                    f"    {'write' if h['write'] else 'read'} at line {h['line']} x{h['count']}: first by block "
                    f"{h['first'][:3]} thread {h['first'][3:]}, last by block {h['last'][:3]} thread {h['last'][3:]}"
                    for h in accesses) or None
                raise errors.RaceError(
                    f"data race: output '{pname}' depends on the order threads run in; "
                    f"{diff.size} element(s) differ, first at index {index}: {flat_a[first]!r} "
                    f"(default order) vs {flat_b[first]!r} (other order). Look for threads (or blocks) writing "
                    f"the same location, or reading what another block writes, without atomics",
                    kernel=self.name, line=line, source_line=self._source_line(line),
                    block=where[0]["first"][:3] if where else None,
                    thread=where[0]["first"][3:] if where else None,
                    details=("accesses to that element:\n" + details) if details else None)

    def _watch_element(self, cfg: LaunchCfg, pristine: list, i: int, flat_index: int) -> list:
        """Re-run (instrumented, default order) watching one element; who touched it, from which lines."""
        arr = pristine[i]
        lo = arr.ctypes.data + flat_index * arr.itemsize
        lib = self.module.race_lib()
        if lib is None:
            return []
        _set_globals(lib, [])
        lib.emu_race_watch(ctypes.c_ulonglong(lo), ctypes.c_ulonglong(lo + arr.itemsize))
        entry = ctypes.cast(getattr(lib, f"emu_entry_{self.index}"), _ENTRY)
        watch_cfg = LaunchCfg(cfg.grid, cfg.block, cfg.shared_mem, cfg.timeout_s, 0, cfg.flags & ~FLAG_COUNTERS)
        with _LAUNCH_LOCK:
            _set_arrays(lib, [a for a in pristine if isinstance(a, np.ndarray)])
            lib.emu_race_enable(1)
            try:
                self._launch_native(watch_cfg, pristine, entry)
            finally:
                lib.emu_race_enable(0)
        pcs = (ctypes.c_ulonglong * 8)()
        wc = (ctypes.c_int * 16)()
        where = (ctypes.c_uint * 96)()
        n = lib.emu_race_watch_get(pcs, wc, where, 8)
        lib.emu_race_watch(ctypes.c_ulonglong(0), ctypes.c_ulonglong(0))
        path = str(self.module._race_path)
        base = load_base(path)
        hits = []
        for k in range(n):
            line = addr2line(path, pcs[k] - 1 - base) if base is not None and pcs[k] > base else None
            hits.append({"line": line, "write": bool(wc[2 * k]), "count": int(wc[2 * k + 1]),
                         "first": tuple(where[12 * k:12 * k + 6]), "last": tuple(where[12 * k + 6:12 * k + 12])})
        return hits

    def _race_error(self, res: LaunchResult, arrays: list) -> errors.RaceError:
        path = str(self.module._race_path)
        base = load_base(path)

        def line_of(pc):   # pc is a return address: look up the call instruction
            return addr2line(path, pc - 1 - base) if (pc and base is not None and pc > base) else None
        line, line2 = line_of(res.pc), line_of(res.pc2)
        kind = {1: ("read", "write"), 2: ("write", "read"), 3: ("write", "write")}.get(res.race_kind, ("access", "access"))
        where = ""
        names = self._param_names(len(self.params) if self.params else max([j for j, _ in arrays], default=-1) + 1)
        for j, a in arrays:   # name the global array and element
            start = a.ctypes.data
            if start <= res.addr < start + max(a.nbytes, 1):
                flat = (res.addr - start) // a.itemsize
                idx = np.unravel_index(flat, a.shape) if a.ndim > 1 else flat
                where = f" on '{names[j]}' index {tuple(int(v) for v in idx) if a.ndim > 1 else int(idx)}"
        t2, b2 = tuple(res.thread2), tuple(res.block2)
        details = (f"this {kind[0]} (line {line}, block {tuple(res.block)}, thread {tuple(res.thread)}) conflicts "
                   f"with the {kind[1]} at line {line2} by block {b2}, thread {t2}")
        if line2:
            details += f"\n    {line2}: {(self._source_line(line2) or '').rstrip()}"
        return errors.RaceError(res.message.decode(errors="replace") + where + f" (other access: line {line2})",
                                kernel=self.name, line=line, source_line=self._source_line(line),
                                block=tuple(res.block), thread=tuple(res.thread), details=details)

    # --- helpers -------------------------------------------------------------------
    def _param_names(self, n: int) -> List[str]:
        if self.params:
            return [getattr(p, "name", f"argument {i}") for i, p in enumerate(self.params)]
        return [f"argument {i}" for i in range(n)]

    def _source_line(self, line: Optional[int]) -> Optional[str]:
        lines = self.module.code.splitlines()
        if line and 0 < line <= len(lines):
            return lines[line - 1]
        return None

    def _error(self, res: LaunchResult, lib_path: Optional[Path]) -> Exception:
        if res.code == EMU_INTERRUPTED:
            return KeyboardInterrupt(f"kernel {self.name} interrupted")
        line = res.line or None
        if not line and res.pc and lib_path is not None:
            base = load_base(str(lib_path))
            if base is not None and res.pc >= base:
                line = addr2line(str(lib_path), res.pc - base)
        msg = res.message.decode(errors="replace")
        cls = {EMU_DEADLOCK: errors.DeadlockError, EMU_SHUFFLE_MASK: errors.ShuffleMaskError,
               EMU_TIMEOUT: errors.KernelTimeout, EMU_FAULT: errors.OutOfBoundsError,
               EMU_ASSERT: errors.DeviceAssertError, EMU_TRAP: errors.DeviceAssertError,
               EMU_LAUNCH: errors.LaunchError, EMU_UNSUPPORTED: errors.UnsupportedFeatureError,
               EMU_SYNCCHECK: errors.SyncCheckError}.get(res.code, errors.KernelError)
        kw = {}
        if res.code not in (EMU_LAUNCH,):
            kw = dict(block=tuple(res.block), thread=tuple(res.thread))
        if res.line2 and res.line2 != line:   # the other source line of a barrier / warp-op finding
            kw["details"] = f"    {res.line2}: {(self._source_line(res.line2) or '').rstrip()}"
            kw["line2"] = int(res.line2)
        return cls(msg, kernel=self.name, line=line, source_line=self._source_line(line), **kw)


def _set_arrays(lib, arrays: list) -> None:
    """The launch's arrays: global memory for lockstep and the memory counters."""
    pairs = (ctypes.c_ulonglong * max(1, 2 * len(arrays)))()
    for k, a in enumerate(arrays):
        pairs[2 * k], pairs[2 * k + 1] = a.ctypes.data, a.ctypes.data + a.nbytes
    lib.emu_set_launch_arrays(pairs, len(arrays))


def _set_globals(lib, arrays: list) -> None:
    pairs = (ctypes.c_ulonglong * max(1, 2 * len(arrays)))()
    for k, a in enumerate(arrays):
        pairs[2 * k], pairs[2 * k + 1] = a.ctypes.data, a.ctypes.data + a.nbytes
    lib.emu_race_set_globals(pairs, len(arrays))


def _equal_mask(a: np.ndarray, b: np.ndarray, tolerant: float) -> np.ndarray:
    """`tolerant`: 0 for exact, else the largest magnitude a float atomic saw in the launch."""
    if tolerant and a.dtype == np.uint16:
        # with float atomics, a uint16 output is almost always bf16 storage (numpy has no bfloat16)
        as_f = lambda u: (u.astype(np.uint32) << 16).view(np.float32)
        fa, fb = as_f(a), as_f(b)
        same = (a == b) | (np.isnan(fa) & np.isnan(fb))
        scale = max(float(np.nanmax(np.abs(fa))) if a.size else 0.0, float(tolerant), 1e-30)
        return same | (np.abs(fa.astype(np.float64) - fb.astype(np.float64)) <= 5e-2 * scale)
    if a.dtype.kind in "fc":
        same = (a == b) | (np.isnan(a) & np.isnan(b))
        if tolerant:   # float atomics: accumulation order legitimately changes rounding
            # relative to the largest partial sum, not just the result: a sum that cancels to
            # nearly 0 keeps the rounding error of its large intermediate values
            scale = max(float(np.nanmax(np.abs(a))) if a.size else 0.0, float(tolerant), 1e-30)
            rel = 5e-2 if a.dtype == np.float16 else 1e-5   # 16-bit: rounding at every step
            same |= np.abs(a.astype(np.float64) - b.astype(np.float64)) <= rel * scale
        return same
    return a == b


def _same(a: np.ndarray, b: np.ndarray, tolerant: float) -> bool:
    if a.tobytes() == b.tobytes():
        return True
    return bool(np.all(_equal_mask(a.reshape(-1), b.reshape(-1), tolerant)))


def _emit_printf(data: bytes) -> None:
    if data:
        sys.stdout.write(data.decode("utf-8", errors="replace"))
        sys.stdout.flush()


def _trim_report(text: str, limit: int = 4000) -> str:
    """The sanitizer report without the shadow-byte dump and library frames."""
    keep = []
    for l in text.splitlines():
        if l.startswith("Shadow bytes around"):
            break
        if l.startswith(("EMU-ARG", "EMU-ALLOC")) or " in std::" in l or " in emu::" in l or "/include/c++/" in l:
            continue
        keep.append(l)
    return "\n".join(keep)[-limit:]
