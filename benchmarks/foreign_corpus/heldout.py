"""The held-out batch: repositories added only after the issue-21 fixes and never tuned on (their results are
reported as they came out): Liu-xiandong/How_to_optimize_in_GPU (the reduction series v0..v7, element-wise adds,
SGEMV) and xlite-dev/LeetCUDA (per-token softmax, LayerNorm, RMSNorm, block reductions, dot products,
histograms, transposes). Launch shapes follow their launchers (main() / the torch bindings) at small sizes."""
from __future__ import annotations

import numpy as np

from . import Corpus, Launch, Repo, Span, bf16, cdiv, f32, from_bf16, softmax

LIU = Repo("Liu-xiandong/How_to_optimize_in_GPU", "5d2def3e082c4e1364c3ade54451b7b9d1d6f044")
LEET = Repo("xlite-dev/LeetCUDA", "cb6a0497e829741fc5e3ad5e43a5beed0d85edcd")
HOST = ["host code dropped (main, check, the torch bindings); host-only #includes blanked"]


def corpus() -> Corpus:
    c = Corpus("heldout")
    _liu(c)
    _leet(c)
    return c


def _f16(x):
    return np.asarray(x, np.float32).astype(np.float16)


def _liu(c: Corpus) -> None:
    n = 1 << 15
    files = {"v0": "reduce_v0_baseline", "v1": "reduce_v1_no_divergence_branch", "v2": "reduce_v2_no_bank_conflict",
             "v3": "reduce_v3_add_during_load", "v4": "reduce_v4_unroll_last_warp", "v5": "reduce_v5_completely_unroll",
             "v6": "reduce_v6_multi_add", "v7": "reduce_v7_shuffle"}
    for v, f in files.items():
        c.source(f"liu/reduce_{v}", LIU, [Span(f"reduce/{f}.cu", r"^#define THREAD_PER_BLOCK", r"^bool check")],
                 changes=HOST)
    mk = lambda r: [r.integers(-4, 5, n).astype(np.float32), np.zeros(n // 256, np.float32)]

    def per_block(per, nb):
        return lambda a: {(1, (0, nb)): a[0].reshape(nb, per).sum(1)}
    for v in ("v0", "v1", "v2"):
        c.case(f"liu.reduce{v[1]}", f"liu/reduce_{v}", [Launch(f"reduce{v[1]}", (n // 256,), (256,), (0, 1))], mk,
               per_block(256, n // 256), rtol=0, atol=0)
    c.case("liu.reduce3", "liu/reduce_v3", [Launch("reduce3", (n // 512,), (256,), (0, 1))], mk,
           per_block(512, n // 512), rtol=0, atol=0)
    c.case("liu.reduce4", "liu/reduce_v4", [Launch("reduce4", (n // 512,), (256,), (0, 1))], mk,
           per_block(512, n // 512), rtol=0, atol=0, note="volatile last-warp unroll, no __syncwarp")
    c.case("liu.reduce5<256>", "liu/reduce_v5", [Launch("reduce5<256>", (n // 512,), (256,), (0, 1))], mk,
           per_block(512, n // 512), rtol=0, atol=0)
    nb = 16                                   # the launcher's block_num (1024) scaled down; n / nb per block
    mk2 = lambda r: [r.integers(-4, 5, n).astype(np.float32), np.zeros(nb, np.float32), np.uint32(n)]
    per = n // nb // 256
    for v, k in (("v6", "reduce6"), ("v7", "reduce7")):
        c.case(f"liu.{k}<256,{per}>", f"liu/reduce_{v}", [Launch(f"{k}<256, {per}>", (nb,), (256,), (0, 1, 2))], mk2,
               per_block(n // nb, nb), rtol=0, atol=0)

    c.source("liu/elementwise", LIU, [Span("elementwise/elementwise_add.cu", r"^#define THREAD_PER_BLOCK", r"^bool check")],
             changes=HOST)
    m = 256 * 4 * 8
    mk = lambda r: [f32(r, m), f32(r, m), np.zeros(m, np.float32)]
    ref = lambda a: {2: a[0].astype(np.float64) + a[1]}
    c.case("liu.add", "liu/elementwise", [Launch("add", (m // 256,), (256,), (0, 1, 2))], mk, ref, rtol=1e-6, atol=1e-6)
    c.case("liu.vec2_add", "liu/elementwise", [Launch("vec2_add", (m // 512,), (256,), (0, 1, 2))], mk, ref,
           rtol=1e-6, atol=1e-6)
    c.case("liu.vec4_add", "liu/elementwise", [Launch("vec4_add", (m // 1024,), (256,), (0, 1, 2))], mk, ref,
           rtol=1e-6, atol=1e-6)

    for v in ("0", "1", "2"):
        c.source(f"liu/sgemv_v{v}", LIU, [Span(f"sgemv/Sgemv_v{v}.cu", r"^#define OFFSET", r"^int main")], changes=HOST)
    M = 64
    for v, N, name, grid, block in (("0", 32, "Sgemv_v0", (M // 4,), (32, 4)), ("1", 128, "Sgemv_v1", (M // 4,), (32, 4)),
                                    ("2", 16, "Sgemv_v2<2>", (M // 8,), (32, 4))):
        c.case(f"liu.Sgemv_v{v}", f"liu/sgemv_v{v}", [Launch(name, grid, block, (0, 1, 2, 3, 4))],
               lambda r, N=N: [f32(r, M, N), f32(r, N), np.zeros(M, np.float32), np.int32(M), np.int32(N)],
               lambda a: {2: a[0].astype(np.float64) @ a[1]}, rtol=1e-4, atol=1e-4)


# What the files get from host headers under nvcc: FLT_MAX (<float.h>), the fixed-width integers (<stdint.h>)
LEET_PRELUDE = ("#include <cuda/std/cfloat>\n#ifndef FLT_MAX\n#define FLT_MAX 3.402823466e+38F\n#endif\n#include <cuda/std/cstdint>\n"
                "using cuda::std::int8_t; using cuda::std::int32_t; using cuda::std::uint32_t;\n")


def _leet_src(c: Corpus, sid: str, path: str, names=()):
    c.source(sid, LEET, [Span(f"kernels/{path}", r"^#include <algorithm>|^#include <cuda", r"^#define STRINGFY")],
             prelude=LEET_PRELUDE,
             changes=HOST + ["<torch/extension.h>, <torch/types.h>, <vector>, <tuple> blanked (the torch bindings "
                             "after the kernels are not included)",
                             "FLT_MAX and int8_t/int32_t/uint32_t from libcu++ (nvcc: <float.h>, <stdint.h>)"],
             drop=_drop_torch(), name_expressions=tuple(names))


def _drop_torch():
    from . import HOST_INCLUDES
    return HOST_INCLUDES + (r'^\s*#\s*include\s*<(torch/\w+\.h|vector|tuple)>',)


def _leet(c: Corpus) -> None:
    S, H = 8, 256
    _leet_src(c, "leet/softmax", "softmax/softmax.cu")
    mk = lambda r: [f32(r, S, H, scale=2.0), np.zeros((S, H), np.float32), np.int32(S * H)]
    sm = lambda a: {1: softmax(a[0])}
    for name, threads in (("softmax_f32_per_token_kernel<256>", 256), ("softmax_f32x4_per_token_kernel<64>", 64),
                          ("safe_softmax_f32_per_token_kernel<256>", 256), ("safe_softmax_f32x4_per_token_kernel<64>", 64)):
        c.case(f"leet.{name}", "leet/softmax", [Launch(name, (S,), (threads,), (0, 1, 2))], mk, sm, rtol=1e-4, atol=1e-6)
    # Upstream bug: `MD block_res = shared[local_tid];` for local_tid < 32 reads a `__shared__ MD shared[WAPR_NUM]`
    # of 8 entries (NUM_THREADS=256). The H200 faults (an illegal address; it poisons the context, hence a source
    # of its own: --isolate runs it in its own process). The emulator's plain run reads the neighbouring static
    # storage and gets the right answer (only lanes 0..7 feed the reduction); memcheck reports the line.
    _leet_src(c, "leet/softmax_online", "softmax/softmax.cu")
    c.case("leet.online_safe_softmax_f32_per_token_kernel<256>", "leet/softmax_online",
           [Launch("online_safe_softmax_f32_per_token_kernel<256>", (S,), (256,), (0, 1, 2))], mk, sm,
           rtol=1e-4, atol=1e-6,
           bug=("out_of_bounds", "shared[local_tid] with local_tid < 32 reads past `__shared__ MD shared[8]`"))
    mkh = lambda r: [_f16(f32(r, S, H, scale=2.0)), np.zeros((S, H), np.float16), np.int32(S * H)]
    c.case("leet.safe_softmax_f16_f32_per_token_kernel<256>", "leet/softmax",
           [Launch("safe_softmax_f16_f32_per_token_kernel<256>", (S,), (256,), (0, 1, 2))], mkh,
           lambda a: {1: softmax(a[0].astype(np.float64))}, rtol=2e-3, atol=1e-5)

    def ln(a, g=0.5, b=0.25):
        x = a[0].astype(np.float64)
        m = x.mean(1, keepdims=True)
        return ((x - m) / np.sqrt(((x - m) ** 2).mean(1, keepdims=True) + 1e-5)) * g + b
    _leet_src(c, "leet/layer_norm", "layer-norm/layer_norm.cu")
    mk = lambda r: [f32(r, S, H), np.zeros((S, H), np.float32), np.float32(0.5), np.float32(0.25), np.int32(S),
                    np.int32(H)]
    for name, threads in (("layer_norm_f32_kernel<256>", 256), ("layer_norm_f32x4_kernel<64>", 64)):
        c.case(f"leet.{name}", "leet/layer_norm", [Launch(name, (S,), (threads,), tuple(range(6)))], mk,
               lambda a: {1: ln(a)}, rtol=1e-4, atol=1e-5)
    mkh = lambda r: [_f16(f32(r, S, H)), np.zeros((S, H), np.float16), np.float32(0.5), np.float32(0.25),
                     np.int32(S), np.int32(H)]
    c.case("leet.layer_norm_f16_f32_kernel<256>", "leet/layer_norm",
           [Launch("layer_norm_f16_f32_kernel<256>", (S,), (256,), tuple(range(6)))], mkh,
           lambda a: {1: ln([a[0].astype(np.float64)])}, rtol=3e-3, atol=3e-3)

    _leet_src(c, "leet/rms_norm", "rms-norm/rms_norm.cu")
    rms = lambda a: {1: a[0].astype(np.float64) / np.sqrt((a[0].astype(np.float64) ** 2).mean(1, keepdims=True) + 1e-5) * 0.5}
    mk = lambda r: [f32(r, S, H), np.zeros((S, H), np.float32), np.float32(0.5), np.int32(S), np.int32(H)]
    for name, threads in (("rms_norm_f32_kernel<256>", 256), ("rms_norm_f32x4_kernel<64>", 64)):
        c.case(f"leet.{name}", "leet/rms_norm", [Launch(name, (S,), (threads,), tuple(range(5)))], mk, rms,
               rtol=1e-4, atol=1e-5)

    n = 256 * 12
    _leet_src(c, "leet/block_all_reduce", "reduce/block_all_reduce.cu")
    total = lambda a: {1: np.array([a[0].astype(np.float64).sum()])}
    mk = lambda r: [f32(r, n), np.zeros(1, np.float32), np.int32(n)]
    c.case("leet.block_all_reduce_sum_f32_f32_kernel<256>", "leet/block_all_reduce",
           [Launch("block_all_reduce_sum_f32_f32_kernel<256>", (n // 256,), (256,), (0, 1, 2))], mk, total,
           rtol=1e-5, atol=1e-4)
    c.case("leet.block_all_reduce_sum_f32x4_f32_kernel<64>", "leet/block_all_reduce",
           [Launch("block_all_reduce_sum_f32x4_f32_kernel<64>", (n // 256,), (64,), (0, 1, 2))], mk, total,
           rtol=1e-5, atol=1e-4)
    c.case("leet.block_all_reduce_sum_f16_f32_kernel<256>", "leet/block_all_reduce",
           [Launch("block_all_reduce_sum_f16_f32_kernel<256>", (n // 256,), (256,), (0, 1, 2))],
           lambda r: [_f16(f32(r, n)), np.zeros(1, np.float32), np.int32(n)],
           lambda a: {1: np.array([a[0].astype(np.float64).sum()])}, rtol=1e-4, atol=1e-3)
    c.case("leet.block_all_reduce_sum_bf16_f32_kernel<256>", "leet/block_all_reduce",
           [Launch("block_all_reduce_sum_bf16_f32_kernel<256>", (n // 256,), (256,), (0, 1, 2))],
           lambda r: [bf16(f32(r, n)), np.zeros(1, np.float32), np.int32(n)],
           lambda a: {1: np.array([from_bf16(a[0]).astype(np.float64).sum()])}, rtol=1e-4, atol=1e-3)

    _leet_src(c, "leet/dot_product", "dot-product/dot_product.cu")
    dot = lambda a: {2: np.array([(a[0].astype(np.float64) * a[1]).sum()])}
    mk = lambda r: [f32(r, n), f32(r, n), np.zeros(1, np.float32), np.int32(n)]
    c.case("leet.dot_prod_f32_f32_kernel<256>", "leet/dot_product",
           [Launch("dot_prod_f32_f32_kernel<256>", (n // 256,), (256,), (0, 1, 2, 3))], mk, dot, rtol=1e-5, atol=1e-4)
    c.case("leet.dot_prod_f32x4_f32_kernel<64>", "leet/dot_product",
           [Launch("dot_prod_f32x4_f32_kernel<64>", (n // 256,), (64,), (0, 1, 2, 3))], mk, dot, rtol=1e-5, atol=1e-4)

    _leet_src(c, "leet/histogram", "histogram/histogram.cu")
    hist = lambda a: {1: np.bincount(a[0], minlength=64)}
    mk = lambda r: [r.integers(0, 64, n).astype(np.int32), np.zeros(64, np.int32), np.int32(n)]
    c.case("leet.histogram_i32_kernel", "leet/histogram", [Launch("histogram_i32_kernel", (n // 256,), (256,), (0, 1, 2))],
           mk, hist, rtol=0, atol=0)
    c.case("leet.histogram_i32x4_kernel", "leet/histogram",
           [Launch("histogram_i32x4_kernel", (n // 256,), (64,), (0, 1, 2))], mk, hist, rtol=0, atol=0)

    _leet_src(c, "leet/mat_transpose", "mat-transpose/mat_transpose.cu")
    R, C = 64, 128      # the x4 shared kernels' grid covers 64 columns a block: their bindings need cols % 64 == 0
    mk = lambda r: [f32(r, R, C), np.zeros((C, R), np.float32), np.int32(R), np.int32(C)]
    tr = lambda a: {1: a[0].T}
    # the bindings: 1-D kernels on blocks of WARP_SIZE (32) threads, one element (x4: four) a thread; 2-D kernels on
    # 16 x 16 blocks, grid (cols / 16 / n_col, rows / 16 / n_row) with (n_row, n_col) from TORCH_BINDING_MAT_TRANSPOSE2D
    for name, grid, block in (("mat_transpose_f32_col2row_kernel", (R * C // 32,), (32,)),
                              ("mat_transpose_f32_row2col_kernel", (R * C // 32,), (32,)),
                              ("mat_transpose_f32x4_col2row_kernel", (R * C // 4 // 32,), (32,)),
                              ("mat_transpose_f32x4_row2col_kernel", (R * C // 4 // 32,), (32,)),
                              ("mat_transpose_f32_col2row2d_kernel", (C // 16, R // 16), (16, 16)),
                              ("mat_transpose_f32_row2col2d_kernel", (C // 16, R // 16), (16, 16)),
                              ("mat_transpose_f32x4_shared_col2row2d_kernel", (C // 64, R // 16), (16, 16)),
                              ("mat_transpose_f32x4_shared_bcf_col2row2d_kernel", (C // 64, R // 16), (16, 16))):
        c.case(f"leet.{name}", "leet/mat_transpose", [Launch(name, grid, block, (0, 1, 2, 3))], mk, tr, rtol=0, atol=0)
