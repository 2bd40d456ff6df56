"""Turning emulator outcomes into kernels.errors: PC -> user line (addr2line),
ASan/UBSan reports of the memcheck runner -> OutOfBoundsError."""
from __future__ import annotations

import os
import re
import subprocess
from functools import lru_cache
from typing import List, Optional, Sequence, Tuple

from .build import USER_FILE


@lru_cache(maxsize=4096)
def addr2line(binary: str, offset: int) -> Optional[int]:
    """User source line for a code offset in `binary` (innermost inlined frame in kernel.cu)."""
    try:
        out = subprocess.run(["addr2line", "-i", "-e", binary, hex(offset)],
                             capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for line in out.splitlines():
        m = re.match(r"^(.*):(\d+)", line.strip())
        if m and os.path.basename(m.group(1)) == USER_FILE and int(m.group(2)) > 0:
            return int(m.group(2))
    return None


def load_base(path: str) -> Optional[int]:
    """Load address of a shared object in this process (for PC -> file offset)."""
    real = os.path.realpath(path)
    try:
        with open("/proc/self/maps") as f:
            for row in f:
                parts = row.split()
                if len(parts) >= 6 and os.path.realpath(parts[5]) == real and int(parts[2], 16) == 0:
                    return int(parts[0].split("-")[0], 16)
    except OSError:
        pass
    return None


_ASAN_HEAD = re.compile(r"ERROR: AddressSanitizer: ([\w-]+) on (?:unknown )?address (0x[0-9a-f]+)")
_ACCESS = re.compile(r"(READ|WRITE) of size (\d+) at (0x[0-9a-f]+)")
_FRAME = re.compile(r"^\s*#(\d+) (0x[0-9a-f]+) in (.*?) (\S+?):(\d+)(?::\d+)?\s*$", re.M)
_FRAME_RAW = re.compile(r"^\s*#(\d+) (0x[0-9a-f]+)\s+\((\S+)\+(0x[0-9a-f]+)\)", re.M)
_UBSAN = re.compile(r"(\S+?):(\d+):(\d+): runtime error: (.*)")
_CONTEXT = re.compile(r"EMU-CONTEXT block=(\d+),(\d+),(\d+) thread=(\d+),(\d+),(\d+)")
_ARG = re.compile(r"EMU-ARG (\d+) (0x[0-9a-f]+) (\d+)")
_ALLOC = re.compile(r"EMU-ALLOC (\d+) (0x[0-9a-f]+) (\d+) (\d+)")
_GLOBAL = re.compile(r"is located (\d+) bytes (?:to the right|after|to the left|before) of global variable '([^']+)'")
_REGION = re.compile(r"is located (\d+) bytes (to the right of|after|to the left of|before) (\d+)-byte region \[(0x[0-9a-f]+),")


def parse_sanitizer_report(text: str, binary: str, param_names: Sequence[str]) -> Optional[dict]:
    """Extract what, where (user line), which block/thread and which array from a report."""
    ub = _UBSAN.search(text)
    asan = _ASAN_HEAD.search(text)
    if not ub and not asan:
        return None
    info: dict = {"line": None, "block": None, "thread": None}
    ctx = _CONTEXT.search(text)
    if ctx:
        v = tuple(int(x) for x in ctx.groups())
        info["block"], info["thread"] = v[:3], v[3:]
    if ub and (not asan or ub.start() < asan.start()):
        if os.path.basename(ub.group(1)) == USER_FILE:
            info["line"] = int(ub.group(2))
        what = ub.group(4).strip()
        if "misaligned" in what:
            info["message"] = f"misaligned memory access: {what}"
        else:
            info["message"] = f"undefined behaviour: {what}"
        return info
    kind, addr = asan.group(1), int(asan.group(2), 16)
    acc = _ACCESS.search(text)
    rw, size = (acc.group(1).lower(), int(acc.group(2))) if acc else ("access", 0)
    info["line"] = _first_user_line(text[asan.start():], binary)
    g = _GLOBAL.search(text)
    r = _REGION.search(text)
    # the poisoned bytes in front of an allocation (kept so it starts at its own address modulo 256)
    in_pad = any(int(m.group(2), 16) <= addr < int(m.group(2), 16) + int(m.group(3))
                 for m in _ALLOC.finditer(text))
    if kind == "use-after-poison" and not in_pad:
        where = "dynamic shared memory (extern __shared__) beyond the launch's shared_mem bytes"
    elif g:
        name = g.group(2)
        where = f"shared/global variable '{name}' ({g.group(1)} bytes past its end)"
    elif r or in_pad:
        near = _nearest_array(addr, text, size)
        if near is not None:
            i, nbytes, dist, side = near
            pname = param_names[i] if i < len(param_names) else f"argument {i}"
            where = f"array '{pname}' ({nbytes} bytes), {dist} bytes {side}"
        else:
            side = "before the start" if ("left" in r.group(2) or "before" in r.group(2)) else "past the end"
            where = f"a {r.group(3)}-byte buffer, {r.group(1)} bytes {side}"
    elif kind == "SEGV":
        where = "an unmapped address"
    else:
        where = kind
    verb = {"read": "read", "write": "write"}.get(rw, "access")
    info["message"] = f"out-of-bounds {verb} of {size} bytes at 0x{addr:x}: {where}"
    info["kind"] = kind
    return info


def _nearest_array(addr: int, text: str, size: int = 0):
    """``(argument, nbytes, distance, side)`` of the array argument a bad access belongs to: the one it
    starts in and runs off the end of (a 16-byte load at the last float), else the one it is nearest to.
    "past the end" counts from the first byte after the array (0 = the next byte), "before the start"
    from its first byte."""
    best = None
    for m in _ARG.finditer(text):
        i, start, nbytes = int(m.group(1)), int(m.group(2), 16), int(m.group(3))
        if addr >= start + nbytes:
            cand = (addr - start - nbytes, i, nbytes, "past the end")
        elif addr < start:
            cand = (start - addr, i, nbytes, "before the start")
        elif addr + max(size, 1) > start + nbytes:
            cand = (0, i, nbytes, "past the end")       # starts inside, runs off the end
        else:
            continue
        if best is None or cand[0] < best[0]:
            best = cand
    if best is None:
        return None
    dist, i, nbytes, side = best
    return i, nbytes, dist, side


def _first_user_line(report: str, binary: str) -> Optional[int]:
    frames: List[Tuple[int, Optional[int]]] = []
    for m in _FRAME.finditer(report):
        if os.path.basename(m.group(4)) == USER_FILE:
            return int(m.group(5))
    for m in _FRAME_RAW.finditer(report):
        if os.path.basename(m.group(3)) == os.path.basename(binary):
            line = addr2line(binary, int(m.group(4), 16))
            if line:
                return line
    return None


_RUNTIME_PREFIXES = ("_ZN3emu", "_ZZN3emu", "_ZZ12emu_", "emu_", "_ZGV", "_ZTV", "_ZTI", "_ZTS", "__", "_ZNSt",
                     "_ZSt", "_ZZNSt", "_ZN9__gnu", "_ZN10__cxxabiv", "DW.ref.", "completed.")


@lru_cache(maxsize=256)
def user_static_objects(binary: str) -> Tuple[Tuple[int, int, str], ...]:
    """(offset, size, name) of writable static objects defined by the user's code
    (static __shared__ variables and device globals) in `binary`."""
    try:
        out = subprocess.run(["nm", "-S", "--defined-only", binary], capture_output=True, text=True,
                             timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return ()
    objs = []
    for row in out.splitlines():
        parts = row.split()
        if len(parts) != 4 or parts[2] not in "bBdDVvu" or parts[3].startswith(_RUNTIME_PREFIXES):
            continue
        objs.append((int(parts[0], 16), int(parts[1], 16), parts[3]))
    return tuple(objs)
