"""The emulator's memory counters (kernels.memory_counters) next to Nsight Compute's on the same kernels.

    .venv/bin/python benchmarks/memory_counters_ncu.py --emulate emu.json     # counts on the CPU emulator
    ncu --clock-control none --csv --metrics $(python benchmarks/memory_counters_ncu.py --metrics) \\
        python3 benchmarks/memory_counters_ncu.py --gpu > ncu.csv                 # the same launches on a GPU
    .venv/bin/python benchmarks/memory_counters_ncu.py --compare emu.json ncu.csv

Kernels (lesson 3's subjects): a naive transpose (coalesced loads, strided stores), a 32 x 32 shared-memory tile
(column reads: 32-way bank conflicts) and the padded 33-column tile (none), plus copies at strides 1, 2 and 32
floats. One launch of each, 256 x 256 floats, blocks of 32 x 8 threads.
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import kernels  # noqa: E402

SRC = r'''
#define TILE 32
extern "C" __global__ void transpose_naive(const float* in, float* out, int n) {
    int x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += 8) out[x * n + (y + j)] = in[(y + j) * n + x];
}
template <int PAD>
__global__ void transpose_tiled(const float* in, float* out, int n) {
    __shared__ float tile[TILE][TILE + PAD];
    int x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += 8) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * n + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += 8) out[(y + j) * n + x] = tile[threadIdx.x][threadIdx.y + j];
}
extern "C" __global__ void copy_stride(const float* in, float* out, int stride) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = in[i * stride];
}
'''
N = 256
NAMES = ["transpose_tiled<0>", "transpose_tiled<1>"]
# (label, kernel, grid, block, args builder)
LAUNCHES = [
    ("naive transpose", "transpose_naive", (N // 32, N // 32), (32, 8), "transpose"),
    ("32x32 tile", "transpose_tiled<0>", (N // 32, N // 32), (32, 8), "transpose"),
    ("32x33 padded tile", "transpose_tiled<1>", (N // 32, N // 32), (32, 8), "transpose"),
    ("copy stride 1", "copy_stride", (N * N // 32 // 256,), (256,), 1),
    ("copy stride 2", "copy_stride", (N * N // 32 // 256,), (256,), 2),
    ("copy stride 32", "copy_stride", (N * N // 32 // 256,), (256,), 32),
]
METRICS = ["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
           "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum", "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
           "smsp__inst_executed_op_shared_ld.sum", "smsp__inst_executed_op_shared_st.sum",
           "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
           "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
           "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
           "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"]
SHORT = {"l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": "ld req", "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum":
         "ld sect", "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum": "st req",
         "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum": "st sect", "smsp__inst_executed_op_shared_ld.sum": "lds",
         "smsp__inst_executed_op_shared_st.sum": "sts", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": "lds wf",
         "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum": "sts wf",
         "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": "lds confl",
         "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum": "sts confl"}


def _run(record: bool):
    mod = kernels.RawModule(code=SRC, name_expressions=NAMES)
    x = np.arange(N * N, dtype=np.float32)
    rows = []
    for label, name, grid, block, kind in LAUNCHES:
        f = mod.get_function(name)
        if kind == "transpose":
            args = [kernels.asarray(x), kernels.asarray(np.zeros(N * N, np.float32)), np.int32(N)]
        else:
            args = [kernels.asarray(x), kernels.asarray(np.zeros(N * N // 32, np.float32)), np.int32(kind)]
        with kernels.memory_counters() as rec:
            f(grid, block, tuple(args))
        kernels.synchronize()
        out = kernels.asnumpy(args[1])
        want = x.reshape(N, N).T.reshape(-1) if kind == "transpose" else x[np.arange(N * N // 32) * kind]
        assert np.array_equal(out, want), label
        rows.append((label, name, rec.last.as_ncu() if (record and rec.last) else None))
    return rows


def parse_ncu(text: str):
    """{(launch index, metric): value} from `ncu --csv` (launches in program order)."""
    lines = [l for l in text.splitlines() if l.startswith('"')]
    reader = csv.DictReader(io.StringIO("\n".join(lines)))
    ids, out = [], {}
    for row in reader:
        rid = row.get("ID")
        if rid not in ids:
            ids.append(rid)
        value = row.get("Metric Value", "").replace(",", "")
        try:
            out[(ids.index(rid), row["Metric Name"])] = float(value)
        except ValueError:
            pass
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--emulate", metavar="JSON")
    ap.add_argument("--gpu", action="store_true")
    ap.add_argument("--metrics", action="store_true", help="print the ncu metric list")
    ap.add_argument("--compare", nargs=2, metavar=("EMU_JSON", "NCU_CSV"))
    a = ap.parse_args()
    if a.metrics:
        print(",".join(METRICS))
    elif a.gpu:
        _run(record=False)
    elif a.emulate:
        rows = _run(record=True)
        Path(a.emulate).write_text(json.dumps([{"label": l, "kernel": k, "counters": c} for l, k, c in rows], indent=1))
        for l, _, c in rows:
            print(f"{l:20} " + " ".join(f"{SHORT[m]}={int(c[m])}" for m in METRICS))
    elif a.compare:
        emu = json.loads(Path(a.compare[0]).read_text())
        ncu = parse_ncu(Path(a.compare[1]).read_text())
        print(f"{'kernel':20} {'metric':10} {'emulator':>10} {'ncu (H200)':>11}  ")
        agree = total = 0
        for i, row in enumerate(emu):
            for m in METRICS:
                e, g = row["counters"][m], ncu.get((i, m))
                total += 1
                agree += g is not None and e == g
                mark = "" if g is not None and e == g else "   <-- differs"
                print(f"{row['label']:20} {SHORT[m]:10} {e:10.0f} {'-' if g is None else f'{g:11.0f}'}{mark}")
        print(f"\n{agree}/{total} counts equal")
    else:
        ap.print_help()


if __name__ == "__main__":
    main()
