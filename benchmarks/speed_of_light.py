#!/usr/bin/env python3
"""Speed-of-light benchmark for the reference LayerNorm / RMSNorm / softmax kernels (any CUDA GPU).

For every (op, dtype, shape):
  1. fresh random input; output poisoned with NaN; our kernel checked against a float64 reference
     (||y - ref|| / ||ref||, every element finite) -- torch checked the same way;
  2. timed with CUDA events around each launch, L2 flushed (an 8 x L2 memset, see Timer) before every
     launch, median of --reps launches after warm-up;
  3. compared with the device-to-device copy ceiling measured in the same run (bytes read + written)
     and with torch (F.layer_norm, F.rms_norm, torch.softmax) on the same tensors.
Shapes: N in {256 ... 65536} with M chosen so each tensor is >= 4 x L2 (read from the device), plus
llm.c's 8192 x 768 and 8192 x 50257. Bytes counted: x read once + y written once + parameters once.

    python benchmarks/speed_of_light.py --out-dir docs/benchmarks        # full run, writes .md/.png/.json
    python benchmarks/speed_of_light.py --quick                            # a few small shapes
Needs cupy and torch on a CUDA machine. Prints a markdown table last.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import platform
import statistics
import sys
import traceback
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import cupy as cp  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from solutions.kernels.dispatch import ReferenceKernels  # noqa: E402

SWEEP_N = (256, 768, 1024, 2048, 4096, 8192, 16384, 32768, 65536)
LLM_C = ((8192, 768), (8192, 50257))
OPS = ("layernorm", "rmsnorm", "softmax")
DTYPES = ("fp32", "bf16")
TOL = {"fp32": 1e-4, "bf16": 1e-2}  # relative L2 error vs float64 (METHOD.md bands)
EPS = {"layernorm": 1e-5, "rmsnorm": 1e-6}


# ------------------------------------------------------------------ device + timing helpers
class Timer:
    """CUDA-event times of one launch, L2 flushed before each by a memset of flush_l2s x L2 (8: 480 MB, ~120 us
    on the H200). The flush also gives the host time to queue the timed launch before the start event is
    reached, so the events bracket GPU work only: after a 2 x L2 flush (~30 us) a launch whose host side
    (Python, argument packing) took longer started late and that wait was timed (bf16 softmax 8192 x 768:
    median 18.5 us in one run, 10.9 us in another; p10-p90 spreads to 20 us), while the 8 x L2 flush left
    spreads of 1-2 us and the long launches' medians unchanged (docs/benchmarks/explore_0100/flush_ab.txt;
    a one-thread 100 us hold kernel instead added 1-3 us to the long launches, ours and torch's)."""

    def __init__(self, l2_bytes: int, reps: int, warmup: int, flush_l2s: int = 8):
        self.flush_buf = cp.empty(max(flush_l2s * l2_bytes, 64 << 20), dtype=cp.uint8)
        self.reps, self.warmup = reps, warmup

    def flush(self):
        self.flush_buf.fill(0)

    def median_us(self, fn) -> tuple[float, float]:
        """(median, spread = p90 - p10) in microseconds, L2 flushed before each timed launch."""
        for _ in range(self.warmup):
            fn()
        cp.cuda.Device().synchronize()
        starts = [cp.cuda.Event() for _ in range(self.reps)]
        ends = [cp.cuda.Event() for _ in range(self.reps)]
        for s, e in zip(starts, ends):
            self.flush()
            s.record()
            fn()
            e.record()
        ends[-1].synchronize()
        ts = sorted(cp.cuda.get_elapsed_time(s, e) * 1e3 for s, e in zip(starts, ends))
        return statistics.median(ts), ts[int(0.9 * (len(ts) - 1))] - ts[int(0.1 * (len(ts) - 1))]


def copy_gbps(timer: Timer, nbytes: int) -> tuple[float, float]:
    src = cp.empty(nbytes, dtype=cp.uint8)
    src.fill(1)
    dst = cp.empty_like(src)

    def run():
        cp.cuda.runtime.memcpyAsync(dst.data.ptr, src.data.ptr, nbytes,
                                    cp.cuda.runtime.memcpyDeviceToDevice, cp.cuda.get_current_stream().ptr)
    us, _ = timer.median_us(run)
    del src, dst
    return 2 * nbytes / us / 1e3, us


def rows_4x_l2(l2: int, N: int, itemsize: int) -> int:
    """The sweep's M for row length N: the fewest rows that make each tensor >= 4x L2."""
    return -(-4 * l2 // (N * itemsize))


def diagnosis_shapes(args, l2: int, itemsize: int) -> list[tuple[int, int]]:
    """(M, N) of the diagnosis scripts: --ns at rows_4x_l2, plus llm.c's 8192 x 50257 with --llmc."""
    shapes = [(rows_4x_l2(l2, int(n), itemsize), int(n)) for n in args.ns.split(",")]
    return shapes + [LLM_C[-1]] if args.llmc else shapes


def diagnosis_args(ap, ns: str) -> None:
    """The shape and timing options of the diagnosis scripts (stage_removal.py, pipe_timeline.py)."""
    ap.add_argument("--ns", default=ns)
    ap.add_argument("--ops", default=",".join(OPS))
    ap.add_argument("--dtypes", default=",".join(DTYPES))
    ap.add_argument("--llmc", action="store_true", help="also 8192 x 50257")
    ap.add_argument("--reps", type=int, default=30)


def timer_and_ceiling(reps: int) -> tuple[int, Timer, float]:
    """(L2 bytes, a Timer, the copy ceiling in GB/s: the better of two 1 GiB copies)."""
    l2 = int(cp.cuda.runtime.getDeviceProperties(0)["l2CacheSize"])
    timer = Timer(l2, reps, 3)
    return l2, timer, max(copy_gbps(timer, 1 << 30)[0], copy_gbps(timer, 1 << 30)[0])


# ------------------------------------------------------------------ data + references
def to_torch(a: cp.ndarray, dtype: str) -> torch.Tensor:
    t = torch.from_dlpack(a.view(cp.int16) if dtype == "bf16" else a)
    return t.view(torch.bfloat16) if dtype == "bf16" else t


def from_torch(t: torch.Tensor, dtype: str) -> cp.ndarray:
    if dtype == "bf16":
        return cp.from_dlpack(t.contiguous().view(torch.int16)).view(cp.uint16)
    return cp.from_dlpack(t.contiguous())


def as_f64(a: cp.ndarray, dtype: str) -> cp.ndarray:
    if dtype == "bf16":
        return (a.astype(cp.uint32) << 16).view(cp.float32).astype(cp.float64)
    return a.astype(cp.float64)


def make_inputs(op: str, M: int, N: int, dtype: str, seed: int):
    g = torch.Generator(device="cuda").manual_seed(seed)
    tdt = torch.bfloat16 if dtype == "bf16" else torch.float32
    # Non-zero mean on norm inputs so a cancelling variance formula would show; wide logits for softmax.
    x = torch.randn(M, N, device="cuda", generator=g) * (3.0 if op == "softmax" else 2.0)
    if op != "softmax":
        x += 1.5
    x = x.to(tdt)
    params = []
    if op in ("layernorm", "rmsnorm"):
        params.append((1.0 + 0.5 * torch.randn(N, device="cuda", generator=g)).to(tdt))
    if op == "layernorm":
        params.append((0.5 * torch.randn(N, device="cuda", generator=g)).to(tdt))
    return x, params


def reference(op: str, x: cp.ndarray, params: list[cp.ndarray]) -> cp.ndarray:
    """float64 reference of the op (inputs already float64)."""
    if op == "layernorm":
        mean = x.mean(axis=1, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
        return (x - mean) / cp.sqrt(var + EPS[op]) * params[0] + params[1]
    if op == "rmsnorm":
        return x / cp.sqrt((x * x).mean(axis=1, keepdims=True) + EPS[op]) * params[0]
    e = cp.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def rel_err(y: cp.ndarray, ref: cp.ndarray, dtype: str) -> float:
    y64 = as_f64(y, dtype)
    if not bool(cp.isfinite(y64).all()):
        return float("nan")  # unwritten (poisoned) or non-finite output never passes
    return float(cp.linalg.norm(y64 - ref) / cp.linalg.norm(ref))


def torch_op(op: str, xt: torch.Tensor, pt: list[torch.Tensor]):
    N = xt.shape[1]
    if op == "layernorm":
        return lambda: F.layer_norm(xt, (N,), pt[0], pt[1], EPS[op])
    if op == "rmsnorm":
        return lambda: F.rms_norm(xt, (N,), pt[0], EPS[op])
    return lambda: torch.softmax(xt, dim=-1)


# ------------------------------------------------------------------ one case
def run_case(rks: dict, timer: Timer, op: str, dtype: str, M: int, N: int, seed: int,
             specs: list[dict]) -> list[dict]:
    """specs: [{"kind": None|"cached"|"cluster"|"stream", "config": {tpr, cluster, rpb, nv}, "hints": bool}]"""
    x_t, p_t = make_inputs(op, M, N, dtype, seed)
    x = from_torch(x_t, dtype)
    params = [from_torch(p, dtype) for p in p_t]
    itemsize = 2 if dtype == "bf16" else 4
    nbytes = 2 * M * N * itemsize + len(params) * N * itemsize
    ref = reference(op, as_f64(x, dtype), [as_f64(p, dtype) for p in params])
    poison = cp.uint16(0x7FC0) if dtype == "bf16" else cp.float32(np.nan)

    t_out = torch_op(op, x_t, p_t)()
    torch_err = rel_err(from_torch(t_out, dtype), ref, dtype)
    del t_out
    torch_us, torch_spread = timer.median_us(torch_op(op, x_t, p_t))

    rows = []
    for spec in specs:
        kind, config = spec.get("kind"), spec.get("config") or {}
        rk = rks[spec.get("hints", False)]
        row = dict(op=op, dtype=dtype, M=M, N=N, bytes=nbytes, torch_us=torch_us, torch_spread_us=torch_spread,
                   torch_gbps=nbytes / torch_us / 1e3, torch_err=torch_err, spec=spec_label(spec))
        try:
            p = rk.plan(op, M, N, cp.uint16 if dtype == "bf16" else cp.float32, kind=kind, **config)
            row.update(path=p.kind, kernel=p.name, grid=p.grid[0], block=p.block[0])
            y = cp.empty_like(x)
            y.fill(poison)
            rk.run(op, x, params, out=y, kind=kind, config=config)
            cp.cuda.Device().synchronize()
            row["grid"] = rk.launch_grid(p)  # pipe: clusters that fit at once x CTAs per cluster
            err = rel_err(y, ref, dtype)
            row["err"] = err
            if not (err <= TOL[dtype]):
                row["error"] = f"verification failed: rel err {err:.3g} > {TOL[dtype]:g}"
                rows.append(row)
                continue
            us, spread = timer.median_us(lambda: rk.run(op, x, params, out=y, kind=kind, config=config))
            row.update(us=us, spread_us=spread, gbps=nbytes / us / 1e3, speedup=torch_us / us)
        except Exception as exc:  # record and keep going: one bad case must not lose the run
            row["error"] = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
            traceback.print_exc()
        rows.append(row)
    del x, params, ref, x_t, p_t
    cp.get_default_memory_pool().free_all_blocks()
    torch.cuda.empty_cache()
    return rows


def variant_spec(v: str) -> dict:
    """--variants entry: a kind, optionally with plan overrides, e.g. 'cluster:cluster=8:tpr=256'."""
    kind, *kv = v.split(":")
    spec = {"kind": kind}
    if kv:
        spec["config"] = {k: int(x) for k, x in (item.split("=") for item in kv)}
    return spec


def spec_label(spec: dict) -> str:
    parts = [spec["kind"]] if spec.get("kind") else []
    parts += [f"{k}={v}" for k, v in sorted((spec.get("config") or {}).items())]
    if spec.get("hints", False):
        parts.append("cache-hints")
    return ",".join(parts) or "default"


def explore_specs(N: int, dtype: str) -> list[dict]:
    """Alternative launch shapes for one row length (diagnosis: which shape wins, what hints do)."""
    vec = 8 if dtype == "bf16" else 4
    specs = [{"hints": True}]
    if N <= 1024:
        specs += [{"kind": "cached", "config": {"tpr": t}} for t in (8, 16, 32)
                  if -(-N // (vec * t)) * vec <= 32 and t >= 2 * vec - 2]
    if 1024 < N <= 32768:
        for t in (64, 128, 256, 512, 1024):
            e = -(-N // (vec * t)) * vec
            if 8 <= e <= 32:
                specs.append({"kind": "cached", "config": {"tpr": t}})
    if N >= 32768:
        for c, t in ((2, 512), (2, 1024), (4, 256), (4, 512), (8, 256), (8, 512)):
            if -(-N // (vec * t * c)) * vec <= 32:
                specs.append({"kind": "cluster", "config": {"cluster": c, "tpr": t}})
    if N >= 16384:
        specs.append({"kind": "stream"})
    return specs


# ------------------------------------------------------------------ output
def fmt_table(rows: list[dict], copy_bw: float) -> str:
    head = ("| op | dtype | M | N | path | our us | our GB/s | % of copy | torch us | torch GB/s | speedup | "
            "err (ours / torch) |\n|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---|\n")
    lines = []
    for r in rows:
        if "us" in r:
            lines.append(
                f"| {r['op']} | {r['dtype']} | {r['M']} | {r['N']} | {path_label(r)} | {r['us']:.1f} | "
                f"{r['gbps']:.0f} | {100 * r['gbps'] / copy_bw:.1f}% | {r['torch_us']:.1f} | "
                f"{r['torch_gbps']:.0f} | {r['speedup']:.2f}x | {r['err']:.1e} / {r['torch_err']:.1e} |")
        else:
            lines.append(f"| {r['op']} | {r['dtype']} | {r['M']} | {r['N']} | {path_label(r)} | "
                         f"FAILED: {r.get('error', '?')} | | | {r.get('torch_us', float('nan')):.1f} | | | |")
    return head + "\n".join(lines) + "\n"


def path_label(r: dict) -> str:
    label = r.get("path", "?")
    if "kernel" in r:
        p = r["kernel"].split("<")[1].rstrip(">").split(",")[1:]  # vec, tpr, (rpb,) nv, (cluster)
        label += f" `{'/'.join(p)}`"
    if r.get("spec", "default") != "default":
        label += f" [{r['spec']}]"
    return label


def plot(rows: list[dict], copy_bw: float, path: Path, device: str):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 3, figsize=(15, 8), sharey=True)
    for i, dtype in enumerate(DTYPES):
        for j, op in enumerate(OPS):
            ax = axes[i][j]
            sel = [r for r in rows if r["op"] == op and r["dtype"] == dtype and r.get("sweep") and "us" in r
                   and r.get("default")]
            sel.sort(key=lambda r: r["N"])
            ns = [r["N"] for r in sel]
            ax.plot(ns, [r["gbps"] for r in sel], "o-", label="ours")
            ax.plot(ns, [r["torch_gbps"] for r in sel], "s--", label="torch")
            big = [r for r in rows if r["op"] == op and r["dtype"] == dtype and r["N"] == 50257 and "us" in r
                   and r.get("default")]
            if not sel and not big:  # op / dtype not in this run (--ops, --dtypes)
                ax.set_visible(False)
                continue
            for r in big:
                ax.plot([r["N"]], [r["gbps"]], "D", color="C0", label="ours 8192x50257")
                ax.plot([r["N"]], [r["torch_gbps"]], "D", color="C1", label="torch 8192x50257")
            ax.axhline(copy_bw, color="k", lw=1, label=f"D2D copy {copy_bw:.0f} GB/s")
            ax.axhline(0.9 * copy_bw, color="k", lw=1, ls=":", label="90% of copy")
            ax.set_xscale("log", base=2)
            ax.set_title(f"{op} {dtype}")
            ax.set_xlabel("N (row length); M sized so each tensor >= 4x L2")
            if j == 0:
                ax.set_ylabel("GB/s (x read + y written)")
            ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.suptitle(f"Reference kernels vs torch vs copy ceiling - {device}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out-dir", type=Path, default=None, help="write speed_of_light.{md,png,json} here")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="few shapes at small M (smoke test)")
    ap.add_argument("--ops", default=",".join(OPS))
    ap.add_argument("--dtypes", default=",".join(DTYPES))
    ap.add_argument("--ns", default=None, help="comma-separated N values for the sweep (default: all)")
    ap.add_argument("--variants", default="stream",
                    help="comma-separated forced paths (kind[:key=int...]) also timed at N >= --variant-min-n; '' for none")
    ap.add_argument("--variant-min-n", type=int, default=32768, help="time --variants at N >= this")
    ap.add_argument("--explore", action="store_true",
                    help="also time alternative launch shapes and a build with streaming cache hints")
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args(argv)

    dev = cp.cuda.Device()
    props = cp.cuda.runtime.getDeviceProperties(dev.id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    l2 = int(props["l2CacheSize"])
    info = dict(device=name, sms=int(props["multiProcessorCount"]), l2_bytes=l2,
                cc=f"{props['major']}.{props['minor']}",
                date=_dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                cupy=cp.__version__, torch=torch.__version__, numpy=np.__version__,
                cuda_runtime=cp.cuda.runtime.runtimeGetVersion(), driver=cp.cuda.runtime.driverGetVersion(),
                python=platform.python_version(), reps=args.reps)
    print(json.dumps(info), flush=True)

    timer = Timer(l2, args.reps, args.warmup)
    copy_bytes = max(8 * l2, 1 << 30)
    copy_bw, copy_us = copy_gbps(timer, copy_bytes)
    copy_bw2, _ = copy_gbps(timer, copy_bytes)  # twice: the spread between the two is the noise floor
    info.update(copy_gbps=max(copy_bw, copy_bw2), copy_gbps_runs=[copy_bw, copy_bw2], copy_bytes=copy_bytes)
    copy_bw = info["copy_gbps"]
    print(f"copy ceiling: {copy_bw:.0f} GB/s ({copy_bytes >> 20} MiB, read+write; runs {copy_bw:.0f}/{copy_bw2:.0f})",
          flush=True)

    ops = [o for o in args.ops.split(",") if o]
    dtypes = [d for d in args.dtypes.split(",") if d]
    sweep = [int(n) for n in args.ns.split(",")] if args.ns else list(SWEEP_N)
    variants = [v for v in args.variants.split(",") if v]
    cases = []
    for dtype in dtypes:
        itemsize = 2 if dtype == "bf16" else 4
        for N in sweep:
            M = 64 if args.quick else rows_4x_l2(l2, N, itemsize)
            cases.append((dtype, M, N, True))
        if not args.quick:
            cases += [(dtype, M, N, False) for M, N in LLM_C]

    rks = {False: ReferenceKernels(),
           True: ReferenceKernels(options=("-std=c++17", "-DSOL_CACHE_HINTS"))}  # __ldcs/__stcs variant

    def specs_for(N: int, dtype: str) -> list[dict]:
        specs = [{}] + [variant_spec(v) for v in (variants if N >= args.variant_min_n else [])]
        if args.explore:
            specs += [s for s in explore_specs(N, dtype) if s not in specs]
        return specs

    # One NVRTC module per op (and hint setting) with every instance this run needs.
    plans = {True: [], False: []}
    for op in ops:
        for dtype, M, N, _ in cases:
            dt = cp.uint16 if dtype == "bf16" else cp.float32
            for spec in specs_for(N, dtype):
                try:
                    plans[spec.get("hints", False)].append(
                        rks[False].plan(op, M, N, dt, kind=spec.get("kind"), **(spec.get("config") or {})))
                except ValueError:
                    pass
    for h, ps in plans.items():
        rks[h].prepare(ps)

    rows = []
    for k, (dtype, M, N, is_sweep) in enumerate(cases):
        for op in ops:
            got = run_case(rks, timer, op, dtype, M, N, args.seed + k, specs_for(N, dtype))
            for i, r in enumerate(got):
                r["sweep"], r["default"] = is_sweep, i == 0
                msg = (f"{r['gbps']:.0f} GB/s ({100 * r['gbps'] / copy_bw:.1f}% copy), {r['us']:.1f} us vs torch "
                       f"{r['torch_us']:.1f} us ({r['speedup']:.2f}x), err {r['err']:.1e}" if "us" in r
                       else f"FAILED {r.get('error')}")
                print(f"{op:9s} {dtype} {M:7d}x{N:<6d} {path_label(r):40s} {msg}", flush=True)
            rows += got

    default_rows = [r for r in rows if r["default"]]
    variant_rows = [r for r in rows if not r["default"]]
    table = fmt_table(default_rows, copy_bw)
    vtable = fmt_table(variant_rows, copy_bw) if variant_rows else ""
    big = [r for r in default_rows if "us" in r and r["M"] * r["N"] * (2 if r["dtype"] == "bf16" else 4) >= 4 * l2]
    summary = (f"shapes >= 4x L2: {sum(r['gbps'] >= 0.9 * copy_bw for r in big)}/{len(big)} at >= 90% of copy; "
               f"{sum(r['speedup'] > 1 for r in big)}/{len(big)} faster than torch; "
               f"min speedup {min((r['speedup'] for r in big), default=float('nan')):.2f}x; "
               f"failed cases: {sum('us' not in r for r in rows)}")
    print()
    print(f"device: {name}, L2 {l2 >> 20} MiB, copy ceiling {copy_bw:.0f} GB/s, median of {args.reps}, L2 flushed")
    print(table)
    if vtable:
        print("variants (diagnosis):")
        print(vtable)
    print(summary)
    for h, rk in rks.items():
        if rk.resident_error:
            print(f"note: persistent (pipe) grids fell back to one cluster per row ({rk.resident_error})")

    if args.out_dir:
        out = Path(args.out_dir)
        out.mkdir(parents=True, exist_ok=True)
        (out / "speed_of_light.json").write_text(json.dumps(dict(info=info, rows=rows), indent=1))
        md = [f"# Reference kernels at the speed of light ({name})", "",
              f"Measured {info['date']} by `benchmarks/speed_of_light.py`: {name}, {info['sms']} SMs, "
              f"L2 {l2 >> 20} MiB, CUDA runtime {info['cuda_runtime']}, driver {info['driver']}, "
              f"cupy {info['cupy']}, torch {info['torch']}, Python {info['python']}.", "",
              f"Copy ceiling (device-to-device copy of {copy_bytes >> 20} MiB, bytes read + written, same run): "
              f"**{copy_bw:.0f} GB/s** (two runs: {info['copy_gbps_runs'][0]:.0f} / {info['copy_gbps_runs'][1]:.0f}).",
              "", "Each time is the median of "
              f"{args.reps} launches timed with CUDA events, L2 flushed (8 x L2 memset) before every launch; "
              "each kernel verified against float64 on fresh random data first (err = ||y - ref|| / ||ref||). "
              "GB/s counts x read once + y written once + parameters once. M is chosen so each tensor is "
              ">= 4x L2, except llm.c's 8192 x 768 (fits in L2: cold-cache number, not a bandwidth test).", "",
              summary, "", table]
        if vtable:
            md += ["", "## Variants (diagnosis: forced paths / launch shapes / no cache hints)", "", vtable]
        (out / "speed_of_light.md").write_text("\n".join(md))
        plot(rows, copy_bw, out / "speed_of_light.png", name)
        print(f"wrote {out}/speed_of_light.md, .png, .json")


if __name__ == "__main__":
    main()
