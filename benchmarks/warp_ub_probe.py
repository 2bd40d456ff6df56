"""What a shuffle returns when its source lane takes no part in it: undefined by CUDA, measured here.

    KERNELS_BACKEND=cupy python benchmarks/warp_ub_probe.py --json gpu.json    # the hardware's answer
    .venv/bin/python benchmarks/warp_ub_probe.py --json cpu.json                # the emulator's choice

Four cases, each printed as what lanes 0..7 received (the value every lane offered is 100 + lane):
  exited       lanes 16..31 returned before the shuffle; lanes 0..15 read lane + 16
  diverged     lanes 8..31 skip the branch holding the shuffle (mask 0xff); lanes 0..7 read lane + 16
  reassigned   as `diverged`, but the value shuffled is assigned inside the branch only (reduce7's pattern)
  other_mask   lanes 0..15 (mask 0x0000ffff) and 16..31 (mask 0xffff0000) run the same shuffle; 0..15 read + 16
The emulator returns the caller's own value in each (docs/emulator.md); memcheck and racecheck report them.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import kernels  # noqa: E402

SRC = r'''
extern "C" __global__ void exited(int* out) {
    int lane = threadIdx.x;
    int v = 100 + lane;
    if (lane >= 16) return;
    out[lane] = __shfl_down_sync(0xffffffff, v, 16);
}
extern "C" __global__ void diverged(int* out) {
    int lane = threadIdx.x;
    int v = 100 + lane;
    int r = -1;
    if (lane < 8) r = __shfl_down_sync(0xff, v, 16);
    out[lane] = r;
}
extern "C" __global__ void reassigned(const int* x, int* out) {
    int lane = threadIdx.x;
    int v = 0;
    if (lane < 8) {
        v = x[lane] + 100;
        v = __shfl_down_sync(0xff, v, 16);
    }
    out[lane] = v;
}
extern "C" __global__ void other_mask(int* out) {
    int lane = threadIdx.x;
    int v = 100 + lane;
    unsigned m = lane < 16 ? 0x0000ffffu : 0xffff0000u;
    out[lane] = __shfl_down_sync(m, v, 16);
}
'''


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json")
    a = ap.parse_args()
    mod = kernels.RawModule(code=SRC)
    res = {"backend": kernels.backend()}
    for name in ("exited", "diverged", "reassigned", "other_mask"):
        out = kernels.asarray(np.full(32, -7, np.int32))
        args = (kernels.asarray(np.arange(32, dtype=np.int32)), out) if name == "reassigned" else (out,)
        mod.get_function(name)((1,), (32,), args)
        kernels.synchronize()
        got = kernels.asnumpy(out)[:8].tolist()
        res[name] = got
        print(f"{name:12} lanes 0..7 got {got}")
    if a.json:
        Path(a.json).write_text(json.dumps(res))


if __name__ == "__main__":
    main()
