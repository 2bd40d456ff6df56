"""Planted-bug kernels: each must be reported with the right exception class AND
the user's source line (plus block/thread), on the CPU emulator."""
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import kernels
from kernels.cpu import CpuModule

SEED = (Path(__file__).parent / "cuda" / "layernorm_seed.cu").read_text()
TRAILING_SYNC = """    // 这个同步保证同一个 kernel 里连续调用 block_reduce_sum 时，
    // 下一次调用不会覆盖上一次还没读完的 smem。
    __syncthreads();
"""


def line_of(src, needle, nth=0):
    hits = [i + 1 for i, l in enumerate(src.splitlines()) if needle in l]
    return hits[nth]


def launch(src, name, grid, block, args, shared_mem=0, names=None):
    mod = kernels.RawModule(code=src, name_expressions=names or [])
    mod.get_function(name)(grid, block, tuple(args), shared_mem=shared_mem)


# ---------------------------------------------------------------- racecheck

def test_seed_war_hazard_without_trailing_barrier(cpu):
    """Lesson 5: block_reduce_sum without its trailing __syncthreads(), called twice."""
    assert TRAILING_SYNC in SEED
    bad = SEED.replace(TRAILING_SYNC, "")
    M, N = 3, 1024
    rng = np.random.default_rng(0)
    x, g, b = (rng.standard_normal((M, N)).astype(np.float32), np.ones(N, np.float32), np.zeros(N, np.float32))
    args = [x, g, b, np.zeros_like(x), np.int32(M), np.int32(N), np.float32(1e-5)]
    launch(bad, "layernorm_kernel<256>", (M,), (256,), args, names=["layernorm_kernel<256>"])  # silent without check
    with kernels.check("racecheck"):
        with pytest.raises(kernels.RaceError) as ei:
            launch(bad, "layernorm_kernel<256>", (M,), (256,), args, names=["layernorm_kernel<256>"])
    e = ei.value
    assert e.line == line_of(bad, "smem[warp] = val;")          # the overwriting write ...
    assert f"line {line_of(bad, 'smem[lane] : 0.0f')}" in e.details   # ... of what warp 0 still reads
    assert "write-after-read" in e.message and e.block == (0, 0, 0)


def test_racecheck_clean_kernel_and_shared_atomics_pass(cpu):
    src = r'''
extern "C" __global__ void hist(const int* v, int* out, float* fout) {
    __shared__ int h[8];
    __shared__ float hf[8];
    if (threadIdx.x < 8) { h[threadIdx.x] = 0; hf[threadIdx.x] = 0.0f; }
    __syncthreads();
    atomicAdd(&h[v[threadIdx.x]], 1);
    atomicAdd(&hf[v[threadIdx.x]], 0.1f);
    __syncthreads();
    if (threadIdx.x < 8) { out[threadIdx.x] = h[threadIdx.x]; fout[threadIdx.x] = hf[threadIdx.x]; }
}'''
    v = np.random.default_rng(1).integers(0, 8, 256).astype(np.int32)
    out, fout = np.zeros(8, np.int32), np.zeros(8, np.float32)
    with kernels.check("racecheck"):
        launch(src, "hist", (1,), (256,), [v, out, fout])
    np.testing.assert_array_equal(out, np.bincount(v, minlength=8))
    np.testing.assert_allclose(fout, 0.1 * np.bincount(v, minlength=8), rtol=1e-5)


def test_racecheck_neighbouring_halves_and_bytes_do_not_conflict(cpu):
    src = r'''
#include <cuda_fp16.h>
extern "C" __global__ void narrow(const float* x, __half* h, unsigned char* c) {
    __shared__ __half s[64];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = __float2half(x[i]);
    __syncthreads();
    h[i] = s[threadIdx.x ^ 1];
    c[i] = (unsigned char)i;
}'''
    x = np.arange(128, dtype=np.float32)
    h, c = np.zeros(128, np.float16), np.zeros(128, np.uint8)
    with kernels.check("racecheck"):
        launch(src, "narrow", (2,), (64,), [x, h, c])
    np.testing.assert_array_equal(h, x[np.arange(128) ^ 1].astype(np.float16))
    np.testing.assert_array_equal(c, np.arange(128, dtype=np.uint8))


def test_racecheck_global_output_race(cpu):
    src = r'''
extern "C" __global__ void last_writer(int* out) {
    out[0] = threadIdx.x;          // every thread writes the same element
}'''
    with kernels.check("racecheck"):
        with pytest.raises(kernels.RaceError) as ei:
            launch(src, "last_writer", (1,), (64,), [np.zeros(1, np.int32)])
    e = ei.value
    assert "write-after-write" in e.message and "global memory" in e.message and "'out' index 0" in e.message
    assert e.line == line_of(src, "out[0] = threadIdx.x;")


def test_racecheck_missing_atomic_across_blocks(cpu):
    src = r'''
extern "C" __global__ void total(const float* x, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[0] += x[i];            // should be atomicAdd(out, x[i])
}'''
    x = np.arange(64, dtype=np.float32)    # integer sums: every order gives the same total
    out = np.zeros(1, np.float32)
    launch(src, "total", (2,), (32,), [x, out, np.int32(64)])
    assert out[0] == x.sum()               # the emulator's own schedule hides the bug ...
    with kernels.check("racecheck"):       # ... the shadow of global memory does not
        with pytest.raises(kernels.RaceError) as ei:
            launch(src, "total", (2,), (32,), [x, np.zeros(1, np.float32), np.int32(64)])
    assert ei.value.line == line_of(src, "out[0] += x[i];") and "'out' index 0" in ei.value.message
    fixed = src.replace("if (i < n) out[0] += x[i];", "if (i < n) atomicAdd(out, x[i]);")
    out = np.zeros(1, np.float32)
    with kernels.check("racecheck"):
        launch(fixed, "total", (2,), (32,), [x, out, np.int32(64)])
    assert out[0] == x.sum()


def test_racecheck_watch_names_lines_of_order_dependent_output(cpu):
    """Outputs that differ between schedules without a shadow hazard (atomic tickets) name the writers."""
    src = r'''
extern "C" __global__ void ticket(int* counter, int* order) {
    int slot = atomicAdd(counter, 1);
    order[slot] = blockIdx.x * blockDim.x + threadIdx.x;
}'''
    with kernels.check("racecheck"):
        with pytest.raises(kernels.RaceError) as ei:
            launch(src, "ticket", (2,), (32,), [np.zeros(1, np.int32), np.zeros(64, np.int32)])
    e = ei.value
    assert "'order'" in e.message and e.line == line_of(src, "order[slot] =") and "write at line" in e.details


def test_racecheck_missing_barrier_in_shared_tile(cpu):
    src = r'''
extern "C" __global__ void shift(const float* in, float* out) {
    __shared__ float s[128];
    s[threadIdx.x] = in[threadIdx.x];
    out[threadIdx.x] = s[(threadIdx.x + 1) % 128];   // reads a neighbour's slot: no barrier
}'''
    with kernels.check("racecheck"):
        with pytest.raises(kernels.RaceError) as ei:
            launch(src, "shift", (1,), (128,), [np.ones(128, np.float32), np.zeros(128, np.float32)])
    lines = {line_of(src, "s[threadIdx.x] = in"), line_of(src, "out[threadIdx.x] = s")}
    assert ei.value.line in lines and "read-after-write" in ei.value.message or "write-after-read" in ei.value.message


def test_racecheck_write_after_write(cpu):
    src = r'''
extern "C" __global__ void flag(const int* v, int* out) {
    __shared__ int any_neg, last;
    if (threadIdx.x == 0) { any_neg = 0; last = -1; }
    __syncthreads();
    if (v[threadIdx.x] < 0) any_neg = 1;       // same value from every writer: benign
    __syncthreads();
    if (threadIdx.x % 32 == 0) last = threadIdx.x;   // different values: a real WAW hazard
    __syncthreads();
    out[0] = any_neg; out[1] = last;
}'''
    v = -np.ones(128, np.int32)
    with kernels.check("racecheck"):
        with pytest.raises(kernels.RaceError) as ei:
            launch(src, "flag", (1,), (128,), [v, np.zeros(2, np.int32)])
    assert ei.value.line == line_of(src, "last = threadIdx.x;") and "write-after-write" in ei.value.message
    ok = src.replace("if (threadIdx.x % 32 == 0) last = threadIdx.x;", "if (threadIdx.x == 0) last = 7;")
    out = np.zeros(2, np.int32)
    with kernels.check("racecheck"):
        launch(ok, "flag", (1,), (128,), [v, out])
    assert list(out) == [1, 7]


# ---------------------------------------------------------------- memcheck

def test_off_by_one_read_memcheck(cpu):
    src = r'''
extern "C" __global__ void sum_row(const float* x, float* out, int n) {
    float s = 0.0f;
    for (int i = 0; i <= n; ++i)      // off by one
        s += x[i];
    out[threadIdx.x] = s;
}'''
    x = np.ones(100, np.float32)
    with kernels.check("memcheck"):
        with pytest.raises(kernels.OutOfBoundsError) as ei:
            launch(src, "sum_row", (1,), (4,), [x, np.zeros(4, np.float32), np.int32(100)])
    e = ei.value
    assert e.line == line_of(src, "s += x[i];")
    assert e.block == (0, 0, 0) and e.thread == (0, 0, 0)
    assert "read" in e.message and "'x'" in e.message       # names the kernel parameter


def test_float4_read_past_end_when_n_not_multiple_of_4(cpu):
    src = r'''
extern "C" __global__ void scale4(const float* in, float* out, int n, float a) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int n4 = (n + 3) / 4;                 // rounds up: the last float4 runs past the end
    if (i < n4) {
        float4 v = reinterpret_cast<const float4*>(in)[i];
        out[4 * i] = (v.x + v.y + v.z + v.w) * a;
    }
}'''
    n = 1022
    with kernels.check("memcheck"):
        with pytest.raises(kernels.OutOfBoundsError) as ei:
            launch(src, "scale4", (4,), (64,), [np.ones(n, np.float32), np.zeros(n + 2, np.float32),
                                                np.int32(n), np.float32(2)])
    e = ei.value
    assert e.line == line_of(src, "float4 v = reinterpret_cast")
    assert e.block == (3, 0, 0) and e.thread == (63, 0, 0)


def test_misaligned_float4_load(cpu):
    src = r'''
extern "C" __global__ void load4(const float* in, float* out) {
    const float4* p = reinterpret_cast<const float4*>(in + 1);   // 4-byte aligned only
    float4 v = p[threadIdx.x];
    out[threadIdx.x] = v.x + v.y + v.z + v.w;
}'''
    with kernels.check("memcheck"):
        with pytest.raises(kernels.OutOfBoundsError) as ei:
            launch(src, "load4", (1,), (4,), [np.ones(64, np.float32), np.zeros(4, np.float32)])
    assert ei.value.line == line_of(src, "float4 v = p[threadIdx.x];")
    assert "misaligned" in ei.value.message and ei.value.thread == (0, 0, 0)


def test_shared_memory_out_of_bounds(cpu):
    src = r'''
extern "C" __global__ void smem_oob(float* out) {
    __shared__ float tile[32];
    tile[threadIdx.x] = threadIdx.x;      // 33 threads, 32 slots
    __syncthreads();
    out[threadIdx.x] = tile[threadIdx.x % 32];
}'''
    with kernels.check("memcheck"):
        with pytest.raises(kernels.OutOfBoundsError) as ei:
            launch(src, "smem_oob", (1,), (33,), [np.zeros(33, np.float32)])
    assert ei.value.line == line_of(src, "tile[threadIdx.x] = threadIdx.x;")
    assert ei.value.thread == (32, 0, 0) and "tile" in ei.value.message


# A template's __shared__ array is a COMDAT static that GCC's ASan gives no redzone; memcheck builds the user code
# inside an anonymous namespace so it gets one (LeetCUDA's online softmax read past `__shared__ MD shared[8]`
# unreported; the H200 faults on it).
OOB_TEMPLATE = r'''
#include <cuda_fp16.h>
struct __align__(8) MD { float m; float d; };
template <int WARPS>
__device__ float warp_partial(float v) {
    static __shared__ float part[WARPS];
    if (threadIdx.x % 32 == 0) part[threadIdx.x / 32] = v;
    __syncthreads();
    return part[threadIdx.x % 32];                // every lane < 32 reads: past part[WARPS]
}
template <int NT>
__global__ void tmpl(const float* x, float* y, int helper) {
    __shared__ MD sh[NT / 32];
    if (threadIdx.x % 32 == 0) { sh[threadIdx.x / 32].m = x[threadIdx.x]; sh[threadIdx.x / 32].d = 1.0f; }
    __syncthreads();
    if (helper) { y[threadIdx.x] = warp_partial<NT / 32>(x[threadIdx.x]); return; }
    if (threadIdx.x < 32) { MD v = sh[threadIdx.x]; y[threadIdx.x] = v.m + v.d; }   // past sh[NT / 32]
}
'''


@pytest.mark.parametrize("helper", [0, 1], ids=["kernel_template", "device_function_template"])
def test_shared_out_of_bounds_in_a_template_memcheck(cpu, helper):
    with kernels.check("memcheck"):
        with pytest.raises(kernels.OutOfBoundsError) as ei:
            launch(OOB_TEMPLATE, "tmpl<256>", (1,), (256,),
                   [np.ones(256, np.float32), np.zeros(256, np.float32), np.int32(helper)],
                   names=["tmpl<256>"])
    want = "return part[threadIdx.x % 32];" if helper else "MD v = sh[threadIdx.x];"
    assert ei.value.line == line_of(OOB_TEMPLATE, want)
    assert ei.value.thread == (8, 0, 0)            # the first lane past the 8 entries


def test_memcheck_builds_code_the_anonymous_namespace_does_not_fit(cpu):
    # a specialisation of a library template cannot sit in the anonymous namespace: the wrapped TU fails to
    # compile, and the plain one is used (no redzones for template statics, ordinary ones still checked)
    src = r'''
#include <cuda/std/limits>
struct Key { int k; };
template <> struct cuda::std::numeric_limits<Key> {
    static constexpr bool is_specialized = true;
    __device__ static constexpr Key max() { return Key{1 << 20}; }
};
extern "C" __global__ void oob(float* out) {
    __shared__ float tile[32];
    tile[threadIdx.x] = cuda::std::numeric_limits<Key>::max().k;      // 33 threads
    __syncthreads();
    out[threadIdx.x] = tile[threadIdx.x % 32];
}'''
    with kernels.check("memcheck"):
        with pytest.raises(kernels.OutOfBoundsError) as ei:
            launch(src, "oob", (1,), (33,), [np.zeros(33, np.float32)])
    assert ei.value.line == line_of(src, "tile[threadIdx.x] = cuda::std::numeric_limits")


@pytest.mark.gpu
def test_shared_out_of_bounds_in_a_template_faults_on_the_gpu():
    """The hardware truth for the case above: the launch faults (in a child process: the fault poisons the
    CUDA context)."""
    from kernels import _config
    if not _config._gpu_available():
        pytest.skip("no CUDA GPU visible to cupy")
    script = textwrap.dedent('''
        import sys, numpy as np, kernels
        sys.path.insert(0, sys.argv[1])
        from test_diagnostics import OOB_TEMPLATE
        from kernel_launch import launch
        try:
            launch(OOB_TEMPLATE, "tmpl<256>", (1,), (256,),
                   [np.ones(256, np.float32), np.zeros(256, np.float32), np.int32(0)],
                   name_expressions=["tmpl<256>"])
            import cupy; cupy.cuda.runtime.deviceSynchronize()
            print("no fault")
        except Exception as e:
            print("fault", type(e).__name__, e)
    ''')
    env = dict(os.environ, KERNELS_BACKEND="cupy")
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run([sys.executable, "-c", script, str(Path(__file__).parent)], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.stdout.startswith("fault") and "illegal" in proc.stdout.lower(), proc.stdout + proc.stderr


def test_dynamic_shared_memory_past_shared_mem(cpu):
    src = r'''
extern "C" __global__ void dyn(float* out) {
    extern __shared__ float buf[];
    buf[threadIdx.x] = 1.0f;              // shared_mem holds only 16 floats
    __syncthreads();
    out[threadIdx.x] = buf[threadIdx.x];
}'''
    with kernels.check("memcheck"):
        with pytest.raises(kernels.OutOfBoundsError) as ei:
            launch(src, "dyn", (1,), (32,), [np.zeros(32, np.float32)], shared_mem=64)
    assert ei.value.line == line_of(src, "buf[threadIdx.x] = 1.0f;")
    assert ei.value.thread == (16, 0, 0) and "shared_mem" in ei.value.message


def test_memcheck_clean_kernel_copies_outputs_back(cpu):
    src = r'''
extern "C" __global__ void twice(const float* a, float* b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) b[i] = 2.0f * a[i];
    if (i == 0) printf("memcheck printf %d\n", n);
}'''
    a = np.arange(50, dtype=np.float32)
    b = np.zeros(50, np.float32)
    with kernels.check("memcheck"):
        launch(src, "twice", (2,), (32,), [a, b, np.int32(50)])
    np.testing.assert_array_equal(b, 2 * a)


# ---------------------------------------------------------------- always-on checks

def test_barrier_after_early_exit_runs_as_on_the_gpu(cpu):
    # sm_70+: threads that returned count as arrived (compute-sanitizer's synccheck is clean too); the
    # emulator used to call this a divergent barrier
    src = r'''
extern "C" __global__ void early(float* x, int n) {
    int i = threadIdx.x;
    if (i >= n) return;
    x[i] *= 2.0f;
    __syncthreads();
    x[i] += 1.0f;
}'''
    x = np.ones(64, np.float32)
    for checks in ((), ("synccheck",)):
        x[:] = 1
        with kernels.check(*checks):
            launch(src, "early", (1,), (64,), [x, np.int32(40)])
        assert (x[:40] == 3).all() and (x[40:] == 1).all()


DIVERGENT_LINES = r'''
extern "C" __global__ void branches(float* x) {
    if (threadIdx.x < 8) {
        x[threadIdx.x] = 1.0f;
        __syncthreads();
    } else {
        __syncthreads();
        x[threadIdx.x] = x[threadIdx.x - 8] + 1.0f;
    }
}'''


def test_barrier_at_two_lines_is_one_barrier_unless_synccheck(cpu):
    # the GPU has one barrier 0: both groups meet there (the second half reads what the first wrote)
    x = np.zeros(64, np.float32)
    launch(DIVERGENT_LINES, "branches", (1,), (64,), [x])
    assert (x[:8] == 1).all() and (x[8:16] == 2).all()
    # compute-sanitizer's synccheck reports it, and so does kernels.check("synccheck"), with both lines
    with kernels.check("synccheck"), pytest.raises(kernels.SyncCheckError) as ei:
        launch(DIVERGENT_LINES, "branches", (1,), (64,), [np.zeros(64, np.float32)])
    first, second = line_of(DIVERGENT_LINES, "__syncthreads();", 0), line_of(DIVERGENT_LINES, "__syncthreads();", 1)
    assert ei.value.line == first and ei.value.line2 == second     # 8 threads (the minority) wait at the first
    assert ei.value.thread == (0, 0, 0)
    assert f"line {first}" in ei.value.message and f"line {second}" in ei.value.message
    assert isinstance(ei.value, kernels.DeadlockError)            # student-facing messages treat it as one


def test_barrier_deadlock_the_gpu_would_hang_on_names_both_lines(cpu):
    # lanes 0..15 wait at the barrier, lanes 16..31 at a __syncwarp that needs lanes 0..15: no one can go on
    src = r'''
extern "C" __global__ void hang(float* x) {
    if (threadIdx.x < 16) {
        __syncthreads();
    } else {
        __syncwarp();
    }
    x[threadIdx.x] = 1.0f;
}'''
    with pytest.raises((kernels.DeadlockError, kernels.ShuffleMaskError)) as ei:
        launch(src, "hang", (1,), (32,), [np.zeros(32, np.float32)])
    lines = {line_of(src, "__syncthreads();"), line_of(src, "__syncwarp();")}
    assert {ei.value.line, ei.value.line2} == lines
    assert "__syncthreads()" in ei.value.message


def test_shuffle_reading_an_exited_lane_runs_and_is_reported_under_checks(cpu):
    # PTX (sm_70+): a warp op waits for the *non-exited* lanes of its mask, so this runs on the GPU; what a
    # lane reads from an exited lane is undefined there, and memcheck/racecheck say so
    src = r'''
extern "C" __global__ void partial_sum(const float* x, float* out, int n) {
    int i = threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    v += __shfl_down_sync(0xffffffff, v, 16);
    out[i] = v;
}'''
    x, out = np.arange(32, dtype=np.float32), np.zeros(32, np.float32)
    launch(src, "partial_sum", (1,), (32,), [x, out, np.int32(20)])
    np.testing.assert_array_equal(out[:4], x[:4] + x[16:20])     # sources that took part: defined
    for check in ("racecheck", "memcheck"):
        with kernels.check(check), pytest.raises(kernels.ShuffleMaskError) as ei:
            launch(src, "partial_sum", (1,), (32,), [x, np.zeros(32, np.float32), np.int32(20)])
        assert ei.value.line == line_of(src, "__shfl_down_sync")
        assert "has exited" in ei.value.message and "undefined" in ei.value.message


def test_full_mask_in_a_partial_warp_is_fine_when_no_missing_lane_is_read(cpu):
    src = r'''
extern "C" __global__ void red(float* out) {
    float v = 1.0f;
    v += __shfl_xor_sync(0xffffffff, v, 1);
    out[threadIdx.x] = v;
}'''
    out = np.zeros(48, np.float32)
    with kernels.check("racecheck"):      # lanes 32..47 exchange with each other only: defined
        launch(src, "red", (1,), (48,), [out])
    assert (out == 2).all()
    src_read_missing = src.replace("v, 1)", "v, 16)")
    with kernels.check("racecheck"), pytest.raises(kernels.ShuffleMaskError) as ei:
        launch(src_read_missing, "red", (1,), (48,), [np.zeros(48, np.float32)])
    assert ei.value.thread[0] >= 32 and "does not exist" in ei.value.message


def test_shuffle_caller_not_in_mask_and_waiting_elsewhere(cpu):
    src = r'''
extern "C" __global__ void notin(int* out) {
    out[threadIdx.x] = __shfl_sync(0x0000ffff, (int)threadIdx.x, 0);
}'''
    with pytest.raises(kernels.ShuffleMaskError) as ei:
        launch(src, "notin", (1,), (32,), [np.zeros(32, np.int32)])
    assert ei.value.line == line_of(src, "__shfl_sync") and "not in its own mask" in ei.value.message
    src2 = r'''
extern "C" __global__ void elsewhere(int* out) {
    int v = threadIdx.x;
    if (threadIdx.x % 2 == 0)
        v = __shfl_xor_sync(0xffffffff, v, 1);
    else
        v = __shfl_xor_sync(0xffffffff, v, 2);
    out[threadIdx.x] = v;
}'''
    with pytest.raises(kernels.ShuffleMaskError) as ei:
        launch(src2, "elsewhere", (1,), (32,), [np.zeros(32, np.int32)])
    assert ei.value.line in (line_of(src2, "v, 1)"), line_of(src2, "v, 2)"))
    assert "different warp operation" in ei.value.message


def test_infinite_loop_times_out_and_python_survives(cpu, monkeypatch):
    monkeypatch.setenv("KERNELS_TIMEOUT", "0.5")
    src = r'''
extern "C" __global__ void spin(int* flag) {
    if (threadIdx.x == 3) {
        while (flag[0] == 0) { }          // nobody ever sets the flag
    }
    flag[1] = 1;
}'''
    with pytest.raises(kernels.KernelTimeout) as ei:
        launch(src, "spin", (1,), (32,), [np.zeros(2, np.int32)])
    assert ei.value.line == line_of(src, "while (flag[0] == 0)")
    assert ei.value.thread == (3, 0, 0)
    ok = np.array([1, 0], np.int32)
    launch(src, "spin", (1,), (32,), [ok])      # the runtime is usable again
    assert ok[1] == 1


def test_timeout_under_memcheck(cpu, monkeypatch):
    monkeypatch.setenv("KERNELS_TIMEOUT", "1")
    src = r'''
extern "C" __global__ void spin(volatile int* flag) {
    while (flag[0] == 0) { }
}'''
    with kernels.check("memcheck"):
        with pytest.raises(kernels.KernelTimeout) as ei:
            launch(src, "spin", (1,), (4,), [np.zeros(1, np.int32)])
    assert ei.value.line == line_of(src, "while (flag[0] == 0)") and ei.value.thread == (0, 0, 0)


def test_ctrl_c_interrupts_a_running_kernel(tmp_path):
    """SIGINT (Ctrl-C, Jupyter's interrupt) stops the launch with KeyboardInterrupt; Python goes on."""
    script = textwrap.dedent('''
        import os, signal, threading, numpy as np
        from kernels.cpu import CpuModule
        f = CpuModule('extern "C" __global__ void k(int* x) { while (true) {} }', (), ["k"]).get_function("k")
        threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
        try:
            f.launch((1, 1, 1), (32, 1, 1), [np.zeros(1, np.int32)])
            print("not interrupted")
        except KeyboardInterrupt:
            print("interrupted")
        g = CpuModule('extern "C" __global__ void g(int* x) { x[threadIdx.x] = 1; }', (), ["g"]).get_function("g")
        x = np.zeros(4, np.int32)
        g.launch((1, 1, 1), (4, 1, 1), [x])
        print("after", int(x.sum()))
    ''')
    env = dict(os.environ, KERNELS_TIMEOUT="60")
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["interrupted", "after", "4"]


def test_while_true_times_out(cpu, monkeypatch):
    monkeypatch.setenv("KERNELS_TIMEOUT", "0.3")
    src = r'''
extern "C" __global__ void forever(int* x) {
    while (true) {}
}'''
    with pytest.raises(kernels.KernelTimeout):
        launch(src, "forever", (1,), (1,), [np.zeros(1, np.int32)])


def test_segfault_becomes_out_of_bounds_error(cpu):
    src = r'''
extern "C" __global__ void wild(float* x, long long offset) {
    x[offset + threadIdx.x] = 1.0f;     // far outside the array
}'''
    with pytest.raises(kernels.OutOfBoundsError) as ei:
        launch(src, "wild", (1,), (8,), [np.zeros(8, np.float32), np.int64(1 << 40)])
    e = ei.value
    assert e.line == line_of(src, "x[offset + threadIdx.x]")
    assert "0x" in e.message and e.block == (0, 0, 0)
    y = np.zeros(8, np.float32)
    launch(src, "wild", (1,), (8,), [y, np.int64(0)])
    assert y.sum() == 8


def test_stack_overflow_is_reported_not_fatal(cpu):
    src = r'''
__device__ __noinline__ int deep(int n) {
    volatile int buf[64];
    for (int i = 0; i < 64; ++i) buf[i] = n + i;
    int r = n == 0 ? 0 : deep(n - 1);
    return r + buf[n % 64];
}
extern "C" __global__ void k(int* o, int n) { o[threadIdx.x] = deep(n); }
'''
    o = np.zeros(4, np.int32)
    with pytest.raises(kernels.OutOfBoundsError) as ei:
        launch(src, "k", (1,), (4,), [o, np.int32(100000)])
    assert "stack overflow" in ei.value.message and ei.value.line is not None
    launch(src, "k", (1,), (4,), [o, np.int32(3)])
    assert (o == 12).all()          # deep(n) = deep(n-1) + 2n: the runtime works again


def test_device_assert(cpu):
    src = r'''
extern "C" __global__ void checked(const int* v) {
    assert(v[threadIdx.x] >= 0);
}'''
    v = np.zeros(64, np.int32)
    v[37] = -1
    with pytest.raises(kernels.DeviceAssertError) as ei:
        launch(src, "checked", (2,), (64,), [v])
    assert ei.value.line == line_of(src, "assert(v[threadIdx.x] >= 0)")
    assert ei.value.thread == (37, 0, 0) and ei.value.block == (0, 0, 0)


def test_printf_goes_to_stdout_only(cpu, capfd):
    src = r'''
extern "C" __global__ void talk(int unused_param) {
    int unused_variable = 3;      // g++ would warn; warnings must not reach stderr
    if (threadIdx.x == 0) printf("hello from block %d\n", blockIdx.x);
}'''
    launch(src, "talk", (3,), (4,), [np.int32(0)])
    out, err = capfd.readouterr()
    assert sorted(l for l in out.splitlines() if l.startswith("hello")) == [f"hello from block {b}" for b in range(3)]
    assert err == ""


# ---------------------------------------------------------------- building

def test_host_compile_error_in_a_kernel_fails_that_kernel_alone_at_its_line():
    # (CpuModule directly: NVRTC would reject this source; the emulator's own builder must still be exact)
    src = ("extern \"C\" __global__ void k(float* x) {\n    x[0] = 1.0f;\n    this_is_not_declared(x);\n}\n"
           "extern \"C\" __global__ void ok(float* x) { x[threadIdx.x] = 2.0f; }\n")
    mod = CpuModule(src, (), ["k", "ok"])
    assert mod.unsupported()["k"][0] == 3 and "this_is_not_declared" in mod.unsupported()["k"][1]
    x = np.zeros(4, np.float32)
    mod.get_function("ok").launch((1, 1, 1), (4, 1, 1), [x])
    assert (x == 2).all()
    with pytest.raises(kernels.UnsupportedFeatureError) as ei:
        mod.get_function("k").launch((1, 1, 1), (4, 1, 1), [x])
    assert ei.value.line == 3 and "this_is_not_declared" in ei.value.message


def test_host_compile_error_at_file_scope_maps_to_user_line():
    src = "struct S { undeclared_t v; };\nextern \"C\" __global__ void k(float* x) { x[0] = 1.0f; }\n"
    with pytest.raises(kernels.CompileError) as ei:
        CpuModule(src, (), ["k"]).compile()
    assert ei.value.line == 1 and any(d[0] == 1 for d in ei.value.diagnostics)


def test_build_cache_is_shared_across_processes(tmp_path):
    """Two processes building the same new source at once: one build, both load it."""
    src = f'extern "C" __global__ void k(int* x) {{ x[threadIdx.x] = {os.getpid()} + threadIdx.x; }}\n'
    script = textwrap.dedent(f'''
        import numpy as np, sys
        from kernels.cpu import CpuModule
        f = CpuModule({src!r}, (), ["k"]).get_function("k")
        x = np.zeros(4, np.int32)
        f.launch((1, 1, 1), (4, 1, 1), [x])
        print(x.tolist())
    ''')
    env = dict(os.environ, KERNELS_CACHE_DIR=str(tmp_path))
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    procs = [subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    expect = str([os.getpid() + i for i in range(4)])
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err
        assert out.strip() == expect
    assert len(list((tmp_path / "cpu").glob("mod-*.so"))) == 1


@pytest.mark.skipif(not (shutil.which("aarch64-linux-gnu-g++") and shutil.which("qemu-aarch64")),
                    reason="needs aarch64-linux-gnu-g++ and qemu-aarch64 (apt: g++-aarch64-linux-gnu qemu-user)")
def test_aarch64_context_switch_under_qemu(tmp_path):
    """The aarch64 fiber switch: the seed LayerNorm with 256 fibers per block, cross-built and run in qemu."""
    from kernels.cpu.build import INCLUDE_DIR, RUNTIME_DIR, translation_unit
    tu = tmp_path / "tu.cpp"
    tu.write_text(translation_unit(SEED, ["layernorm_kernel<256>"]))
    exe = tmp_path / "arm_test"
    cxx = ["aarch64-linux-gnu-g++", "-std=c++17", "-O2", "-w", "-pthread", "-fno-finite-loops", "-I", str(INCLUDE_DIR)]
    subprocess.run(cxx + ["-include", str(INCLUDE_DIR / "emu.h"), "-c", str(tu), "-o", str(tmp_path / "tu.o")],
                   check=True, capture_output=True)
    subprocess.run(cxx + [str(RUNTIME_DIR / "runtime.cpp"), str(RUNTIME_DIR / "fiber_switch.S"),
                          str(Path(__file__).parent / "cuda" / "aarch64_layernorm_main.cpp"), str(tmp_path / "tu.o"),
                          "-static", "-o", str(exe)], check=True, capture_output=True)
    out = subprocess.run(["qemu-aarch64", str(exe)], capture_output=True, text=True, timeout=600).stdout
    first, second = out.splitlines()[:2]
    assert first.startswith("rc=0 ") and float(first.split("maxerr=")[1]) < 1e-5
    assert second.startswith("rc2=2 ") and "does not exist" in second
