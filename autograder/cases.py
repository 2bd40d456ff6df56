"""Case families: make inputs from grading_rubric.yaml, launch the learner's
kernels, compare with float64 references.

Everything random comes from one ``numpy.random.Generator`` seeded per run;
the seed is part of every result so a failure can be replayed.  Messages shown
to learners name the family and the error size, never the hidden inputs.
"""
from __future__ import annotations

import ast
import math
import os
import secrets
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional

import numpy as np

from . import messages, references

DEFAULT_TOL = {"atol": 1e-5, "rtol": 1e-5}
DEFAULT_OPTIONS = ("-std=c++17",)


def new_seed() -> int:
    """The run's seed: AUTOGRADER_SEED when set (grader / replay), else fresh."""
    env = os.environ.get("AUTOGRADER_SEED", "").strip()
    return int(env) if env else secrets.randbelow(2**31 - 1)


# ----------------------------------------------------------------------------- expressions

class ExprError(ValueError):
    pass


_ALLOWED = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Call,
            ast.Name, ast.Load, ast.Constant, ast.Tuple, ast.List, ast.Subscript, ast.Slice,
            ast.operator, ast.unaryop, ast.boolop, ast.cmpop, ast.keyword)


def _bf16_bits(values) -> np.ndarray:
    """float -> bfloat16 bit patterns (round to nearest even), as uint16."""
    f = np.ascontiguousarray(np.asarray(values, dtype=np.float32))
    u = f.view(np.uint32).astype(np.uint64)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(f)
    if nan.any():
        rounded = np.where(nan, np.uint16(0x7FC0), rounded)
    return rounded


def bf16_to_float32(bits) -> np.ndarray:
    b = np.asarray(bits)
    if b.dtype != np.uint16:  # ml_dtypes.bfloat16
        return b.astype(np.float32)
    return (b.astype(np.uint32) << 16).view(np.float32)


def _bf16_dtype():
    try:
        import ml_dtypes  # optional
        return np.dtype(ml_dtypes.bfloat16)
    except Exception:
        return np.dtype(np.uint16)


class _Index:
    def __getitem__(self, key):
        return key


class Evaluator:
    """Restricted expression evaluation over case params with a seeded RNG."""

    def __init__(self, rng: np.random.Generator, names: Optional[Dict[str, Any]] = None):
        self.rng = rng
        self.names: Dict[str, Any] = dict(names or {})
        bf16 = _bf16_dtype()
        self.funcs = {
            "randint": lambda a, b: int(rng.integers(int(a), int(b) + 1)),
            "choice": lambda seq: seq[int(rng.integers(0, len(seq)))],
            "uniform": lambda a, b: float(rng.uniform(a, b)),
            "ceil_div": lambda a, b: -(-int(a) // int(b)),
            "min": min, "max": max, "abs": abs, "int": int, "float": float, "round": round, "len": len,
            "int32": np.int32, "int64": np.int64, "uint32": np.uint32, "float16": np.float16,
            "float32": np.float32, "float64": np.float64,
            "bfloat16": lambda v: (np.asarray(v, np.float32).astype(bf16) if bf16 != np.uint16
                                   else _bf16_bits([v])[0]),
            "IDX": _Index(),
        }
        self.consts = {"nan": math.nan, "inf": math.inf, "pi": math.pi, "True": True, "False": False}

    def __call__(self, expr):
        if isinstance(expr, (int, float, bool)) or expr is None:
            return expr
        if isinstance(expr, list):
            return [self(e) for e in expr]
        tree = ast.parse(str(expr), mode="eval")
        for node in ast.walk(tree):
            if not isinstance(node, _ALLOWED):
                raise ExprError(f"{expr!r}: {type(node).__name__} is not allowed in rubric expressions")
            if isinstance(node, ast.Call) and not isinstance(node.func, ast.Name):
                raise ExprError(f"{expr!r}: only plain function calls are allowed")
        env = {**self.consts, **self.funcs, **self.names}
        try:
            return eval(compile(tree, "<rubric>", "eval"), {"__builtins__": {}}, env)
        except NameError as exc:
            raise ExprError(f"{expr!r}: {exc}") from None

    def index(self, text: str):
        return self(f"IDX[{text}]")


# ----------------------------------------------------------------------------- arrays

def _dtype(name: str):
    if name == "bfloat16":
        return None
    return np.dtype({"bool": np.bool_}.get(name, name))


def _draw(dist: Dict[str, Any], shape, ev: Evaluator) -> np.ndarray:
    (kind, spec), = dist.items()
    spec = {k: ev(v) for k, v in (spec or {}).items()}
    rng = ev.rng
    n = int(np.prod(shape)) if shape else 1
    if kind == "normal":
        mean, std = spec.get("mean", 0.0), spec.get("std", 1.0)
        vals = rng.normal(mean, std, size=shape)
        if spec.get("exact") and shape and shape[-1] > 1:
            # each row (last axis) shifted and scaled to exactly this mean and (population) std: a short row of
            # a random draw can have a tiny sample variance, where a correct but ill-conditioned formula (the
            # two-moment variance a lesson teaches) legitimately misses a tight tolerance
            z = vals - vals.mean(axis=-1, keepdims=True)
            vals = mean + std * z / np.sqrt((z * z).mean(axis=-1, keepdims=True))
        return vals
    if kind == "uniform":
        return rng.uniform(spec.get("low", 0.0), spec.get("high", 1.0), size=shape)
    if kind == "constant":
        return np.full(shape, spec.get("value", 0.0), dtype=np.float64)
    if kind == "values":
        vals = np.asarray(spec["list"], dtype=np.float64).ravel()
        return np.resize(vals, n).reshape(shape)
    if kind == "linspace":
        return np.linspace(spec.get("start", 0.0), spec.get("stop", 1.0), n).reshape(shape)
    if kind == "randint":
        return rng.integers(int(spec.get("low", 0)), int(spec.get("high", 10)) + 1, size=shape)
    if kind == "bernoulli":
        return (rng.random(size=shape) < spec.get("p", 0.5)).astype(np.float64)
    raise ExprError(f"unknown distribution {kind!r}")


def make_array(spec: Dict[str, Any], ev: Evaluator) -> np.ndarray:
    """One host array, already in its storage dtype (bfloat16 -> uint16 bits / ml_dtypes)."""
    shape = ev(spec["shape"])
    shape = (int(shape),) if np.isscalar(shape) else tuple(int(s) for s in shape)
    if "fill" in spec:
        fill = spec["fill"]
        vals = np.full(shape, ev(fill) if isinstance(fill, str) else fill, dtype=np.float64)
    elif "dist" in spec:
        vals = np.asarray(_draw(spec["dist"], shape, ev), dtype=np.float64)
    else:
        vals = np.zeros(shape, dtype=np.float64)
    for s in spec.get("set") or []:
        value = ev(s["value"]) if isinstance(s["value"], str) else s["value"]
        vals[ev.index(str(s["index"]))] = value
    dt = spec["dtype"]
    if dt == "bfloat16":
        bits = _bf16_bits(vals)
        bf = _bf16_dtype()
        return np.ascontiguousarray(bits.view(bf) if bf != np.uint16 else bits)
    return np.ascontiguousarray(vals.astype(_dtype(dt)))


def to_float64(arr: np.ndarray, dtype_name: str) -> np.ndarray:
    if dtype_name == "bfloat16":
        return bf16_to_float32(arr).astype(np.float64)
    return np.asarray(arr).astype(np.float64)


# ----------------------------------------------------------------------------- results

@dataclass
class FamilyResult:
    family: str
    passed: bool
    reason: str = ""
    max_error: Optional[float] = None
    error_kind: Optional[str] = None       # kernels.errors kind, "mismatch", "unwritten", "nan", ...
    # evidence of the failing draw (what a student needs to find the bug); JSON-safe: non-finite
    # values are the strings "NaN" / "inf" / "-inf" (a bare NaN in a notebook output breaks JupyterLab)
    params: Optional[Dict[str, Any]] = None    # the case's evaluated params, e.g. {"M": 3, "N": 300, "eps": 1e-05}
    shapes: Optional[Dict[str, List[int]]] = None   # every array of the draw
    output: Optional[str] = None               # the output compared
    index: Optional[List[int]] = None          # first mismatching element (row-major order)
    expected: Any = None
    got: Any = None
    tol: Optional[Dict[str, float]] = None     # {"atol", "rtol", "at_index": atol + rtol * |expected|}
    mismatches: Optional[int] = None           # how many elements failed, of ``size``
    size: Optional[int] = None
    diagnostic: Optional[Dict[str, Any]] = None   # runtime/compile diagnostic: kind, kernel, line, source_line, block, thread

    def to_dict(self):
        return asdict(self)


@dataclass
class ItemResult:
    item: str
    passed: bool
    seed: int
    families: List[FamilyResult] = field(default_factory=list)

    @property
    def summary(self) -> str:
        bad = [f.reason for f in self.families if not f.passed]
        if not bad:
            return f"全部 {len(self.families)} 个用例族通过"
        return "；\n".join(bad) + f"\n（随机种子 seed={self.seed}，可用 AUTOGRADER_SEED={self.seed} 复现）"

    def to_dict(self):
        return {"item": self.item, "passed": self.passed, "seed": self.seed,
                "families": [f.to_dict() for f in self.families]}


# ----------------------------------------------------------------------------- compile + run

def compile_spec(lesson: Dict[str, Any], sid: str):
    """``(options, name_expressions)`` a source is compiled with: its own plus every templated launch name."""
    spec = lesson.get("sources", {}).get(sid, {})
    names = list(spec.get("name_expressions") or [])
    for k in (lesson.get("kernels") or {}).values():
        if k["source"] == sid and "<" in k["function"] and k["function"] not in names:
            names.append(k["function"])
    return tuple(spec.get("options") or DEFAULT_OPTIONS), names


def compile_sources(lesson: Dict[str, Any], codes: Dict[str, str]):
    """``{source_id: RawModule}``; raises kernels.errors.CompileError unchanged."""
    import kernels
    mods = {}
    for sid, code in codes.items():
        options, names = compile_spec(lesson, sid)
        mods[sid] = kernels.RawModule(code=code, options=options, name_expressions=names or None)
    return mods


def _choose_kernels(spec, ev: Evaluator) -> List[str]:
    if isinstance(spec, str):
        return [spec]
    if all(isinstance(x, str) for x in spec):
        return list(spec)
    for opt in spec:
        if "when" not in opt or ev(opt["when"]):
            return _choose_kernels(opt["kernel"], ev)
    raise ExprError("no kernel choice matched (add one without `when`)")


def kernels_of(spec) -> set:
    """Every launch recipe a family's ``kernel:`` can name (a name, a pipeline, or ``when`` choices)."""
    if isinstance(spec, str):
        return {spec}
    out = set()
    for x in spec:
        out |= kernels_of(x if isinstance(x, str) else x["kernel"])
    return out


def item_sources(lesson: Dict[str, Any], item_id: str) -> List[str]:
    """The source ids a ``cases`` item's families compile."""
    names = set()
    for case in lesson["items"][item_id].get("cases") or []:
        names |= kernels_of(case["kernel"])
    return sorted({lesson["kernels"][k]["source"] for k in names})


def _dims(v) -> tuple:
    if isinstance(v, (int, np.integer)):
        return (int(v),)
    return tuple(int(x) for x in v)


def _prefix(item_id: str, item: Dict[str, Any]) -> str:
    return "边界族" if ("boundary" in item_id or "边界" in str(item.get("title", ""))) else "用例族"


def _fmt(x: float) -> str:
    return f"{x:.1e}"


def json_value(x) -> Any:
    """A float for JSON: finite as is, else "NaN" / "inf" / "-inf"."""
    x = float(x)
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def _first_bad(got, want, bad, atol, rtol, name, evidence) -> None:
    """Fill ``evidence`` with the first element of ``bad`` (row-major) and its values."""
    flat = np.flatnonzero(bad.ravel())
    if evidence is None or not flat.size:
        return
    k = int(flat[0])
    idx = [int(i) for i in np.unravel_index(k, want.shape)] if want.ndim else []
    w, g = float(want.ravel()[k]), float(got.ravel()[k])
    evidence.update(output=name, index=idx, expected=json_value(w), got=json_value(g),
                    mismatches=int(flat.size), size=int(want.size),
                    tol={"atol": float(atol), "rtol": float(rtol),
                         "at_index": json_value(atol + rtol * abs(w)) if math.isfinite(w) else "inf"})


def compare(name: str, got: np.ndarray, want: np.ndarray, atol: float, rtol: float,
            nan_policy: str = "match", prefilled_nan: bool = False, evidence: Optional[Dict[str, Any]] = None):
    """``(ok, max_error, kind, reason_fragment)`` for one output.

    ``evidence`` (a dict, optional) receives the first mismatching element: output, index,
    expected, got, tol, mismatches, size.
    """
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        if got.size == want.size:
            got = got.reshape(want.shape)
        else:
            return False, None, "shape", f"输出 {name} 形状 {got.shape} 与期望 {want.shape} 不一致"
    gnan, wnan = np.isnan(got), np.isnan(want)
    if nan_policy == "match":
        extra = gnan & ~wnan
        if extra.any():
            _first_bad(got, want, extra, atol, rtol, name, evidence)
            k = int(extra.sum())
            if prefilled_nan:
                return False, None, "unwritten", f"输出 {name} 有 {k} 个元素是 NaN（未写入，或计算出了 NaN）"
            return False, None, "nan", f"输出 {name} 有 {k} 个元素是 NaN，而参考值不是"
        missing = wnan & ~gnan
        if missing.any():
            _first_bad(got, want, missing, atol, rtol, name, evidence)
            return False, None, "nan", f"输出 {name} 有 {int(missing.sum())} 个元素应为 NaN（按本课约定的 NaN 策略）却不是"
    both = ~(gnan | wnan)
    ginf, winf = np.isinf(got) & both, np.isinf(want) & both
    if (ginf != winf).any() or (got[ginf] != want[ginf]).any():
        _first_bad(got, want, both & ((ginf != winf) | (ginf & (got != want))), atol, rtol, name, evidence)
        return False, None, "inf", f"输出 {name} 的 inf 位置或符号与参考值不一致"
    fin = both & ~winf
    if not fin.any():
        return True, 0.0, None, ""
    err = np.abs(got[fin] - want[fin])
    tol = atol + rtol * np.abs(want[fin])
    worst = int(np.argmax(err - tol))
    max_err = float(err.max())
    if err[worst] > tol[worst]:
        bad = np.zeros(want.shape, dtype=bool)
        bad[fin] = err > tol
        _first_bad(got, want, bad, atol, rtol, name, evidence)
        return False, max_err, "mismatch", f"最大误差 {_fmt(max_err)} 超过容差 {_fmt(float(tol[worst]))}"
    return True, max_err, None, ""


# A case runs in three steps so that only the middle one touches the learner's code:
#   plan_case    (trusted)   params, inputs, launch arguments and the float64 reference, from the seeded RNG;
#   launch_plan  (untrusted) compile + launch; in-process here, or in a sandbox (autograder.judge.runner);
#   judge_outputs (trusted)  compare what came back with the reference.
# The RNG is consumed in the same order as when the three were one function, so seeds replay.

@dataclass
class Launch:
    source: str
    function: str
    grid: tuple
    block: tuple
    shared_mem: int
    args: List[tuple]                 # ("array", name) | ("view", (name, offset, shape)) | ("scalar", value)


@dataclass
class CasePlan:
    family: str
    arrays: Dict[str, np.ndarray]     # host arrays in storage dtype (inputs and pre-filled outputs)
    dtypes: Dict[str, str]            # array -> rubric dtype name
    launches: List[Launch]
    outputs: List[str]
    want: Dict[str, np.ndarray]       # float64 reference per output (never leaves the grader)
    policy: Dict[str, Dict[str, Any]]  # output -> {atol, rtol, nan, prefilled}
    group: str = ""                   # the item it belongs to
    evidence: Dict[str, Any] = field(default_factory=dict)   # params and shapes of the draw (for feedback)

    @property
    def sources(self) -> List[str]:
        return sorted({ln.source for ln in self.launches})


def _arg(value, host: Dict[str, np.ndarray], expr: str) -> tuple:
    """A launch argument of the plan: ``("scalar", value)``, or ``("view", (array, offset, shape))`` for an
    expression such as ``x[ox:]`` that yields part of a case array. A view is kept as an offset into its array
    (not a copy), so the kernel writes where the reference reads and two views of one array alias on every
    backend and across the sandbox boundary."""
    if not isinstance(value, np.ndarray):
        return ("scalar", value)
    for name, h in host.items():
        if np.shares_memory(value, h):
            if value.dtype != h.dtype or not value.flags.c_contiguous:
                raise ExprError(f"argument {expr!r}: a view must keep its array's dtype and be contiguous")
            off = (value.__array_interface__["data"][0] - h.__array_interface__["data"][0]) // h.itemsize
            return ("view", (name, int(off), tuple(int(d) for d in value.shape)))
    raise ExprError(f"argument {expr!r} is an array that is not part of a case array")


def launch_arg(dev: Dict[str, Any], kind: str, value):
    """The kernel argument for one plan argument (see ``_arg``); ``dev`` maps array names to device arrays."""
    if kind == "array":
        return dev[value]
    if kind == "view":
        name, off, shape = value
        size = int(np.prod(shape)) if len(shape) else 1
        return dev[name].reshape(-1)[int(off):int(off) + size].reshape(tuple(shape))
    return value


def plan_case(lesson: Dict[str, Any], case: Dict[str, Any], rng: np.random.Generator,
              evidence: Optional[Dict[str, Any]] = None) -> CasePlan:
    """One draw of one case family: everything but the launch. The draw's params and array shapes go
    into ``plan.evidence`` (and ``evidence`` when given), so a failure can say what input it was."""
    evidence = {} if evidence is None else evidence
    ev = Evaluator(rng)
    for k, v in (case.get("params") or {}).items():
        ev.names[k] = ev(v)
    if evidence is not None:
        evidence["params"] = {k: (json_value(v) if isinstance(v, (float, np.floating)) else
                                  int(v) if isinstance(v, (int, np.integer)) and not isinstance(v, bool) else v)
                              for k, v in ev.names.items() if isinstance(v, (int, float, bool, str, np.number))}
    knames = _choose_kernels(case["kernel"], ev)
    kspecs = [lesson["kernels"][k] for k in knames]
    # which arrays this case needs, in declaration order
    decl = dict(lesson.get("arrays") or {})
    over = case.get("arrays") or {}
    needed = []
    for ks in kspecs:
        for a in ks["args"]:
            if isinstance(a, str) and a.isidentifier() and (a in decl or a in over) and a not in needed:
                needed.append(a)
    ref_arg_names = list((case.get("reference_args") or {}).values())
    for ks in kspecs:
        ref_arg_names += list((ks.get("reference_args") or {}).values())
    for a in ref_arg_names:       # arrays only the reference reads (e.g. a mask the kernel gets as a scalar)
        if isinstance(a, str) and (a in decl or a in over) and a not in needed:
            needed.append(a)
    specs = {}
    for a in list(decl) + [a for a in over if a not in decl]:
        if a in needed:
            merged = dict(decl.get(a, {}))
            merged.update(over.get(a, {}))
            if "dist" in over.get(a, {}) and "fill" in merged and "fill" not in over.get(a, {}):
                merged.pop("fill")
            specs[a] = merged
    host = {a: make_array(s, ev) for a, s in specs.items()}
    if evidence is not None:
        evidence["shapes"] = {a: [int(d) for d in h.shape] for a, h in host.items()}
    host64 = {a: to_float64(h, specs[a]["dtype"]) for a, h in host.items()}
    outputs = list(case.get("outputs") or [])
    if not outputs:
        for ks in kspecs:
            outputs += [o for o in ks.get("outputs") or [] if o not in outputs]
    names_env = dict(ev.names)
    launches = []
    for ks in kspecs:
        ev.names = {**names_env, **host}
        args = [("array", a) if isinstance(a, str) and a in host else _arg(ev(a), host, a) for a in ks["args"]]
        ev.names = names_env
        grid, block = _dims(ev(ks["grid"])), _dims(ev(ks["block"]))
        smem = int(ev(ks.get("shared_mem", 0)))
        launches.append(Launch(ks["source"], ks["function"], grid, block, smem, args))
    ref_name = case.get("reference") or next((ks["reference"] for ks in reversed(kspecs) if ks.get("reference")), None)
    if not ref_name:
        raise ExprError(f"family {case['family']!r}: no reference to compare with")
    ref_args = case.get("reference_args") or next(
        (ks.get("reference_args") for ks in reversed(kspecs) if ks.get("reference") == ref_name), None)
    bound = {**{k: v for k, v in names_env.items()}, **host64}
    if ref_args:
        bound = {p: (bound[v] if isinstance(v, str) and v in bound else ev(v)) for p, v in ref_args.items()}
    want = references.as_outputs(references.call(ref_name, bound), outputs)
    policy = {}
    for o in outputs:
        pol = dict(DEFAULT_TOL)
        pol.update(case.get("tol") or {})
        pol.update((case.get("compare") or {}).get(o, {}))
        pol["prefilled"] = "fill" in specs[o] and isinstance(specs[o]["fill"], (float, str)) and \
            str(specs[o]["fill"]).lower() == "nan"
        policy[o] = pol
    return CasePlan(case["family"], host, {a: s["dtype"] for a, s in specs.items()}, launches, outputs, want, policy,
                    evidence=dict(evidence or {}))


def launch_plan(plan: CasePlan, modules: Dict[str, Any], checks=("memcheck", "racecheck")) -> Dict[str, np.ndarray]:
    """Launch the plan's kernels in this process; the outputs as host arrays (raises kernels errors)."""
    import kernels
    dev = {a: kernels.asarray(h) for a, h in plan.arrays.items()}
    for ln in plan.launches:
        fn = modules[ln.source].get_function(ln.function)
        args = tuple(launch_arg(dev, k, v) for k, v in ln.args)
        with kernels.check(*checks):
            fn(ln.grid, ln.block, args, shared_mem=ln.shared_mem)
    if hasattr(kernels, "synchronize"):
        kernels.synchronize()
    return {o: kernels.asnumpy(dev[o]) for o in plan.outputs}


def judge_outputs(plan: CasePlan, got: Dict[str, np.ndarray], evidence: Optional[Dict[str, Any]] = None):
    """``(ok, max_error, kind, reason_fragment)`` comparing launched outputs with the plan's reference;
    ``evidence`` (optional) receives the first mismatching element (see ``compare``)."""
    worst = 0.0
    for o in plan.outputs:
        if o not in got:
            return False, None, "missing", f"输出 {o} 没有返回"
        g = to_float64(got[o], plan.dtypes[o])
        pol = plan.policy[o]
        ok, err, kind, frag = compare(o, g, plan.want[o], float(pol["atol"]), float(pol["rtol"]),
                                      pol.get("nan", "match"), pol["prefilled"], evidence)
        if not ok:
            return False, err, kind, frag
        worst = max(worst, err or 0.0)
    return True, worst, None, ""


def run_case(lesson: Dict[str, Any], case: Dict[str, Any], modules: Dict[str, Any],
             rng: np.random.Generator, checks=("memcheck", "racecheck"), evidence: Optional[Dict[str, Any]] = None):
    """Run one draw of one case in this process; returns ``(ok, max_error, kind, reason)``.

    ``evidence`` (a dict, optional) receives the draw's params and array shapes as soon as they
    are known (so a kernel error still has them) and ``compare``'s first mismatch.
    """
    plan = plan_case(lesson, case, rng, evidence)
    return judge_outputs(plan, launch_plan(plan, modules, checks), evidence)


@dataclass
class LaunchOutcome:
    """What launching one plan produced: outputs, or the kind and Chinese message of what went wrong."""
    outputs: Optional[Dict[str, np.ndarray]] = None
    kind: Optional[str] = None
    message: str = ""
    diagnostic: Optional[Dict[str, Any]] = None     # kernels.errors fields (``_diagnostic``), no raw sanitizer text


def in_process_executor(lesson: Dict[str, Any], codes: Dict[str, str], plans: List[CasePlan],
                        checks) -> List[LaunchOutcome]:
    """Compile ``codes`` and launch ``plans`` in this process (the notebook's own ``L.grade``, lesson tests)."""
    from kernels import errors as kerr
    modules, broken = {}, {}
    for sid in sorted({s for p in plans for s in p.sources}):
        try:
            modules.update(compile_sources(lesson, {sid: codes[sid]}))
        except kerr.KernelError as exc:
            broken[sid] = LaunchOutcome(kind=exc.kind, message=messages.explain(exc), diagnostic=_diagnostic(exc))
    out = []
    for plan in plans:
        bad = next((broken[s] for s in plan.sources if s in broken), None)
        if bad is not None:
            out.append(bad)
            continue
        try:
            out.append(LaunchOutcome(outputs=launch_plan(plan, modules, checks)))
        except kerr.KernelError as exc:
            out.append(LaunchOutcome(kind=exc.kind, message=messages.explain(exc), diagnostic=_diagnostic(exc)))
        except Exception as exc:
            out.append(LaunchOutcome(kind=type(exc).__name__, message=messages.explain(exc)))
    return out


def plan_items(lesson: Dict[str, Any], item_ids: List[str], seed: int):
    """``[(item_id, family index, draw, plan or planning error)]`` for every repeat of every family."""
    out = []
    for item_id in item_ids:
        item = lesson["items"][item_id]
        # one child generator per family keeps families independent of each other's draws
        children = np.random.SeedSequence(seed).spawn(len(item["cases"]))
        for k, (case, child) in enumerate(zip(item["cases"], children)):
            rng = np.random.default_rng(child)
            for r in range(int(case.get("repeat", 1))):
                try:
                    plan = plan_case(lesson, case, rng)
                    plan.group = item_id
                    out.append((item_id, k, r, plan))
                except Exception as exc:  # a rubric bug (bad expression, reference), not the learner's: say so
                    out.append((item_id, k, r, exc))
                    break
    return out


def run_items(lesson: Dict[str, Any], item_ids: List[str], codes: Dict[str, str], *, seed: int,
              checks, executor=None) -> Dict[str, ItemResult]:
    """Every case family of ``item_ids`` against the CUDA ``codes``; one ``executor`` call launches all of
    them (default: this process). ``executor(lesson, codes, plans, checks) -> [LaunchOutcome]``."""
    executor = executor or in_process_executor
    planned = plan_items(lesson, item_ids, seed)
    plans = [p for *_, p in planned if isinstance(p, CasePlan)]
    outcomes = iter(executor(lesson, codes, plans, tuple(checks)) if plans else [])
    results = {iid: ItemResult(iid, True, seed) for iid in item_ids}
    fams: Dict[tuple, FamilyResult] = {}
    for item_id, k, _, plan in planned:
        item = lesson["items"][item_id]
        case = item["cases"][k]
        fam = case["family"]
        prefix = _prefix(item_id, item)
        fr = fams.get((item_id, k))
        if fr is None:
            fr = fams[(item_id, k)] = FamilyResult(fam, True)
            results[item_id].families.append(fr)
        if isinstance(plan, Exception):
            fr.passed, fr.error_kind = False, "rubric"
            fr.reason = f"{prefix}「{fam}」无法运行（评分配置错误，请联系老师）：{plan}"
            continue
        got = next(outcomes)
        if not fr.passed:           # an earlier draw of this family failed already
            continue
        evidence = dict(plan.evidence)
        if got.outputs is None:
            fr.passed, fr.error_kind = False, got.kind
            fr.reason = f"{prefix}「{fam}」失败：{got.message}"
            fr.diagnostic = got.diagnostic
            _set_evidence(fr, evidence)
            continue
        try:
            ok, err, kind, frag = judge_outputs(plan, got.outputs, evidence)
        except Exception as exc:    # outputs of the wrong shape or dtype came back
            ok, err, kind, frag = False, None, "malformed", f"返回的输出无法比较（{type(exc).__name__}）"
        if err is not None:
            fr.max_error = max(fr.max_error or 0.0, err)
        if not ok:
            fr.passed, fr.error_kind, fr.reason = False, kind, f"{prefix}「{fam}」失败：{frag}"
            _set_evidence(fr, evidence)
    for r in results.values():
        r.passed = all(f.passed for f in r.families)
    return results


EVIDENCE_KEYS = ("params", "shapes", "output", "index", "expected", "got", "tol", "mismatches", "size")


def _set_evidence(fr: FamilyResult, evidence: Dict[str, Any]) -> None:
    for key in EVIDENCE_KEYS:
        if key in evidence:
            setattr(fr, key, evidence[key])


def run_item(lesson: Dict[str, Any], item_id: str, codes: Dict[str, str], *, seed: Optional[int] = None,
             checks=None, executor=None) -> ItemResult:
    """Run every case family of ``item_id`` against the CUDA ``codes`` ``{source_id: text}``."""
    seed = new_seed() if seed is None else int(seed)
    checks = tuple(checks if checks is not None else lesson.get("settings", {}).get("checks", ("memcheck", "racecheck")))
    return run_items(lesson, [item_id], codes, seed=seed, checks=checks, executor=executor)[item_id]


def _diagnostic(exc) -> Dict[str, Any]:
    """The parts of a kernels.errors exception a student-facing panel shows (no raw sanitizer output)."""
    d = {k: v for k, v in exc.to_dict().items() if k != "details"}
    if getattr(exc, "diagnostics", None):
        d["diagnostics"] = [list(x) if isinstance(x, (tuple, list)) else [None, "error", str(x)]
                            for x in exc.diagnostics][:8]
    for k in ("block", "thread"):
        if d.get(k) is not None:
            d[k] = list(d[k])
    return d
