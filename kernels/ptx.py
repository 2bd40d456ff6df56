"""Which kernels rely on the lanes of a warp advancing together (issue 21), read from NVRTC's PTX.

The CPU emulator runs each lane until it blocks; the GPU runs a converged warp's lanes together. The two
give the same result unless a lane reads, with no warp or block synchronisation in between, what another
lane of its warp has just written: the legacy warp-synchronous reduction (``volatile`` shared memory,
no ``__syncwarp``), or ``if (lane == 0) out[i] = v;`` followed by every lane reading ``out``. Those
kernels are run in lockstep (an instrumented build; slower), every other kernel as before.

The test is on the GPU compiler's own output: a path in the kernel's PTX from a shared (global) store
to a shared (global) load that crosses no ``bar.sync``, ``bar.warp.sync``, ``shfl.sync``, ``vote.sync``,
``match.sync`` or ``redux.sync``. For global memory the store and the load must also be able to reach
the same array: each address is traced back to the kernel parameters it is computed from, and at launch
the parameters are compared (a kernel writing ``y`` and reading ``x`` never runs in lockstep unless the
caller passes one array as both). ``ld.global.nc`` (``__ldg``, ``const __restrict__``) cannot see the
kernel's own stores and is not a load here.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, FrozenSet, List, Optional, Sequence, Set, Tuple

VERSION = 1        # part of the NVRTC front end's cache key: bump when the analysis changes

UNKNOWN = -1       # an address not traced to one parameter (a pointer loaded from memory, a .func parameter)
SHARED = -2        # an address computed from a shared variable's symbol (or cvta.shared)
SYMBOL = -3        # an address computed from another variable's symbol (__device__ / __constant__ data)

_FUNC = re.compile(r"(?:^|\n)\s*(?:\.visible\s+|\.weak\s+|\.extern\s+)*\.(entry|func)\s+(?:\([^)]*\)\s*)?([\w$.]+)\s*\(")
_PARAM = re.compile(r"_param_(\d+)\b")
_REG = re.compile(r"%[\w.]+")
_SYNC = ("bar.sync", "barrier.sync", "bar.red", "barrier.red", "bar.warp.sync", "shfl.sync", "vote.sync",
         "match.sync", "redux.sync", "barrier.cta.sync", "barrier.cta.red", "bar.cta.sync", "bar.cta.red")
_SPACES = ("global", "shared", "local", "param", "const")


@dataclass
class Analysis:
    """What one kernel's PTX needs: lockstep on shared memory, and the (stored, loaded) parameter sets of
    global store -> load paths (lockstep on global memory when the launch lets them meet)."""
    shared: bool = False
    pairs: List[Tuple[Tuple[int, ...], Tuple[int, ...]]] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"shared": self.shared, "pairs": [[list(s), list(l)] for s, l in self.pairs]}

    @classmethod
    def from_json(cls, d: dict) -> "Analysis":
        return cls(bool(d.get("shared")), [(tuple(s), tuple(l)) for s, l in d.get("pairs", [])])


def _functions(ptx: str) -> Dict[str, Tuple[str, bool]]:
    """name -> (body, is_entry) for every function with a body."""
    out = {}
    for m in _FUNC.finditer(ptx):
        kind, name = m.group(1), m.group(2)
        i, depth = m.end(), 1
        while i < len(ptx) and depth:           # the parameter list
            depth += {"(": 1, ")": -1}.get(ptx[i], 0)
            i += 1
        j = i
        while j < len(ptx) and ptx[j] in " \t\r\n":
            j += 1
        while j < len(ptx) and ptx[j] == ".":   # directives such as .maxntid 256, 1, 1
            k = ptx.find("\n", j)
            j = len(ptx) if k < 0 else k
            while j < len(ptx) and ptx[j] in " \t\r\n":
                j += 1
        if j >= len(ptx) or ptx[j] != "{":
            continue                            # a prototype
        depth, k = 0, j
        while k < len(ptx):
            if ptx[k] == "{":
                depth += 1
            elif ptx[k] == "}":
                depth -= 1
                if depth == 0:
                    break
            k += 1
        out[name] = (ptx[j + 1:k], kind == "entry")
    return out


@dataclass
class _Insn:
    op: str
    args: List[str]
    pred: bool
    label: Optional[str] = None


def _parse(body: str) -> Tuple[List[_Insn], Dict[str, int]]:
    insns: List[_Insn] = []
    labels: Dict[str, int] = {}
    text = re.sub(r"//[^\n]*", "", body)
    for stmt in text.replace("{", ";").replace("}", ";").split(";"):
        stmt = stmt.strip()
        while True:
            m = re.match(r"^([$\w.]+):\s*", stmt)
            if not m:
                break
            labels[m.group(1)] = len(insns)
            stmt = stmt[m.end():]
        if not stmt or stmt.startswith("."):
            continue
        pred = False
        if stmt.startswith("@"):
            pred = True
            stmt = stmt.split(None, 1)[1] if " " in stmt else ""
        parts = stmt.split(None, 1)
        if not parts:
            continue
        op = parts[0]
        args = [a.strip() for a in parts[1].split(",")] if len(parts) > 1 else []
        insns.append(_Insn(op, args, pred))
    return insns, labels


def _space(op: str) -> Optional[str]:
    q = op.split(".")
    for s in _SPACES:
        if s in q:
            return s
    return "generic"


def _addr_reg(args: Sequence[str]) -> Optional[str]:
    for a in args:
        if a.startswith("["):
            m = _REG.search(a)
            return m.group(0) if m else None
    return None


def _provenance(insns: List[_Insn], is_entry: bool, shared_syms: Set[str]) -> Dict[str, FrozenSet[int]]:
    """Flow-insensitive: which parameters each register's value may be computed from."""
    prov: Dict[str, Set[int]] = {}
    changed = True
    while changed:
        changed = False
        for ins in insns:
            if not ins.args or not ins.args[0].startswith("%"):
                continue
            dst = ins.args[0]
            base = ins.op.split(".")[0]
            new: Set[int] = set()
            if base == "ld" and _space(ins.op) == "param":
                m = _PARAM.search(ins.args[1]) if len(ins.args) > 1 else None
                wide = any(t in ins.op.split(".") for t in ("u64", "b64", "s64"))
                # only 64-bit parameters can be pointers; an int parameter in an index adds nothing
                new = ({int(m.group(1))} if (m and is_entry) else {UNKNOWN}) if wide else set()
            elif base == "mov" and len(ins.args) > 1 and re.match(r"^[A-Za-z_$][\w$]*$", ins.args[1]):
                new = {SHARED if ins.args[1] in shared_syms else SYMBOL}
            elif base == "cvta" and "shared" in ins.op.split("."):
                new = {SHARED}
            elif base in ("ld", "atom") and any(t in ins.op.split(".") for t in ("u64", "b64", "s64")):
                new = {UNKNOWN}                   # a pointer read from memory
            elif base in ("ld", "atom", "st", "red", "call", "bra", "setp", "set", "shfl", "vote", "match",
                          "redux", "bar", "barrier"):
                continue
            else:
                for a in ins.args[1:]:
                    for r in _REG.findall(a):
                        new |= prov.get(r, set())
            old = prov.setdefault(dst, set())
            if not new <= old:
                old |= new
                changed = True
    return {k: frozenset(v) for k, v in prov.items()}


def _summaries(funcs: Dict[str, Tuple[List[_Insn], Dict[str, int], bool]]) -> Dict[str, Tuple[bool, bool]]:
    """(touches shared/global/generic memory, stores to it) per function, callees included."""
    out = {}
    for name, (insns, _, _) in funcs.items():
        mem = store = False
        for ins in insns:
            b = ins.op.split(".")[0]
            if b in ("ld", "st", "atom", "red", "cp") and _space(ins.op) in ("global", "shared", "generic"):
                mem = True
                store |= b in ("st", "atom", "red", "cp")
        out[name] = (mem, store)
    for _ in range(len(funcs)):
        for name, (insns, _, _) in funcs.items():
            mem, store = out[name]
            for ins in insns:
                if ins.op.split(".")[0] == "call":
                    callee = next((a.strip("() ") for a in ins.args if a.strip("() ") in funcs), None)
                    if callee:
                        cm, cs = out[callee]
                        mem, store = mem or cm, store or cs
                    else:
                        mem = store = True
            out[name] = (mem, store)
    return out


def analyse(ptx: str) -> Dict[str, Analysis]:
    """Analysis per ``.entry`` (mangled name, as NVRTC's lowered names give it)."""
    shared_syms = set(re.findall(r"\.shared\s+(?:\.align\s+\d+\s+)?\.\w+\s+([\w$]+)", ptx))
    raw = _functions(ptx)
    funcs = {}
    for name, (body, is_entry) in raw.items():
        insns, labels = _parse(body)
        funcs[name] = (insns, labels, is_entry)
    sums = _summaries(funcs)
    result = {}
    for name, (insns, labels, is_entry) in funcs.items():
        if is_entry:
            result[name] = _analyse_one(insns, labels, _provenance(insns, True, shared_syms), funcs, sums)
    return result


def _analyse_one(insns, labels, prov, funcs, sums) -> Analysis:
    n = len(insns)
    # state per instruction entry: (shared store pending, parameters of pending global stores)
    states: List[Optional[Tuple[bool, FrozenSet[int]]]] = [None] * (n + 1)
    states[0] = (False, frozenset())
    work = [0]
    shared_flag = False
    pairs: Set[Tuple[Tuple[int, ...], Tuple[int, ...]]] = set()

    def addr_prov(ins) -> FrozenSet[int]:
        r = _addr_reg(ins.args)
        if r is None:
            return frozenset({SYMBOL})  # [symbol+offset]: a variable of the module, not a parameter
        p = prov.get(r, frozenset())
        return p if p else frozenset({UNKNOWN})

    def spaces(ins, sp) -> Tuple[bool, bool]:
        """(may be shared, may be global) for an access in state space sp."""
        if sp != "generic":
            return sp == "shared", sp == "global"
        p = addr_prov(ins)
        return SHARED in p or UNKNOWN in p, bool(p - {SHARED})

    def push(i, st):
        if i > n:
            return
        old = states[i]
        new = st if old is None else (old[0] or st[0], old[1] | st[1])
        if new != old:
            states[i] = new
            work.append(i)

    while work:
        i = work.pop()
        if i >= n:
            continue
        sh, gl = states[i]
        ins = insns[i]
        base = ins.op.split(".")[0]
        q = ins.op.split(".")
        sp = _space(ins.op)
        nxt = [i + 1]
        if any(ins.op.startswith(s) for s in _SYNC):
            sh, gl = False, frozenset()
        elif base == "ld" and sp in ("shared", "global", "generic") and "nc" not in q:
            is_sh, is_gl = spaces(ins, sp)
            if is_sh and sh:
                shared_flag = True
            if is_gl and gl:
                pairs.add((tuple(sorted(gl)), tuple(sorted(addr_prov(ins) - {SHARED}))))
        elif base in ("st", "atom", "red") and sp in ("shared", "global", "generic"):
            is_sh, is_gl = spaces(ins, sp)
            if base == "atom" and is_sh and sh:
                shared_flag = True       # an atomic also reads
            if is_sh:
                sh = True
            if is_gl:
                gl = gl | (addr_prov(ins) - {SHARED})
        elif base == "call":
            callee = next((a.strip("() ") for a in ins.args if a.strip("() ") in funcs), None)
            mem, store = sums.get(callee, (True, True)) if callee else (True, True)
            if mem and (sh or gl):
                shared_flag |= sh
                if gl:
                    pairs.add((tuple(sorted(gl)), (UNKNOWN,)))
            if store:
                sh, gl = True, gl | {UNKNOWN}
        elif base == "bra":
            target = ins.args[-1] if ins.args else None
            nxt = ([labels[target]] if target in labels else []) + ([i + 1] if ins.pred else [])
        elif base in ("ret", "exit", "trap"):
            nxt = [i + 1] if ins.pred else []
        for j in nxt:
            push(j, (sh, gl))
    return Analysis(shared_flag, sorted(pairs))


def may_alias(stored: Sequence[int], loaded: Sequence[int], arrays: Dict[int, Tuple[int, int]]) -> bool:
    """Can a store through the parameters ``stored`` meet a load through ``loaded`` in this launch?
    ``arrays``: parameter index -> (first byte, end) of the array passed there."""
    if UNKNOWN in stored or UNKNOWN in loaded:
        return True
    if SYMBOL in stored and SYMBOL in loaded:
        return True                     # a __device__ variable written, then read
    for s in stored:
        for l in loaded:
            if s == l and s in arrays:
                return True
            a, b = arrays.get(s), arrays.get(l)
            if a and b and a[0] < b[1] and b[0] < a[1]:
                return True
    return False


__all__ = ["Analysis", "analyse", "may_alias", "UNKNOWN"]
