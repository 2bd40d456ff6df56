#!/usr/bin/env python3
"""Stage-removal diagnosis: what does each stage of the reference kernels cost? (GPU only)

Builds the reference kernels several ways and times the same default launch of each shape side by side
(same Timer as speed_of_light.py: CUDA events, L2 flushed before every launch, median). Every build but
default and two-exp computes wrong results on purpose; the differences in time are the stages' costs:
  default       the shipped build (verified against float64 first)
  no-params     gamma/beta never read (-DSOL_DIAG_NO_PARAMS): global, shared memory and register copies alike
  no-exchange   pipe kernels: each CTA keeps its own partial statistics, no cross-CTA exchange through
                distributed shared memory (-DSOL_DIAG_NO_EXCHANGE)
  no-reduce     pipe kernels: each thread keeps its own partial statistics, no shuffles, block barrier or
                exchange (-DSOL_DIAG_NO_REDUCE)
  no-exp        softmax: every exponential is one FMA instead of exp2f (-DSOL_DIAG_NO_EXP; LayerNorm and
                RMSNorm have none: their control)
  two-exp       softmax's pipe kernel as before it kept its exponentials: each computed twice, for the sum and
                for the output (-DSOL_SOFTMAX_TWO_EXP; a correct build, verified like the default)
--variant kind[:key=int...] (as speed_of_light.py's --variants) times that forced launch instead of the default.
no-exchange and no-reduce deal the pipe kernels' rows out statically (no message carries a row ticket), which
no default plan does (tickets, or late tickets: PIPE_TUNING). Softmax (no parameters) is the control of no-params. What remains in no-reduce is loading, arithmetic and
storing: where it is still under the copy ceiling, the row's own instructions and latency are the limit.
(Named param_traffic.py until the no-exchange / no-reduce builds were added. docs/benchmarks/
param_traffic_before_persist.txt also has an "x-no-L1" column: x read with ld.global.nc.L1::no_allocate,
measured no better and removed; its code is in commit 1cce242.)

    python benchmarks/stage_removal.py [--ns 8192,16384,32768,65536] [--ops layernorm,rmsnorm,softmax]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import cupy as cp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from speed_of_light import (TOL, as_f64, diagnosis_args, diagnosis_shapes, from_torch, make_inputs,  # noqa: E402
                            reference, rel_err, timer_and_ceiling, variant_spec)

from solutions.kernels.dispatch import ReferenceKernels  # noqa: E402

BUILDS = {"default": (), "no-params": ("-DSOL_DIAG_NO_PARAMS",), "no-exchange": ("-DSOL_DIAG_NO_EXCHANGE",),
          "no-reduce": ("-DSOL_DIAG_NO_REDUCE",), "no-exp": ("-DSOL_DIAG_NO_EXP",),
          "two-exp": ("-DSOL_SOFTMAX_TWO_EXP",)}
VERIFIED = ("default", "two-exp")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    diagnosis_args(ap, "4096,8192,16384,32768,65536")
    ap.add_argument("--builds", default=",".join(BUILDS))
    ap.add_argument("--variant", default=None, help="a forced launch, e.g. pipe:cluster=8:tpr=128")
    args = ap.parse_args(argv)
    spec = variant_spec(args.variant) if args.variant else {}
    kind, config = spec.get("kind"), spec.get("config")
    l2, timer, copy_bw = timer_and_ceiling(args.reps)
    builds = [b for b in args.builds.split(",") if b]
    rks = {b: ReferenceKernels(options=("-std=c++17",) + BUILDS[b]) for b in builds}
    print(f"copy ceiling {copy_bw:.0f} GB/s; % of copy per build", flush=True)
    print("| op | dtype | M | N | kernel | " + " | ".join(builds) + " |")
    print("|---|---|---:|---:|---|" + "---:|" * len(builds))
    for dtype in args.dtypes.split(","):
        itemsize = 2 if dtype == "bf16" else 4
        for M, N in diagnosis_shapes(args, l2, itemsize):
            for op in args.ops.split(","):
                x_t, p_t = make_inputs(op, M, N, dtype, 7)
                x = from_torch(x_t, dtype)
                params = [from_torch(p, dtype) for p in p_t]
                nbytes = 2 * M * N * itemsize + len(params) * N * itemsize
                ref = reference(op, as_f64(x, dtype), [as_f64(p, dtype) for p in params])
                y = cp.empty_like(x)
                cells = []
                for b in builds:
                    rk = rks[b]
                    rk.run(op, x, params, out=y, kind=kind, config=config)
                    cp.cuda.Device().synchronize()
                    if b in VERIFIED and not rel_err(y, ref, dtype) <= TOL[dtype]:
                        cells.append("WRONG")
                        continue
                    us, _ = timer.median_us(lambda: rk.run(op, x, params, out=y, kind=kind, config=config))
                    cells.append(f"{100 * nbytes / us / 1e3 / copy_bw:.1f}%")
                name = rks[builds[0]].plan(op, M, N, x.dtype, kind=kind, **(config or {})).name
                print(f"| {op} | {dtype} | {M} | {N} | `{name}` | " + " | ".join(cells) + " |", flush=True)
                del x, params, ref, y, x_t, p_t
                cp.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    main()
