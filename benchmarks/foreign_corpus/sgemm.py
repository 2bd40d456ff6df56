"""siboehm/SGEMM_CUDA: the twelve kernels of src/kernels.cuh in one TU (the order kernels.cuh includes them),
launched with runner.cu's parameters (its A6000 settings) on 256 x 256 x 256."""
from __future__ import annotations

import numpy as np

from . import Corpus, Launch, Repo, Span, cdiv, f32

SGEMM = Repo("siboehm/SGEMM_CUDA", "60cba6f9b20a198116c76f18de8047f44df8c8b8")
FILES = ["10_kernel_warptiling", "11_kernel_double_buffering", "12_kernel_double_buffering", "1_naive",
         "2_kernel_global_mem_coalesce", "3_kernel_shared_mem_blocking", "4_kernel_1D_blocktiling",
         "5_kernel_2D_blocktiling", "6_kernel_vectorize", "7_kernel_resolve_bank_conflicts", "8_kernel_bank_extra_col",
         "9_kernel_autotuned"]
FIRST = r"^(#define CEIL_DIV|template|__global__|const int|namespace)"
# kernel name expression, grid (for M = N = K = 256), block -- from src/runner.cu
M = N = K = 256
LAUNCHES = [
    ("sgemm_naive", (cdiv(M, 32), cdiv(N, 32)), (32, 32)),
    ("sgemm_global_mem_coalesce<32>", (cdiv(M, 32), cdiv(N, 32)), (32 * 32,)),
    ("sgemm_shared_mem_block<32>", (cdiv(M, 32), cdiv(N, 32)), (32 * 32,)),
    ("sgemm1DBlocktiling<64, 64, 8, 8>", (cdiv(N, 64), cdiv(M, 64)), (64 * 64 // 8,)),
    ("sgemm2DBlocktiling<128, 128, 8, 8, 8>", (cdiv(N, 128), cdiv(M, 128)), (128 * 128 // 64,)),
    ("sgemmVectorize<128, 128, 8, 8, 8>", (cdiv(N, 128), cdiv(M, 128)), (128 * 128 // 64,)),
    ("sgemmResolveBankConflicts<128, 128, 8, 8, 8>", (cdiv(N, 128), cdiv(M, 128)), (128 * 128 // 64,)),
    ("sgemmResolveBankExtraCol<128, 128, 8, 8, 8>", (cdiv(N, 128), cdiv(M, 128)), (128 * 128 // 64,)),
    ("sgemmAutotuned<128, 128, 16, 8, 8>", (cdiv(N, 128), cdiv(M, 128)), (256,)),
    ("sgemmWarptiling<128, 128, 16, 64, 64, 4, 8, 4, 128>", (cdiv(N, 128), cdiv(M, 128)), (128,)),
    ("sgemmDoubleBuffering<128, 256, 16, 128, 32, 1, 8, 8, 256>", (cdiv(N, 256), cdiv(M, 128)), (256,)),
    ("runSgemmDoubleBuffering2<128, 128, 16, 64, 64, 4, 8, 4, 128>", (cdiv(N, 128), cdiv(M, 128)), (128,)),
]


def add(c: Corpus) -> None:
    c.source("sgemm/kernels", SGEMM, [Span(f"src/kernels/{f}.cuh", FIRST) for f in FILES],
             prelude="#include <cuda_runtime.h>\n#include <cooperative_groups.h>\n#include <cuda/barrier>\n"
                     "typedef unsigned int uint;\n",
             changes=["each .cuh from its first declaration: `#pragma once` and the includes dropped (host headers "
                      "<cstdio>, <cstdlib>, <cassert>, <algorithm>, <cublas_v2.h>); the CUDA headers they include "
                      "(<cuda_runtime.h>, <cooperative_groups.h>, <cuda/barrier>) come first instead",
                      "`uint` typedef (nvcc gets it from glibc's <sys/types.h>)"],
             name_expressions=tuple(l[0] for l in LAUNCHES))

    def mk(r):
        return [np.int32(M), np.int32(N), np.int32(K), np.float32(0.5), f32(r, M, K), f32(r, K, N), np.float32(2.0),
                f32(r, M, N)]
    ref = lambda a: {7: 0.5 * (a[4].astype(np.float64) @ a[5]) + 2.0 * a[7]}
    for name, grid, block in LAUNCHES:
        c.case(f"sgemm.{name.split('<')[0]}", "sgemm/kernels", [Launch(name, grid, block, tuple(range(8)))], mk, ref,
               rtol=1e-4, atol=1e-3)
