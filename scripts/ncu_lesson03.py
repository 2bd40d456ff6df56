"""Lesson 03's kernels on a GPU (256 x 256 transposes, head_permute at HS 64 / 8 / 1): the target of

    ncu --csv --page raw --kernel-name regex:'transpose|head_permute' --metrics <the names kernels.LaunchCounters.as_ncu() gives> \\
        python3 scripts/ncu_lesson03.py

run from the repository root (docs/gpu_runs.md has the numbers it gave on the H200)."""
import sys
import numpy as np
import cupy as cp

sys.path.insert(0, ".")
from autograder import notebook as nbio

cell = nbio.cells_by_grade_id(nbio.read("solutions/03_transpose.ipynb"))["transpose_src"]
src = nbio.python_string_var(nbio._fill(cell.source), "TRANSPOSE_CU")
mod = cp.RawModule(code=src, options=("-std=c++17",), name_expressions=["transpose_tiled<0>", "transpose_tiled<1>"])
N = 256
x = cp.random.standard_normal((N, N), dtype=cp.float32)
for name in ("transpose_naive", "transpose_tiled<0>", "transpose_tiled<1>"):
    y = cp.full((N, N), cp.nan, dtype=cp.float32)
    mod.get_function(name)((N // 32, N // 32, 1), (32, 8), (y, x, np.int32(N), np.int32(N)))
    assert bool(cp.all(y == x.T)), name
B, T, NH = 1, 32, 4
for hs in (64, 8, 1):
    qkv = cp.arange(B * T * 3 * NH * hs, dtype=cp.float32)
    outs = [cp.zeros(B * NH * T * hs, dtype=cp.float32) for _ in range(3)]
    total = B * NH * T * hs
    mod.get_function("head_permute")((-(-total // 256),), (256,), (*outs, qkv, np.int32(B), np.int32(T), np.int32(NH), np.int32(hs)))
cp.cuda.Device().synchronize()
print("ok")
