"""NVIDIA/cuda-samples: reductions, transposes, scans, histograms, cooperative groups, libcu++ barriers and
pipelines, vote intrinsics. Launch shapes follow each sample's host code at small sizes."""
from __future__ import annotations

import numpy as np

from . import Corpus, Launch, Repo, Span, cdiv, f32

SAMPLES = Repo("NVIDIA/cuda-samples", "c94ff366aed18c797b8a85dfaac7817b0228b420")
S = "Samples/"
HOST = ["host code dropped (main, launch wrappers, helper_cuda.h/helper_functions.h includes)"]
UINT = "typedef unsigned int uint;\n"


def _red(c: Corpus) -> None:
    path = S + "2_Concepts_and_Techniques/reduction/reduction_kernel.cu"
    names = ["reduce0<float>", "reduce1<float>", "reduce2<float>", "reduce3<float>", "reduce4<float, 256>",
             "reduce5<float, 256>", "reduce6<float, 256, true>", "reduce6<float, 256, false>",
             "reduce7<float, 256, true>", "reduce7<int, 256, true>", "reduce7<float, 64, false>",
             "cg_reduce<float>", "multi_warp_cg_reduce<float, 256, 64>", "reduce4<float, 32>"]
    c.source("samples/reduction", SAMPLES, [Span(path, r"^#include <cooperative_groups.h>", r"^extern \"C\" bool isPow2")],
             prelude="", changes=HOST + ["the file ends before its host wrapper (`extern \"C\" bool isPow2` on)"],
             name_expressions=tuple(names))
    n = 1 << 14

    def mk(dtype):
        def make(r):
            if dtype == np.int32:
                x = r.integers(-50, 50, n).astype(np.int32)
            else:
                x = f32(r, n)
            return [x, np.zeros(64, dtype), np.uint32(n)]
        return make

    def ref_blocks(per_block):
        def ref(a):
            x = a[0].astype(np.float64)
            nb = cdiv(n, per_block)
            sums = np.add.reduceat(x, np.arange(0, n, per_block))[:nb]
            return {(1, (0, nb)): sums}
        return ref
    # block size 256: reduce0-2 one element per thread, 3-6 two per thread (6, 7: grid-stride over 16 blocks)
    for name, grid, per in (("reduce0<float>", n // 256, 256), ("reduce1<float>", n // 256, 256),
                            ("reduce2<float>", n // 256, 256), ("reduce3<float>", n // 512, 512),
                            ("reduce4<float, 256>", n // 512, 512), ("reduce5<float, 256>", n // 512, 512)):
        c.case(f"samples.{name}", "samples/reduction", [Launch(name, (grid,), (256,), (0, 1, 2), shared_mem=256 * 4)],
               mk(np.float32), ref_blocks(per), rtol=1e-4, atol=1e-3)

    for name, dtype, threads in (("reduce6<float, 256, true>", np.float32, 256), ("reduce6<float, 256, false>", np.float32, 256),
                                 ("reduce7<float, 256, true>", np.float32, 256), ("reduce7<int, 256, true>", np.int32, 256),
                                 ("reduce7<float, 64, false>", np.float32, 64), ("cg_reduce<float>", np.float32, 256),
                                 ("multi_warp_cg_reduce<float, 256, 64>", np.float32, 256)):
        c.case(f"samples.{name}", "samples/reduction", [Launch(name, (16,), (threads,), (0, 1, 2), shared_mem=threads * 4)],
               mk(dtype), check=_partials_total(1, 16), rtol=1e-4, atol=1e-2,
               note="grid-stride: the 16 block partial sums are added on the host, as the sample does")
    # 32 threads: the sample allocates two warps of shared memory (smemSize = 2 * threads)
    c.case("samples.reduce4<float, 32>", "samples/reduction",
           [Launch("reduce4<float, 32>", (n // 64,), (32,), (0, 1, 2), shared_mem=2 * 32 * 4)],
           lambda r: [f32(r, n), np.zeros(n // 64, np.float32), np.uint32(n)], ref_blocks(64), rtol=1e-4, atol=1e-3)

    tpath = S + "2_Concepts_and_Techniques/threadFenceReduction/threadFenceReduction_kernel.cuh"
    c.source("samples/threadfence", SAMPLES,
             [Span(tpath, r"^#include <cooperative_groups.h>", r"^cudaError_t setRetirementCount"),
              Span(tpath, r"^template <unsigned int blockSize, bool nIsPow2>\s*$", r"^bool isPow2", after=r"setRetirementCount")],
             changes=HOST + ["setRetirementCount (a host cudaMemcpyToSymbol wrapper) dropped"],
             name_expressions=("reduceMultiPass<128, true>", "reduceSinglePass<128, true>", "reduceSinglePass<128, false>"))
    c.case("samples.reduceMultiPass<128,true>", "samples/threadfence",
           [Launch("reduceMultiPass<128, true>", (8,), (128,), (0, 1, 2), shared_mem=128 * 4)],
           mk(np.float32), check=_partials_total(1, 8))
    total = lambda a: {(1, (0, 1)): np.array([a[0].astype(np.float64).sum()])}
    c.case("samples.reduceSinglePass<128,true>", "samples/threadfence",
           [Launch("reduceSinglePass<128, true>", (8,), (128,), (0, 1, 2), shared_mem=128 * 4)],
           mk(np.float32), total, rtol=1e-4, atol=1e-2, note="last block (atomicInc ticket) sums the partials")
    c.case("samples.reduceSinglePass<128,false>", "samples/threadfence",
           [Launch("reduceSinglePass<128, false>", (8,), (128,), (0, 1, 2), shared_mem=128 * 4)],
           lambda r: [f32(r, n - 37), np.zeros(64, np.float32), np.uint32(n - 37)], total, rtol=1e-4, atol=1e-2)


def _partials_total(out: int, count: int, inp: int = 0, rtol: float = 1e-5):
    """The ``count`` partial results in buffer ``out`` must add up to the sum of buffer ``inp``."""
    def check(got, inputs):
        want = float(inputs[inp].astype(np.float64).sum())
        have = float(np.asarray(got[out]).reshape(-1)[:count].astype(np.float64).sum())
        if abs(have - want) > rtol * max(1.0, abs(want)) + 1e-3:
            return f"partial sums add up to {have!r}, want {want!r}"
        return None
    return check


def _transpose(c: Corpus) -> None:
    path = S + "6_Performance/transpose/transpose.cu"
    c.source("samples/transpose", SAMPLES,
             [Span(path, r"^#include <cooperative_groups.h>", r"^// Utilities and system includes"),
              Span(path, r"^#define TILE_DIM", r"^// This sample assumes"),
              Span(path, r"^__global__ void copy\(", r"^void computeTransposeGold")],
             changes=HOST + ["the host globals between the #defines and the kernels (MATRIX_SIZE_X, ...) dropped"])
    W, H = 96, 64   # TILE_DIM 32, BLOCK_ROWS 16: grid (W/32, H/32), block (32, 16)
    mk = lambda r: [np.zeros(W * H, np.float32), f32(r, H, W), np.int32(W), np.int32(H)]
    T = 32

    def fine(x):   # each 32x32 tile transposed in place (square matrices in the sample)
        o = np.zeros_like(x)
        for by in range(H // T):
            for bx in range(W // T):
                o[by * T:(by + 1) * T, bx * T:(bx + 1) * T] = x[by * T:(by + 1) * T, bx * T:(bx + 1) * T].T
        return o

    def coarse(x):  # tiles moved to the transposed position, each tile kept as it was
        o = np.zeros((W, H), x.dtype)
        for by in range(H // T):
            for bx in range(W // T):
                o[bx * T:(bx + 1) * T, by * T:(by + 1) * T] = x[by * T:(by + 1) * T, bx * T:(bx + 1) * T]
        return o
    refs = {"copy": lambda a: {0: a[1]},
            "transposeNaive": lambda a: {0: a[1].T}, "transposeCoalesced": lambda a: {0: a[1].T},
            "transposeNoBankConflicts": lambda a: {0: a[1].T}, "transposeDiagonal": lambda a: {0: a[1].T},
            "transposeCoarseGrained": lambda a: {0: coarse(a[1])}}
    for name, ref in refs.items():
        c.case(f"samples.{name}", "samples/transpose", [Launch(name, (W // 32, H // 32), (32, 16), (0, 1, 2, 3))],
               mk, ref, rtol=0, atol=0)
    # fine-grained: a square matrix (it indexes the output with width for rows)
    mk_sq = lambda r: [np.zeros(64 * 64, np.float32), f32(r, 64, 64), np.int32(64), np.int32(64)]
    # copySharedMem guards its stores with (x < height, y < width): meant for square matrices, like the sample's
    c.case("samples.copySharedMem", "samples/transpose", [Launch("copySharedMem", (2, 2), (32, 16), (0, 1, 2, 3))], mk_sq,
           lambda a: {0: a[1]}, rtol=0, atol=0)
    c.case("samples.transposeFineGrained", "samples/transpose",
           [Launch("transposeFineGrained", (2, 2), (32, 16), (0, 1, 2, 3))], mk_sq,
           lambda a: {0: _fine_sq(a[1])}, rtol=0, atol=0)


def _fine_sq(x):
    T = 32
    o = np.zeros_like(x)
    n = x.shape[0] // T
    for by in range(n):
        for bx in range(n):
            o[by * T:(by + 1) * T, bx * T:(bx + 1) * T] = x[by * T:(by + 1) * T, bx * T:(bx + 1) * T].T
    return o


def _scan(c: Corpus) -> None:
    path = S + "2_Concepts_and_Techniques/scan/scan.cu"
    c.source("samples/scan", SAMPLES, [Span(path, r"^#include <cooperative_groups.h>", r"^// Naive inclusive scan"),
                                       Span(path, r"^#define THREADBLOCK_SIZE", r"^extern \"C\" const uint MAX_BATCH")],
             prelude=UINT, changes=HOST + ["`uint` typedef from scan_common.h"])
    L = 1024   # one array of 4 * 256 elements per block
    nb = 4

    def ex_scan(x):
        x = x.reshape(-1, L).astype(np.int64)
        return (np.cumsum(x, 1) - x).astype(np.uint32).reshape(-1)
    c.case("samples.scanExclusiveShared", "samples/scan",
           [Launch("scanExclusiveShared", (nb,), (256,), (0, 1, 2))],
           lambda r: [np.zeros(nb * L, np.uint32), r.integers(0, 100, nb * L).astype(np.uint32), np.uint32(L)],
           lambda a: {0: ex_scan(a[1])}, rtol=0, atol=0)
    # large-array path: scanExclusiveShared over 1024-chunks, scanExclusiveShared2 over the chunk totals,
    # uniformUpdate adds them (the sample's scanExclusiveLarge with batchSize 1, arrayLength 8192)
    N = 8192

    def large_make(r):
        return [np.zeros(N, np.uint32), r.integers(0, 100, N).astype(np.uint32), np.zeros(N // 1024, np.uint32),
                np.uint32(1024), np.uint32(N // 1024), np.uint32(N // 1024)]

    def large_ref(a):
        x = a[1].astype(np.int64)
        return {0: (np.cumsum(x) - x).astype(np.uint32)}
    c.case("samples.scanExclusiveLarge", "samples/scan",
           [Launch("scanExclusiveShared", (N // 1024,), (256,), (0, 1, 3)),
            Launch("scanExclusiveShared2", (1,), (256,), (2, 0, 1, 4, 5)),
            Launch("uniformUpdate", (N // 1024,), (256,), (0, 2))], large_make, large_ref, rtol=0, atol=0)

    spath = S + "2_Concepts_and_Techniques/shfl_scan/shfl_scan.cu"
    c.source("samples/shfl_scan", SAMPLES, [Span(spath, r"^__global__ void shfl_scan_test", r"^static unsigned int iDivUp")],
             changes=HOST + ["shfl_integral_image.cuh (another kernel family) not included"])
    n = 256 * 16

    def shfl_make(r):
        return [r.integers(0, 10, n).astype(np.int32), np.int32(32), np.zeros(16, np.int32), np.int32(n)]

    def shfl_ref(a):
        x = a[0].reshape(16, 256).astype(np.int64)
        cs = np.cumsum(x, 1)
        return {0: cs.reshape(-1), 2: cs[:, -1]}
    c.case("samples.shfl_scan_test", "samples/shfl_scan", [Launch("shfl_scan_test", (16,), (256,), (0, 1, 2), shared_mem=8 * 4)],
           shfl_make, shfl_ref, rtol=0, atol=0)

    # the sample's full scan: per-block scans with partial sums, a scan of the 16 partial sums by one block of 16
    # threads (its __shfl_up_sync masks name lanes 16..31, which do not exist), uniform_add from the second block on
    def full_make(r):
        return [r.integers(0, 10, n).astype(np.int32), np.int32(32), np.zeros(16, np.int32), np.int32(n),
                np.zeros(1, np.int32)]   # the sample passes partial_sums = NULL there: a scratch element instead
    c.case("samples.shfl_scan_full", "samples/shfl_scan",
           [Launch("shfl_scan_test", (16,), (256,), (0, 1, 2), shared_mem=8 * 4),
            Launch("shfl_scan_test", (1,), (16,), (2, 1, 4), shared_mem=8 * 4),
            Launch("uniform_add", (15,), (256,), ((0, 256), 2, 3))],
           full_make, lambda a: {0: np.cumsum(a[0].astype(np.int64))}, rtol=0, atol=0,
           note="second launch: one block of 16 threads with full-warp masks")


def _hist(c: Corpus) -> None:
    common = Span(S + "2_Concepts_and_Techniques/histogram/histogram_common.h", r"^#define HISTOGRAM64_BIN_COUNT",
                  r"^extern \"C\" void histogram64CPU")
    p64 = S + "2_Concepts_and_Techniques/histogram/histogram64.cu"
    c.source("samples/histogram64", SAMPLES, [common, Span(p64, r"^#include <cooperative_groups.h>", r"^static const uint MAX_PARTIAL")],
             changes=HOST + ["histogram_common.h's macros and typedefs (its host prototypes dropped)"])
    n_words = 64 * 63 * 4            # dataCount uint4 per launch: 4 blocks of 64 threads, < 255 bytes per thread counter
    nblk = 4

    def h64_make(r):
        return [np.zeros(64, np.uint32), np.zeros(nblk * 64, np.uint32), r.integers(0, 2 ** 32, n_words * 4,
                dtype=np.uint64).astype(np.uint32), np.uint32(n_words), np.uint32(nblk)]

    def h64_ref(a):
        b = a[2].view(np.uint8)
        return {0: np.bincount(b >> 2, minlength=64)}
    c.case("samples.histogram64", "samples/histogram64",
           [Launch("histogram64Kernel", (nblk,), (64,), (1, 2, 3)), Launch("mergeHistogram64Kernel", (64,), (256,), (0, 1, 4))],
           h64_make, h64_ref, rtol=0, atol=0)
    p256 = S + "2_Concepts_and_Techniques/histogram/histogram256.cu"
    c.source("samples/histogram256", SAMPLES, [common, Span(p256, r"^#include <cooperative_groups.h>", r"^static const uint PARTIAL_HISTOGRAM256_COUNT")],
             changes=HOST + ["histogram_common.h's macros and typedefs (its host prototypes dropped)"])

    def h256_make(r):
        return [np.zeros(256, np.uint32), np.zeros(6 * 256, np.uint32), r.integers(0, 2 ** 32, 5000, dtype=np.uint64)
                .astype(np.uint32), np.uint32(5000), np.uint32(6)]
    c.case("samples.histogram256", "samples/histogram256",
           [Launch("histogram256Kernel", (6,), (192,), (1, 2, 3)), Launch("mergeHistogram256Kernel", (256,), (256,), (0, 1, 4))],
           h256_make, lambda a: {0: np.bincount(a[2].view(np.uint8), minlength=256)}, rtol=0, atol=0)


def _cg(c: Corpus) -> None:
    pb = S + "3_CUDA_Features/binaryPartitionCG/binaryPartitionCG.cu"
    c.source("samples/binaryPartitionCG", SAMPLES, [Span(pb, r"^#include <cooperative_groups.h>", r"^void initOddEvenArr"),
                                                    Span(pb, r"^__global__ void oddEvenCountAndSumCG", r"^int main")],
             changes=HOST)
    n_bp = 4 * 256 * 5   # whole warps in every iteration, like the sample's launch (a partial warp would make
    #                       binary_partition(tile32, ...) count lanes that left the loop: undefined on the GPU too)

    def bp_ref(a):
        x = a[0].astype(np.int64)
        odd = x[x % 2 == 1]
        return {1: np.array([odd.size]), 2: np.array([odd.sum(), x[x % 2 == 0].sum()])}
    c.case("samples.oddEvenCountAndSumCG", "samples/binaryPartitionCG",
           [Launch("oddEvenCountAndSumCG", (4,), (256,), (0, 1, 2, 3))],
           lambda r: [r.integers(0, 50, n_bp).astype(np.int32), np.zeros(1, np.int32), np.zeros(2, np.int32), np.uint32(n_bp)], bp_ref,
           rtol=0, atol=0)

    pw = S + "3_CUDA_Features/warpAggregatedAtomicsCG/warpAggregatedAtomicsCG.cu"
    c.source("samples/warpAggregatedAtomicsCG", SAMPLES,
             [Span(pw, r"^#include <cooperative_groups.h>", r"^int mapIndicesToBuckets")], changes=HOST)
    n = 3000   # (filter_arr and mapToBuckets share it; nothing below rebinds it)

    def filt_check(got, inp):
        src = inp[2]
        k = int(got[1][0])
        want = np.sort(src[src > 0])
        if k != want.size:
            return f"nres = {k}, want {want.size}"
        if not np.array_equal(np.sort(got[0][:k]), want):
            return "dst holds another multiset than the positive inputs"
        return None
    c.case("samples.filter_arr", "samples/warpAggregatedAtomicsCG", [Launch("filter_arr", (4,), (128,), (0, 1, 2, 3))],
           lambda r: [np.zeros(n, np.int32), np.zeros(1, np.int32), r.integers(-5, 6, n).astype(np.int32), np.int32(n)],
           check=filt_check, note="output order comes from atomics: compared as a multiset")
    nb = 4

    def buck_make(r):
        return [r.integers(0, nb + 1, n).astype(np.int32), np.full(n * nb, -1, np.int32),
                (np.arange(nb) * n).astype(np.int32), np.int32(n), np.int32(nb)]

    def buck_check(got, inp):
        src = inp[0]
        for b in range(nb):
            idx = np.flatnonzero(src == b)
            cnt = int(got[2][b]) - b * n
            if cnt != idx.size:
                return f"bucket {b}: counter advanced by {cnt}, want {idx.size}"
            if not np.array_equal(np.sort(got[1][b * n:b * n + cnt]), idx):
                return f"bucket {b}: other indices than the inputs equal to {b}"
        return None
    c.case("samples.mapToBuckets", "samples/warpAggregatedAtomicsCG", [Launch("mapToBuckets", (4,), (128,), (0, 1, 2, 3, 4))],
           buck_make, check=buck_check, note="labeled_partition; order from atomics: compared as sets")

    pa = S + "0_Introduction/simpleAWBarrier/simpleAWBarrier.cu"
    c.source("samples/simpleAWBarrier", SAMPLES,
             [Span(pa, r"^#include <cooperative_groups.h>", r"^int runNormVecByDotProductAWBarrier")], changes=HOST)
    def aw_make(r, n=4096):
        return [f32(r, n), f32(r, n), np.zeros(8, np.float64), np.int32(n)]

    def aw_ref(a):
        d = np.sqrt((a[0].astype(np.float64) * a[1]).sum())
        return {0: a[0] / d, 1: a[1] / d}
    c.case("samples.normVecByDotProductAWBarrier.1block", "samples/simpleAWBarrier",
           [Launch("normVecByDotProductAWBarrier", (1,), (256,), (0, 1, 2, 3), shared_mem=8 * 8, cooperative=True)], aw_make, aw_ref,
           rtol=1e-4, atol=1e-5, note="cuda::barrier; grid.sync() of a one-block grid")
    c.case("samples.normVecByDotProductAWBarrier.4blocks", "samples/simpleAWBarrier",
           [Launch("normVecByDotProductAWBarrier", (4,), (256,), (0, 1, 2, 3), shared_mem=8 * 8, cooperative=True)], aw_make, aw_ref,
           rtol=1e-4, atol=1e-5, note="grid.sync() across 4 blocks: a cooperative launch on the GPU")


def _async(c: Corpus) -> None:
    pg = S + "3_CUDA_Features/globalToShmemAsyncCopy/globalToShmemAsyncCopy.cu"
    names = [f"{k}<16>" for k in ("MatrixMulAsyncCopyMultiStageLargeChunk", "MatrixMulAsyncCopyLargeChunk",
                                  "MatrixMulAsyncCopyLargeChunkAWBarrier", "MatrixMulAsyncCopyMultiStageSharedState",
                                  "MatrixMulAsyncCopyMultiStage", "MatrixMulAsyncCopySingleStage", "MatrixMulNaive",
                                  "MatrixMulNaiveLargeChunk")]
    c.source("samples/globalToShmemAsyncCopy", SAMPLES,
             [Span(pg, r"^#include <cuda/pipeline>", r"^void ConstantInit")],
             changes=HOST + ["the kernels enum and names table are host data (kept: harmless)"],
             name_expressions=tuple(names))
    # The sample's data: B is constant (valB = 0.01), square matrices. Its LargeChunk kernels read B with A's
    # offsets (`&B[a + wA * threadIdx.y + t4x]`), which only these data make equal to A @ B (the GPU agrees).
    wA = hA = wB = 64

    def mm_make(r):
        return [np.zeros((hA, wB), np.float32), f32(r, hA, wA), np.full((wA, wB), 0.01, np.float32), np.int32(wA),
                np.int32(wB)]
    mm_ref = lambda a: {0: a[1].astype(np.float64) @ a[2]}
    for k in names:
        block, grid = (16, 16), (wB // 16, hA // 16)
        if "SharedState" in k:
            block = (16, 18)
        c.case(f"samples.{k.replace('<16>', '')}", "samples/globalToShmemAsyncCopy", [Launch(k, grid, block, (0, 1, 2, 3, 4))],
               mm_make, mm_ref, rtol=1e-4, atol=1e-4)

    pm = S + "0_Introduction/matrixMul/matrixMul.cu"
    c.source("samples/matrixMul", SAMPLES, [Span(pm, r"^template <int BLOCK_SIZE> __global__ void MatrixMulCUDA",
                                                 r"^void ConstantInit")], changes=HOST,
             name_expressions=("MatrixMulCUDA<16>", "MatrixMulCUDA<32>"))
    for bs in (16, 32):
        c.case(f"samples.MatrixMulCUDA<{bs}>", "samples/matrixMul",
               [Launch(f"MatrixMulCUDA<{bs}>", (32 // bs, 64 // bs), (bs, bs), (0, 1, 2, 3, 4))],
               lambda r, wA=64, wB=32: [np.zeros((64, wB), np.float32), f32(r, 64, wA), f32(r, wA, wB), np.int32(wA),
                                        np.int32(wB)], lambda a: {0: a[1].astype(np.float64) @ a[2]}, rtol=1e-4, atol=1e-4)


def _misc(c: Corpus) -> None:
    pv = S + "0_Introduction/simpleVoteIntrinsics/simpleVote_kernel.cuh"
    c.source("samples/simpleVote", SAMPLES, [Span(pv, r"^#ifndef SIMPLEVOTE_KERNEL_CU")], changes=[])
    nv = n = 4 * 32

    def vote_make(r, n=nv):   # the sample's pattern: a warp of zeros, a warp with some ones, a warp of ones, a mixed warp
        x = np.zeros(n, np.uint32)
        x[32:64:5] = 1
        x[64:96] = 1
        x[96:] = r.integers(0, 2, 32)
        return [x, np.zeros(n, np.uint32), np.int32(n)]
    warp_any = lambda x: np.repeat(x.reshape(-1, 32).any(1), 32).astype(np.uint32)
    warp_all = lambda x: np.repeat(x.reshape(-1, 32).all(1), 32).astype(np.uint32)
    c.case("samples.VoteAnyKernel1", "samples/simpleVote", [Launch("VoteAnyKernel1", (1,), (n,), (0, 1, 2))], vote_make,
           lambda a: {1: warp_any(a[0])}, rtol=0, atol=0)
    c.case("samples.VoteAllKernel2", "samples/simpleVote", [Launch("VoteAllKernel2", (1,), (n,), (0, 1, 2))], vote_make,
           lambda a: {1: warp_all(a[0])}, rtol=0, atol=0)

    def v3_ref(a, n=nv):
        tx = np.arange(n)
        p = tx >= 48
        info = np.zeros((n, 3), bool)
        info[:, 0] = np.repeat(p.reshape(-1, 32).any(1), 32)
        info[:, 1] = p
        info[:, 2] = np.repeat(p.reshape(-1, 32).all(1), 32)
        return {0: info.reshape(-1)}
    c.case("samples.VoteAnyKernel3", "samples/simpleVote", [Launch("VoteAnyKernel3", (1,), (n,), (0, 1))],
           lambda r: [np.zeros(nv * 3, np.bool_), np.int32(32)], v3_ref, rtol=0, atol=0)

    pa = S + "0_Introduction/vectorAdd/vectorAdd.cu"
    c.source("samples/vectorAdd", SAMPLES, [Span(pa, r"^__global__ void vectorAdd", r"^/\*\*")], changes=HOST)
    n = 50000
    c.case("samples.vectorAdd", "samples/vectorAdd", [Launch("vectorAdd", (cdiv(n, 256),), (256,), (0, 1, 2, 3))],
           lambda r: [f32(r, n), f32(r, n), np.zeros(n, np.float32), np.int32(n)],
           lambda a: {2: a[0].astype(np.float64) + a[1]}, rtol=1e-6, atol=1e-6)


def add(c: Corpus) -> None:
    _red(c)
    _transpose(c)
    _scan(c)
    _hist(c)
    _cg(c)
    _async(c)
    _misc(c)
