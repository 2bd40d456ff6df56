"""karpathy/llm.c dev/cuda: one TU per file = common.h's device part + the file's "GPU kernels" section.

Launch shapes are the files' own launchers (``void <op>N(...)``) at small sizes.
"""
from __future__ import annotations

import math

import numpy as np

from . import Corpus, Launch, Repo, Span, bf16, cdiv, f32, from_bf16, round_bf16, softmax

LLMC = Repo("karpathy/llm.c", "f1e2ace651495b74ae22d45d1723443fd00ecd3a")

# common.h: WARP_SIZE, ceil_div, warpReduceSum, blockReduce | MAX_1024_THREADS_BLOCKS, Packed128, floatX, x128
COMMON = [Span("dev/cuda/common.h", r"^#define WARP_SIZE", r"^extern cudaDeviceProp"),
          Span("dev/cuda/common.h", r"^template<class T>", r"^// checking utils"),
          Span("dev/cuda/common.h", r"^// to make sure that 2 blocks fit", r"^// random utils")]
GPU = (r"^// GPU kernels", r"^// kernel launcher")

# NVRTC has no host headers: what the files get from <cmath>/<float.h>/<cublas_v2.h> under nvcc
BASE_PRELUDE = ("#include <cuda_runtime.h>\n#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n"
                "#include <cuda/std/cfloat>\n#ifndef FLT_MAX\n#define FLT_MAX 3.402823466e+38F\n#endif\n#define INFINITY __int_as_float(0x7f800000)\n"
                "#define M_PI 3.14159265358979323846\n")
BASE_CHANGES = ["host code dropped (CPU reference, launchers, main, common.h's host utilities)",
                "<cuda_fp16.h>/<cuda_bf16.h> included directly (nvcc gets them through <cublas_v2.h>)",
                "INFINITY, M_PI and FLT_MAX from CUDA headers / a #define (nvcc: <math.h>, <float.h>)"]
CG = "#include <cooperative_groups.h>\n#include <cooperative_groups/reduce.h>\n"


def _src(c: Corpus, sid: str, path: str, *, bf: bool = False, cg: bool = False, extra=(), names=(),
         spans=None):
    prelude = BASE_PRELUDE + (CG if cg else "") + ("#define ENABLE_BF16\n" if bf else "")
    body = spans if spans is not None else [Span(path, *GPU)]
    c.source(sid, LLMC, [*(s for s in extra), *COMMON, *body], prelude=prelude,
             changes=BASE_CHANGES + (["the file's own `#define ENABLE_BF16` (before common.h) kept"] if bf else []),
             name_expressions=tuple(names))


def _gelu(x):
    x = np.asarray(x, np.float64)
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def _gelu_grad(x):
    x = np.asarray(x, np.float64)
    s = math.sqrt(2 / math.pi)
    arg = s * (x + 0.044715 * x ** 3)
    return 0.5 * (1 + np.tanh(arg)) + x * 0.5 / np.cosh(arg) ** 2 * s * (1 + 3 * 0.044715 * x * x)


def _ln(x, w, b, eps=1e-5):
    x = np.asarray(x, np.float64)
    m = x.mean(-1)
    r = 1 / np.sqrt(((x - m[..., None]) ** 2).mean(-1) + eps)
    return (x - m[..., None]) * r[..., None] * w + b, m, r


def add(c: Corpus) -> None:
    # one function per file group: the reference closures bind their own sizes
    for part in (_elementwise, _encoder, _layernorm, _softmax, _attention, _losses, _matmul, _norm):
        part(c)


def _elementwise(c: Corpus) -> None:
    N = 8 * 64 * 24   # B*T*C
    gelu_span = [Span("dev/cuda/gelu_forward.cu", r"^#define GELU_SCALING_FACTOR", r"^void gelu_forward_cpu"),
                 Span("dev/cuda/gelu_forward.cu", *GPU)]
    _src(c, "llmc/gelu_forward", "dev/cuda/gelu_forward.cu", bf=True, spans=gelu_span)
    mk = lambda r: [np.zeros(N, np.uint16), bf16(f32(r, N)), np.int32(N)]
    ref = lambda a: {0: _gelu(from_bf16(a[1]))}
    c.case("llmc.gelu_forward_kernel1", "llmc/gelu_forward", [Launch("gelu_forward_kernel1", (cdiv(N, 128),), (128,), (0, 1, 2))],
           mk, ref, rtol=2e-2, atol=2e-2, bf16=(0,))
    c.case("llmc.gelu_forward_kernel2", "llmc/gelu_forward", [Launch("gelu_forward_kernel2", (cdiv(N, 128 * 8),), (128,), (0, 1, 2))],
           mk, ref, rtol=2e-2, atol=2e-2, bf16=(0,))

    gb_span = [Span("dev/cuda/gelu_backward.cu", r"^#define GELU_SCALING_FACTOR", r"^void gelu_backward_cpu"),
               Span("dev/cuda/gelu_backward.cu", *GPU)]
    _src(c, "llmc/gelu_backward", "dev/cuda/gelu_backward.cu", bf=True, spans=gb_span)
    mk = lambda r: [np.zeros(N, np.uint16), bf16(f32(r, N)), bf16(f32(r, N)), np.int32(N)]
    ref = lambda a: {0: _gelu_grad(from_bf16(a[1])) * from_bf16(a[2])}
    c.case("llmc.gelu_backward1", "llmc/gelu_backward", [Launch("gelu_backward1", (cdiv(N, 128),), (128,), (0, 1, 2, 3))],
           mk, ref, rtol=3e-2, atol=3e-2, bf16=(0,))
    c.case("llmc.gelu_backward2", "llmc/gelu_backward", [Launch("gelu_backward2", (cdiv(N, 128 * 8),), (128,), (0, 1, 2, 3))],
           mk, ref, rtol=3e-2, atol=3e-2, bf16=(0,))

    _src(c, "llmc/residual_forward", "dev/cuda/residual_forward.cu", bf=True)
    mk = lambda r: [np.zeros(N, np.uint16), bf16(f32(r, N)), bf16(f32(r, N)), np.int32(N)]
    ref = lambda a: {0: from_bf16(a[1]).astype(np.float64) + from_bf16(a[2])}
    c.case("llmc.residual_forward_kernel1", "llmc/residual_forward",
           [Launch("residual_forward_kernel1", (cdiv(N, 256),), (256,), (0, 1, 2, 3))], mk, ref, rtol=1e-2, atol=1e-2, bf16=(0,))
    c.case("llmc.residual_forward_kernel2", "llmc/residual_forward",
           [Launch("residual_forward_kernel2", (cdiv(N, 256 * 8),), (256,), (0, 1, 2, 3))], mk, ref, rtol=1e-2, atol=1e-2, bf16=(0,))



def _encoder(c: Corpus) -> None:
    B, T, C, V = 2, 32, 64, 50
    _src(c, "llmc/encoder_forward", "dev/cuda/encoder_forward.cu", bf=True)
    mk = lambda r: [np.zeros(B * T * C, np.uint16), r.integers(0, V, B * T).astype(np.int32), bf16(f32(r, V, C)),
                    bf16(f32(r, T, C)), np.int32(B), np.int32(T), np.int32(C)]
    ref = lambda a: {0: (from_bf16(a[2]).astype(np.float64)[a[1].reshape(B, T)] + from_bf16(a[3])[None]).reshape(-1)}
    for k, grid in (("1", cdiv(B * T, 256)), ("2", cdiv(B * T * C, 256)), ("3", cdiv(B * T * C, 256 * 8))):
        c.case(f"llmc.encoder_forward_kernel{k}", "llmc/encoder_forward",
               [Launch(f"encoder_forward_kernel{k}", (grid,), (256,), tuple(range(7)))], mk, ref, rtol=1e-2, atol=1e-2, bf16=(0,))



def _layernorm(c: Corpus) -> None:
    B, T, C = 2, 24, 96
    NR = B * T
    _src(c, "llmc/layernorm_forward", "dev/cuda/layernorm_forward.cu", cg=True)
    mk = lambda r: [np.zeros((NR, C), np.float32), np.zeros(NR, np.float32), np.zeros(NR, np.float32),
                    f32(r, NR, C), f32(r, C), f32(r, C), np.int32(NR), np.int32(C)]

    def ln_ref(a):
        y, m, rs = _ln(a[3], a[4], a[5])
        return {0: y, 1: m, 2: rs}
    args8 = tuple(range(8))
    c.case("llmc.layernorm_forward_kernel1", "llmc/layernorm_forward",
           [Launch("layernorm_forward_kernel1", (cdiv(NR, 32),), (32,), args8)], mk, ln_ref)
    # version 2: mean_kernel, rstd_kernel, normalization_kernel (buffers: + block_size, B, T)
    mk2 = lambda r: mk(r) + [np.int32(128), np.int32(B), np.int32(T)]
    c.case("llmc.layernorm_forward2", "llmc/layernorm_forward",
           [Launch("mean_kernel", (NR,), (128,), (1, 3, 6, 7, 8), shared_mem=128 * 4),
            Launch("rstd_kernel", (NR,), (128,), (2, 3, 1, 6, 7, 8), shared_mem=128 * 4),
            Launch("normalization_kernel", (cdiv(NR * C, 256),), (256,), (0, 3, 1, 2, 4, 5, 9, 10, 7))], mk2, ln_ref)
    for k in ("3", "4"):
        c.case(f"llmc.layernorm_forward_kernel{k}", "llmc/layernorm_forward",
               [Launch(f"layernorm_forward_kernel{k}", (cdiv(NR * 32, 128),), (128,), args8)], mk, ln_ref)
    c.case("llmc.layernorm_forward_kernel5", "llmc/layernorm_forward",
           [Launch("layernorm_forward_kernel5", (NR,), (128,), args8)], mk, ln_ref)
    c.case("llmc.layernorm_forward_kernel6", "llmc/layernorm_forward",
           [Launch("layernorm_forward_kernel6", (cdiv(NR, 4),), (32, 4), args8, shared_mem=(2 + 4) * C * 4)], mk, ln_ref)



def _softmax(c: Corpus) -> None:
    NR, C = 48, 200
    _src(c, "llmc/softmax_forward", "dev/cuda/softmax_forward.cu", cg=True)
    mk = lambda r: [np.zeros((NR, C), np.float32), f32(r, NR, C, scale=3.0), np.int32(NR), np.int32(C)]
    sm_ref = lambda a: {0: softmax(a[1])}
    a4 = (0, 1, 2, 3)
    for name, grid, block, smem in (
            ("softmax_forward_kernel1", cdiv(NR, 32), 32, 0),
            ("softmax_forward_kernel2", NR, 64, 64 * 4),
            ("softmax_forward_kernel3", NR, 32, 32 * 4),
            ("softmax_forward_kernel4", NR, 128, 128 // 32 * 4),
            ("softmax_forward_online_kernel1", cdiv(NR, 32), 32, 0),
            ("softmax_forward_online_kernel2", cdiv(NR * 32, 128), 128, 0),
            ("softmax_forward_kernel7", NR, 128, 2 * 128 // 32 * 4),
            ("softmax_forward_online_kernel8", cdiv(NR * 32, 128), 128, 0)):
        c.case(f"llmc.{name}", "llmc/softmax_forward", [Launch(name, (grid,), (block,), a4, shared_mem=smem)], mk, sm_ref)
    # kernel 7 with C smaller than the block: threads with tid >= C return before the block's barriers
    mk_small = lambda r: [np.zeros((NR, 40), np.float32), f32(r, NR, 40, scale=3.0), np.int32(NR), np.int32(40)]
    c.case("llmc.softmax_forward_kernel7.C40", "llmc/softmax_forward",
           [Launch("softmax_forward_kernel7", (NR,), (128,), a4, shared_mem=2 * 128 // 32 * 4)], mk_small, sm_ref,
           note="threads with tid >= C exit before __syncthreads()")



def _attention(c: Corpus) -> None:
    B, T, C, NH = 2, 32, 64, 4
    hs = C // NH
    _src(c, "llmc/attention_forward", "dev/cuda/attention_forward.cu", cg=True,
         spans=[Span("dev/cuda/attention_forward.cu", r"^// GPU kernels", r"^// kernel launcher")])

    def qkv(a):   # inp (B, T, 3C) -> q, k, v (B, NH, T, hs)
        x = a.reshape(B, T, 3, NH, hs).astype(np.float64)
        return (x[:, :, i].transpose(0, 2, 1, 3) for i in range(3))

    def att_probs(inp):
        q, k, _ = qkv(inp)
        s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(hs)
        mask = np.tril(np.ones((T, T), bool))
        s = np.where(mask, s, -np.inf)
        return s, softmax(s)

    def attn_out(inp):
        _, p = att_probs(inp)
        _, _, v = qkv(inp)
        return (p @ v).transpose(0, 2, 1, 3).reshape(B, T, C)

    def mk_inp(r):
        return f32(r, B, T, 3 * C)
    # query_key: preatt (B, NH, T, T)
    c.case("llmc.attention_query_key_kernel1", "llmc/attention_forward",
           [Launch("attention_query_key_kernel1", (cdiv(B * NH * T * T, 256),), (256,), (0, 1, 2, 3, 4, 5))],
           lambda r: [np.zeros((B, NH, T, T), np.float32), mk_inp(r), np.int32(B), np.int32(T), np.int32(C), np.int32(NH)],
           lambda a: {0: att_probs(a[1])[0]})
    c.case("llmc.attention_softmax_kernel1", "llmc/attention_forward",
           [Launch("attention_softmax_kernel1", (cdiv(B * T * NH, 256),), (256,), (0, 1, 2, 3, 4))],
           lambda r: [np.zeros((B, NH, T, T), np.float32),
                      np.where(np.tril(np.ones((T, T), bool)), f32(r, B, NH, T, T), -np.inf).astype(np.float32),
                      np.int32(B), np.int32(T), np.int32(NH)],
           lambda a: {0: softmax(a[1])})
    c.case("llmc.attention_value_kernel1", "llmc/attention_forward",
           [Launch("attention_value_kernel1", (cdiv(B * T * NH, 256),), (256,), (0, 1, 2, 3, 4, 5, 6))],
           lambda r: [np.zeros((B, T, C), np.float32), att_probs(mk_inp(r))[1].astype(np.float32), f32(r, B, T, 3 * C),
                      np.int32(B), np.int32(T), np.int32(C), np.int32(NH)],
           lambda a: {0: (np.tril(a[1]).astype(np.float64) @ np.stack(list(qkv(a[2])))[2]).transpose(0, 2, 1, 3).reshape(B, T, C)})
    # the file's second softmax_forward_kernel4 (2 * warps floats of shared memory) on causal rows
    c.case("llmc.attention_softmax_forward_kernel4", "llmc/attention_forward",
           [Launch("softmax_forward_kernel4", (B * NH * T,), (256,), (0, 1, 2, 3), shared_mem=2 * 256 // 32 * 4)],
           lambda r: [np.zeros((B * NH * T, T), np.float32),
                      np.where(np.tril(np.ones((T, T), bool)), f32(r, B * NH, T, T), -np.inf).astype(np.float32).reshape(-1, T),
                      np.int32(B * NH * T), np.int32(T)],
           lambda a: {0: softmax(a[1])})

    def sm5_ref(a):   # scaled, causal, lower triangle only (the rest stays as it was: zeros)
        x = a[2].reshape(B * NH, T, T).astype(np.float64) * float(a[1])
        s = softmax(np.where(np.tril(np.ones((T, T), bool)), x, -np.inf))
        return {0: s.reshape(B * NH * T, T)}
    c.case("llmc.softmax_forward_kernel5", "llmc/attention_forward",
           [Launch("softmax_forward_kernel5", (cdiv(B * NH * T * 32, 256),), (256,), (0, 1, 2, 3, 4))],
           lambda r: [np.zeros((B * NH * T, T), np.float32), np.float32(0.25), f32(r, B * NH * T, T), np.int32(B * NH),
                      np.int32(T)], sm5_ref)

    def perm_make(r):
        return [np.zeros((B, NH, T, hs), np.float32), np.zeros((B, NH, T, hs), np.float32),
                np.zeros((B, NH, T, hs), np.float32), mk_inp(r), np.int32(B), np.int32(T), np.int32(NH), np.int32(hs)]
    c.case("llmc.permute_kernel", "llmc/attention_forward",
           [Launch("permute_kernel", (cdiv(B * NH * T * hs, 256),), (256,), tuple(range(8)))], perm_make,
           lambda a: dict(enumerate(qkv(a[3]))))
    c.case("llmc.unpermute_kernel", "llmc/attention_forward",
           [Launch("unpermute_kernel", (cdiv(B * T * C, 256),), (256,), (0, 1, 2, 3, 4, 5))],
           lambda r: [f32(r, B, NH, T, hs), np.zeros((B, T, NH, hs), np.float32), np.int32(B), np.int32(T), np.int32(NH),
                      np.int32(hs)],
           lambda a: {1: a[0].transpose(0, 2, 1, 3)})
    c.case("llmc.scale_kernel", "llmc/attention_forward",
           [Launch("scale_kernel", (cdiv(B * NH * T * T, 256),), (256,), (0, 1, 2, 3, 4))],
           lambda r: [f32(r, B, NH, T, T), np.float32(0.25), np.int32(B), np.int32(NH), np.int32(T)],
           lambda a: {0: np.where(np.tril(np.ones((T, T), bool)), a[0].astype(np.float64) * 0.25, -np.inf)})

    def flash_make(r):
        q, k, v = (f32(r, B, NH, T, hs) for _ in range(3))
        # the launcher's cudaMemset(m, -10000.0f, ...) writes the byte (unsigned char)-10000 = 0xF0 everywhere
        m = np.full(B * NH * T, 0xF0F0F0F0, np.uint32).view(np.float32)
        return [q, k, v, np.int32(T), np.int32(hs), np.int32(cdiv(T, 32)), np.int32(cdiv(T, 32)), np.int32(32),
                np.int32(32), np.float32(1 / math.sqrt(hs)), np.zeros(B * NH * T, np.float32), m,
                np.zeros((B, NH, T, hs), np.float32)]

    def flash_ref(a):
        q, k, v = (x.astype(np.float64) for x in a[:3])
        s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(hs)
        s = np.where(np.tril(np.ones((T, T), bool)), s, -np.inf)
        return {12: softmax(s) @ v}
    sram = (2 * 32 * hs + 32 * hs + 32 * 32) * 4
    c.case("llmc.attention_forward_kernel2", "llmc/attention_forward",
           [Launch("attention_forward_kernel2", (B, NH), (32,), tuple(range(13)), shared_mem=sram)], flash_make, flash_ref,
           rtol=1e-3, atol=1e-4, note="flash attention 1, one row per thread")

    def fused_make(r):
        return [np.zeros((B, T, C), np.float32), np.zeros((B, NH, T, T), np.float32), np.zeros((B, NH, T, T), np.float32),
                mk_inp(r), np.int32(B), np.int32(T), np.int32(C), np.int32(NH)]

    def fused_ref(a):
        s, p = att_probs(a[3])
        tri = np.tril(np.ones((T, T), bool))
        return {0: attn_out(a[3]), 1: np.where(tri, s, 0.0), 2: np.where(tri, p, 0.0)}
    c.case("llmc.attention_forward_fused1", "llmc/attention_forward",
           [Launch("attention_forward_fused1", (cdiv(T, 4), NH, B), (128,), tuple(range(8)))], fused_make, fused_ref,
           rtol=1e-3, atol=1e-4, note="lane 0 writes preatt, then every lane reads it (no __syncwarp)")



def _losses(c: Corpus) -> None:
    B, T, V = 4, 16, 37
    _src(c, "llmc/crossentropy_forward", "dev/cuda/crossentropy_forward.cu")
    c.case("llmc.crossentropy_forward_kernel1", "llmc/crossentropy_forward",
           [Launch("crossentropy_forward_kernel1", (cdiv(B * T, 128),), (128,), (0, 1, 2, 3, 4, 5))],
           lambda r: [np.zeros(B * T, np.float32), softmax(f32(r, B, T, V)).astype(np.float32),
                      r.integers(0, V, B * T).astype(np.int32), np.int32(B), np.int32(T), np.int32(V)],
           lambda a: {0: -np.log(a[1].reshape(B * T, V)[np.arange(B * T), a[2]].astype(np.float64))})
    _src(c, "llmc/crossentropy_softmax_backward", "dev/cuda/crossentropy_softmax_backward.cu")

    def ce_bwd_ref(a):
        onehot = np.eye(V)[a[3]].reshape(B, T, V)
        return {0: a[0] + (a[2].astype(np.float64) - onehot) * a[1].reshape(B, T, 1)}
    c.case("llmc.crossentropy_softmax_backward_kernel1", "llmc/crossentropy_softmax_backward",
           [Launch("crossentropy_softmax_backward_kernel1", (cdiv(B * T * V, 256),), (256,), tuple(range(7)))],
           lambda r: [f32(r, B, T, V), f32(r, B * T), softmax(f32(r, B, T, V)).astype(np.float32),
                      r.integers(0, V, B * T).astype(np.int32), np.int32(B), np.int32(T), np.int32(V)], ce_bwd_ref)

    _src(c, "llmc/adamw", "dev/cuda/adamw.cu")
    P = 3000

    def adam_make(r):
        return [f32(r, P), f32(r, P), f32(r, P, scale=0.1), np.abs(f32(r, P, scale=0.1)), np.int64(P), np.float32(1e-3),
                np.float32(0.9), np.float32(0.999), np.float32(1 - 0.9 ** 3), np.float32(1 - 0.999 ** 3),
                np.float32(1e-8), np.float32(0.01)]

    def adam_ref(a):
        p, g, m, v = (x.astype(np.float64) for x in a[:4])
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        mh, vh = m / float(a[8]), v / float(a[9])
        return {0: p - 1e-3 * (mh / (np.sqrt(vh) + 1e-8) + 0.01 * p), 2: m, 3: v}
    for k in ("1", "2"):
        c.case(f"llmc.adamw_kernel{k}", "llmc/adamw", [Launch(f"adamw_kernel{k}", (cdiv(P, 512),), (512,), tuple(range(12)))],
               adam_make, adam_ref, rtol=1e-4, atol=1e-5)



def _matmul(c: Corpus) -> None:
    BT, Cc, OC = 128, 64, 128
    _src(c, "llmc/matmul_forward", "dev/cuda/matmul_forward.cu")
    mk = lambda r: [np.zeros((BT, OC), np.float32), f32(r, BT, Cc), f32(r, OC, Cc), f32(r, OC), np.int32(BT),
                    np.int32(Cc), np.int32(OC)]
    mm_ref = lambda a: {0: a[1].astype(np.float64) @ a[2].T + a[3]}
    c.case("llmc.matmul_forward_kernel1", "llmc/matmul_forward",
           [Launch("matmul_forward_kernel1", (cdiv(BT, 16), cdiv(OC, 16)), (16, 16), tuple(range(7)))], mk, mm_ref,
           rtol=1e-4, atol=1e-4)
    c.case("llmc.matmul_forward_kernel4", "llmc/matmul_forward",
           [Launch("matmul_forward_kernel4", (cdiv(BT, 128), cdiv(OC, 128)), (16, 16), (0, 1, 2, 3, 5, 6))], mk, mm_ref,
           rtol=1e-4, atol=1e-4)
    c.case("llmc.add_bias", "llmc/matmul_forward",
           [Launch("add_bias", (8,), (128,), (0, 1, 2, 3, 4))],
           lambda r: [f32(r, 4, 16, OC), f32(r, OC), np.int32(4), np.int32(16), np.int32(OC)],
           lambda a: {0: a[0].astype(np.float64) + a[1]})



def _norm(c: Corpus) -> None:
    n = 20000
    _src(c, "llmc/global_norm", "dev/cuda/global_norm.cu", cg=True,
         spans=[Span("dev/cuda/global_norm.cu", r"^template<class T>", r"^// kernel launchers")],
         names=("norm_kernel1<float>", "norm_kernel2<float>", "norm_kernel3<float>", "norm_kernel4<float>",
                "norm_kernel1<__nv_bfloat16>"))
    gn_ref = lambda a: {0: np.array([(a[1].astype(np.float64) ** 2).sum()])}
    mk = lambda r: [np.zeros(1, np.float32), f32(r, n), np.uint64(n)]
    for k in ("1", "2", "3"):
        c.case(f"llmc.norm_kernel{k}<float>", "llmc/global_norm",
               [Launch(f"norm_kernel{k}<float>", (12,), (256,), (0, 1, 2))], mk, gn_ref, rtol=1e-4, atol=1e-3)
    c.case("llmc.norm_kernel4<float>+aggregate", "llmc/global_norm",
           [Launch("norm_kernel4<float>", (12,), (256,), (0, 1, 2)),
            Launch("global_norm_aggregate_kernel", (1,), (1024,), (0, 3))],
           lambda r: [np.zeros(12, np.float32), f32(r, n), np.uint64(n), np.uint64(12)],
           lambda a: {(0, (0, 1)): np.array([(a[1].astype(np.float64) ** 2).sum()])}, rtol=1e-4, atol=1e-3,
           note="only out[0] is the result")
    c.case("llmc.norm_kernel1<__nv_bfloat16>", "llmc/global_norm",
           [Launch("norm_kernel1<__nv_bfloat16>", (12,), (256,), (0, 1, 2))],
           lambda r: [np.zeros(1, np.float32), bf16(f32(r, n)), np.uint64(n)],
           lambda a: {0: np.array([(from_bf16(a[1]).astype(np.float64) ** 2).sum()])}, rtol=1e-3, atol=1e-2)
