"""CPU emulator speed: the lesson-5 LayerNorm kernel (seed, blank filled) on the
emulator vs the same algorithm on numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1).

    .venv/bin/python benchmarks/emulator_vs_numba.py [--repeats 3] [--sim-rows 4] [--sim-n 1024]

Prints a table.  Goal: <= 0.3 s per launch for M=1024, N=4096, 256 threads on
one core with a cached build, and >= 100x the simulator per element.
The simulator has no warp shuffles, so its kernel reduces through shared
memory (tree) instead; otherwise it is the same two-moment, block-per-row
algorithm with the same launch shape.  CPU time (process_time) is reported next
to wall time because the machine may be shared.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SEED = ROOT / "tests" / "kernels" / "cuda" / "layernorm_seed.cu"

NUMBA_SCRIPT = r'''
import os, sys, time
os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
import numpy as np
from numba import cuda, float32

BLOCK = 256

@cuda.jit
def layernorm(x, g, b, y, M, N, eps):
    row = cuda.blockIdx.x
    tid = cuda.threadIdx.x
    s_sum = cuda.shared.array(BLOCK, float32)
    s_sq = cuda.shared.array(BLOCK, float32)
    stats = cuda.shared.array(2, float32)
    if row >= M:
        return
    local_sum = float32(0.0)
    local_sq = float32(0.0)
    col = tid
    while col < N:
        v = x[row, col]
        local_sum += v
        local_sq += v * v
        col += BLOCK
    s_sum[tid] = local_sum
    s_sq[tid] = local_sq
    cuda.syncthreads()
    stride = BLOCK // 2
    while stride > 0:
        if tid < stride:
            s_sum[tid] += s_sum[tid + stride]
            s_sq[tid] += s_sq[tid + stride]
        cuda.syncthreads()
        stride //= 2
    if tid == 0:
        mean = s_sum[0] / N
        var = s_sq[0] / N - mean * mean
        stats[0] = mean
        stats[1] = 1.0 / (max(var, 0.0) + eps) ** 0.5
    cuda.syncthreads()
    mean = stats[0]
    inv = stats[1]
    col = tid
    while col < N:
        y[row, col] = (x[row, col] - mean) * inv * g[col] + b[col]
        col += BLOCK

M, N = int(sys.argv[1]), int(sys.argv[2])
rng = np.random.default_rng(0)
x = rng.standard_normal((M, N)).astype(np.float32)
g = np.ones(N, np.float32); b = np.zeros(N, np.float32); y = np.zeros_like(x)
t0, c0 = time.perf_counter(), time.process_time()
layernorm[M, BLOCK](x, g, b, y, M, N, np.float32(1e-5))
t1, c1 = time.perf_counter(), time.process_time()
ref = (x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + 1e-5)
assert np.allclose(y, ref, atol=1e-3), "numba simulator result wrong"
print(t1 - t0, c1 - c0)
'''


def emulator_time(M: int, N: int, repeats: int):
    os.environ["KERNELS_BACKEND"] = "cpu"
    import kernels
    mod = kernels.RawModule(code=SEED.read_text(), name_expressions=["layernorm_kernel<256>"])
    f = mod.get_function("layernorm_kernel<256>")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((M, N)).astype(np.float32)
    g, b, y = np.ones(N, np.float32), np.zeros(N, np.float32), np.zeros((M, N), np.float32)
    args = (x, g, b, y, np.int32(M), np.int32(N), np.float32(1e-5))
    f((M,), (256,), args)          # warm: build cached, stacks mapped
    walls, cpus = [], []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        f((M,), (256,), args)
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    ref = (x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + 1e-5)
    assert np.allclose(y, ref, atol=1e-3), "emulator result wrong"
    return min(walls), min(cpus)


def require_numba() -> None:
    # checked before any timing: the simulator runs in a child, where a missing numba is a bare ModuleNotFoundError
    import importlib.util
    if importlib.util.find_spec("numba") is None or importlib.util.find_spec("numba.cuda") is None:
        raise SystemExit("numba's CUDA simulator is not installed: pip install -e '.[bench]' (numba-cuda), "
                         "or pass --skip-numba to time the emulator alone")


def numba_time(M: int, N: int):
    proc = subprocess.run([sys.executable, "-c", NUMBA_SCRIPT, str(M), str(N)], capture_output=True, text=True,
                          timeout=3600)
    if proc.returncode != 0:
        raise RuntimeError("numba simulator run failed:\n" + proc.stderr[-2000:])
    wall, cpu = (float(v) for v in proc.stdout.split())
    return wall, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--sim-rows", type=int, default=4, help="rows M for the (slow) numba simulator")
    ap.add_argument("--sim-n", type=int, default=1024)
    ap.add_argument("--skip-numba", action="store_true")
    a = ap.parse_args()
    if not a.skip_numba:
        require_numba()
    rows = []
    big_wall, big_cpu = emulator_time(1024, 4096, a.repeats)
    rows.append(("emulator (g++ -O2, fibers)", 1024, 4096, big_wall, big_cpu))
    small_wall, small_cpu = emulator_time(a.sim_rows, a.sim_n, a.repeats)
    rows.append(("emulator (g++ -O2, fibers)", a.sim_rows, a.sim_n, small_wall, small_cpu))
    if not a.skip_numba:
        nw, nc = numba_time(a.sim_rows, a.sim_n)
        rows.append(("numba CUDA simulator", a.sim_rows, a.sim_n, nw, nc))
    print(f"LayerNorm (lesson 5 seed), 256 threads/block, one block per row; CPU: {os.cpu_count()} cores visible")
    print(f"{'backend':30} {'M':>5} {'N':>6} {'wall s':>9} {'cpu s':>9} {'ns/elem (cpu)':>14} {'ns/thread (cpu)':>16}")
    for name, M, N, w, c in rows:
        print(f"{name:30} {M:5d} {N:6d} {w:9.4f} {c:9.4f} {1e9 * c / (M * N):14.2f} {1e9 * c / (M * 256):16.1f}")
    target = "met" if big_cpu <= 0.3 else "MISSED"
    print(f"\ngoal <= 0.3 s per launch at M=1024, N=4096: {big_cpu:.3f} s cpu / {big_wall:.3f} s wall ({target})")
    if not a.skip_numba:
        per_elem_emu = big_cpu / (1024 * 4096)
        per_elem_sim = nc / (a.sim_rows * a.sim_n)
        ratio = per_elem_sim / per_elem_emu
        print(f"speed-up per element-thread vs numba simulator: {ratio:,.0f}x (goal >= 100x: "
              f"{'met' if ratio >= 100 else 'MISSED'})")


if __name__ == "__main__":
    main()
