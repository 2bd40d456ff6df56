#!/usr/bin/env python3
"""Launch one reference-kernel case a few times, for a profiler (GPU only).

    ncu --clock-control none --kernel-name regex:rmsnorm --launch-skip 2 --launch-count 1 \\
        --section SpeedOfLight --section Occupancy --section WarpStateStats \\
        python3 benchmarks/profile_one.py rmsnorm fp32 960 65536 --kind cluster --config cluster=8:tpr=256
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import cupy as cp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from solutions.kernels.dispatch import ReferenceKernels  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("op", choices=("layernorm", "rmsnorm", "softmax"))
    ap.add_argument("dtype", choices=("fp32", "bf16"))
    ap.add_argument("M", type=int)
    ap.add_argument("N", type=int)
    ap.add_argument("--kind", default=None)
    ap.add_argument("--config", default="", help="plan overrides, e.g. cluster=4:tpr=128")
    ap.add_argument("--launches", type=int, default=4)
    args = ap.parse_args(argv)
    config = {k: int(v) for k, v in (kv.split("=") for kv in args.config.split(":") if kv)}
    dt = cp.uint16 if args.dtype == "bf16" else cp.float32
    rng = cp.random.default_rng(0)
    x = rng.standard_normal((args.M, args.N), dtype=cp.float32)
    params = [1.0 + 0.1 * rng.standard_normal(args.N, dtype=cp.float32) for _ in
              range({"layernorm": 2, "rmsnorm": 1, "softmax": 0}[args.op])]
    if dt == cp.uint16:  # bf16 bits by truncation: values do not matter for a profile
        x, params = (x.view(cp.uint32) >> 16).astype(cp.uint16), [(p.view(cp.uint32) >> 16).astype(cp.uint16)
                                                                 for p in params]
    rk = ReferenceKernels()
    p = rk.plan(args.op, args.M, args.N, dt, kind=args.kind, **config)
    y = cp.empty_like(x)
    for _ in range(args.launches):
        rk.run(args.op, x, params, out=y, kind=args.kind, config=config)
    cp.cuda.Device().synchronize()
    print(p.name, "grid", p.grid, "block", p.block)


if __name__ == "__main__":
    main()
