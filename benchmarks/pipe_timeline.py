#!/usr/bin/env python3
"""Where does a pipe kernel's time go? A per-CTA timeline of the persistent kernels (GPU only).

Builds the reference kernels with -DSOL_DIAG_TIMELINE (common.cuh: thread 0 of every CTA stamps the GPU's
global timer at kernel entry, loop entry, first row's loads issued, first row done and end, and records its SM
and row count; results unchanged) and launches each shape's default pipe plan once after an L2 flush. Prints,
per shape, in microseconds:
  event     CUDA-event time of the launch (median of --reps, L2 flushed, the speed_of_light.py Timer)
  ideal     bytes moved / copy ceiling
  span      last CTA's end - first CTA's entry (the GPU's own view of the kernel)
  start     spread of the CTAs' entry stamps (launch of a persistent clustered grid)
  setup     median entry -> loop entry (parameters copied to shared memory / registers)
  first     median loop entry -> first row done (mbarrier init, cluster sync, the first row's load latency)
  step      median time per further row
  tail      last CTA's end - median CTA end (clusters that finished late: static row assignment)
plus CTAs per SM (min-max) and rows per cluster (min-max). span - rows x step is the fixed cost of one launch.
--sched 0,1 times each shape's default pipe plan with rows dealt out statically (0) and by ticket (1).

    python benchmarks/pipe_timeline.py [--ns 32768,65536] [--ops layernorm,rmsnorm,softmax] [--m-scale 1,4] [--llmc]
                                       [--sched 0,1]
"""
from __future__ import annotations

import argparse
import statistics
import sys
from collections import Counter
from pathlib import Path

import cupy as cp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from speed_of_light import (TOL, as_f64, diagnosis_args, diagnosis_shapes, from_torch, make_inputs,  # noqa: E402
                            reference, rel_err, timer_and_ceiling)

from solutions.kernels.dispatch import ReferenceKernels  # noqa: E402

SLOTS = 7  # common.cuh sol_diag_timeline: entry, loop entry, first issued, first row done, end, SM, rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    diagnosis_args(ap, "32768,65536")
    ap.add_argument("--m-scale", default="1", help="comma-separated multiples of the >= 4x L2 row count")
    ap.add_argument("--sched", default="", help="comma-separated row schedules to force (0 static, 1 ticket); "
                                                "default: the plan's own")
    args = ap.parse_args(argv)
    l2, timer, copy_bw = timer_and_ceiling(args.reps)
    modules: dict[str, cp.RawModule] = {}

    def raw_module(code, options, name_expressions):  # keep each op's module: its timeline global lives there
        mod = cp.RawModule(code=code, options=options, name_expressions=name_expressions)
        modules.update((n, mod) for n in name_expressions)
        return mod

    rk = ReferenceKernels(raw_module=raw_module, options=("-std=c++17", "-DSOL_DIAG_TIMELINE"))
    print(f"copy ceiling {copy_bw:.0f} GB/s; times in us")
    cols = ["event", "ideal", "span", "start", "setup", "first", "step", "tail"]
    print("| op | dtype | M | N | kernel | clusters | " + " | ".join(cols) + " | CTAs/SM | rows/cluster | % of copy |")
    print("|---|---|---:|---:|---|---:|" + "---:|" * len(cols) + "---|---|---:|")
    for dtype in args.dtypes.split(","):
        itemsize = 2 if dtype == "bf16" else 4
        for M0, N in diagnosis_shapes(args, l2, itemsize):
            for scale in (int(s) for s in args.m_scale.split(",")):
                M = M0 * scale
                for op, sched in ((o, s) for o in args.ops.split(",") for s in (args.sched.split(",") or [""])):
                    dt = cp.uint16 if dtype == "bf16" else cp.float32
                    p = rk.plan(op, M, N, dt)
                    if p.kind != "pipe":
                        print(f"| {op} | {dtype} | {M} | {N} | `{p.name}` (not a pipe kernel) |")
                        continue
                    config = {}
                    if sched:  # the same launch shape, rows dealt out as asked
                        config = dict(cluster=p.cluster, tpr=p.tpr, nv=p.nv, sched=int(sched))
                        if p.nparams:
                            config["psrc"] = p.psrc
                        p = rk.plan(op, M, N, dt, kind="pipe", **config)
                    x_t, p_t = make_inputs(op, M, N, dtype, 7)
                    x = from_torch(x_t, dtype)
                    params = [from_torch(q, dtype) for q in p_t]
                    del x_t, p_t
                    nbytes = 2 * M * N * itemsize + len(params) * N * itemsize
                    y = cp.empty_like(x)
                    rk.run(op, x, params, out=y, kind="pipe" if config else None, config=config)
                    cp.cuda.Device().synchronize()
                    ref = reference(op, as_f64(x, dtype), [as_f64(q, dtype) for q in params])
                    err = rel_err(y, ref, dtype)
                    del ref
                    if not err <= TOL[dtype]:
                        print(f"| {op} | {dtype} | {M} | {N} | `{p.name}` WRONG (rel err {err:.3g}) |")
                        continue
                    event_us, _ = timer.median_us(lambda: rk.run(op, x, params, out=y, kind="pipe" if config else None,
                                                                  config=config))
                    ptr = modules[p.name].get_global("sol_diag_timeline")
                    n_cta = rk.launch_grid(p)
                    tl = cp.ndarray((4096, SLOTS), dtype=cp.uint64, memptr=ptr)
                    tl.fill(0)
                    timer.flush()
                    rk.run(op, x, params, out=y, kind="pipe" if config else None, config=config)
                    cp.cuda.Device().synchronize()
                    t = tl[:n_cta].get().astype(np.int64)
                    if (t[:, :5] == 0).any():
                        print(f"| {op} | {dtype} | {M} | {N} | `{p.name}` timeline incomplete |")
                        continue
                    t0 = t[:, 0].min()
                    ns = t[:, :5] - t0
                    rows = t[:, 6]
                    steps = [(e - f) / (r - 1) for f, e, r in zip(ns[:, 3], ns[:, 4], rows) if r > 1]
                    per_sm = Counter(t[:, 5].tolist())
                    vals = [event_us, nbytes / copy_bw / 1e3, ns[:, 4].max() / 1e3, ns[:, 0].max() / 1e3,
                            statistics.median(ns[:, 1] - ns[:, 0]) / 1e3,
                            statistics.median(ns[:, 3] - ns[:, 1]) / 1e3,
                            statistics.median(steps) / 1e3 if steps else float("nan"),
                            (ns[:, 4].max() - statistics.median(ns[:, 4])) / 1e3]
                    print(f"| {op} | {dtype} | {M} | {N} | `{p.name}` | {n_cta // p.cluster} | "
                          + " | ".join(f"{v:.1f}" for v in vals)
                          + f" | {min(per_sm.values())}-{max(per_sm.values())} ({len(per_sm)} SMs)"
                          + f" | {rows.min()}-{rows.max()} | {100 * nbytes / event_us / 1e3 / copy_bw:.1f} |",
                          flush=True)
                    del x, params, y
                    cp.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    main()
