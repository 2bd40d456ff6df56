"""Public API of ``kernels``: shape, backend selection, module/function wiring.

Launch tests run end to end through the CPU emulator when ``kernels.cpu`` is
importable; the wiring tests use a recording backend so they also pin down what
the front end hands to any backend (validated args, normalised dims).
"""
from pathlib import Path

import numpy as np
import pytest

import kernels
from kernels import _config, raw
from kernels._cupy import _map_compile_error, cupy_options

LN_SRC = r"""
#include <cuda_runtime.h>
namespace {
template<int BLOCK_SIZE>
__global__ void layernorm_kernel(const float* __restrict__ input, const float* __restrict__ gamma,
                                 const float* __restrict__ beta, float* __restrict__ output,
                                 int M, int N, float eps) {
  int row = blockIdx.x;
  if (row >= M) return;
  __shared__ float s_sum, s_sq;
  if (threadIdx.x == 0) {
    float sum = 0.f, sq = 0.f;
    for (int c = 0; c < N; ++c) { float x = input[row * N + c]; sum += x; sq += x * x; }
    s_sum = sum; s_sq = sq;
  }
  __syncthreads();
  float mean = s_sum / N;
  float var = fmaxf(s_sq / N - mean * mean, 0.0f);
  float inv = rsqrtf(var + eps);
  for (int c = threadIdx.x; c < N; c += BLOCK_SIZE)
    output[row * N + c] = (input[row * N + c] - mean) * inv * gamma[c] + beta[c];
}
}  // namespace
extern "C" __global__ void add_one(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1.0f;
}
"""
LN_NAME = "layernorm_kernel<256>"


@pytest.fixture
def cpu_backend(monkeypatch):
    monkeypatch.setenv("KERNELS_BACKEND", "cpu")


class Recorder:
    """A backend that records what the front end hands it."""

    modules = []

    def __init__(self, code, options, names, kernels_):
        self.code, self.options, self.names, self.kernels = code, options, names, kernels_
        self.launches = []
        Recorder.modules.append(self)

    def get_function(self, name):
        mod = self

        class Fn:
            def launch(self, grid, block, args, shared_mem=0):
                mod.launches.append((name, grid, block, args, shared_mem))
        return Fn()


@pytest.fixture
def recording(monkeypatch, cpu_backend):
    Recorder.modules = []
    monkeypatch.setattr(raw, "_backend_module",
                        lambda backend, code, options, names, kernels_, **kw: Recorder(
                            code, options, names, kernels_))
    return Recorder


# --------------------------------------------------------------------------- shape

def test_public_names():
    for name in ["RawModule", "RawKernel", "backend", "check", "xp", "asarray", "asnumpy", "zeros",
                 "empty", "empty_like", "synchronize", "device_name", "CompileError",
                 "ArgumentError", "LaunchError", "KernelError", "DeadlockError", "RaceError",
                 "OutOfBoundsError", "ShuffleMaskError", "KernelTimeout", "DeviceAssertError"]:
        assert hasattr(kernels, name), name
    assert issubclass(kernels.ArgumentError, kernels.KernelError)
    assert issubclass(kernels.ArgumentError, TypeError)


def test_backend_selection_by_env(monkeypatch):
    monkeypatch.setenv("KERNELS_BACKEND", "cpu")
    assert kernels.backend() == "cpu"
    assert kernels.xp is np
    assert kernels.device_name().startswith("CPU emulator (")
    monkeypatch.setenv("KERNELS_BACKEND", "tpu")
    with pytest.raises(ValueError):
        kernels.backend()
    if not _config._gpu_available():
        monkeypatch.setenv("KERNELS_BACKEND", "cupy")
        with pytest.raises(RuntimeError):
            kernels.backend()


def test_array_helpers_on_cpu(cpu_backend):
    host = np.arange(12, dtype=np.float32).reshape(3, 4)
    d = kernels.asarray(host.T)
    assert d.flags.c_contiguous and np.array_equal(d, host.T)
    assert kernels.asarray(host, dtype=np.float64).dtype == np.float64
    assert np.array_equal(kernels.asnumpy(d), host.T)
    assert kernels.zeros((2, 3)).dtype == np.float32 and not kernels.zeros(4).any()
    assert kernels.empty(5, np.int32).shape == (5,)
    like = kernels.empty_like(host)
    assert like.shape == host.shape and like.dtype == host.dtype
    kernels.synchronize()


def test_check_context(cpu_backend):
    assert "memcheck" not in kernels.active_checks()
    with kernels.check("memcheck"):
        assert "memcheck" in kernels.active_checks()
    assert "memcheck" not in kernels.active_checks()


# --------------------------------------------------------------------------- modules

def test_compile_error_surfaces_at_construction(recording):
    bad = LN_SRC.replace("float inv = rsqrtf", "float inv = rsqrtff")
    with pytest.raises(kernels.CompileError) as info:
        kernels.RawModule(code=bad, name_expressions=[LN_NAME])
    bad_line = next(i for i, t in enumerate(bad.splitlines(), 1) if "rsqrtff" in t)
    assert info.value.line == bad_line
    assert "rsqrtff" in info.value.source_line
    assert Recorder.modules == []  # the backend never saw the broken source


def test_module_hands_backend_params_and_validated_args(recording):
    mod = kernels.RawModule(code=LN_SRC, options=("-DUNUSED=1",), name_expressions=[LN_NAME])
    rec = Recorder.modules[-1]
    assert rec.code == LN_SRC and rec.options == ("-DUNUSED=1",) and rec.names == [LN_NAME]
    assert set(rec.kernels) == {LN_NAME, "add_one"}
    assert [p.name for p in rec.kernels[LN_NAME]][-1] == "eps"
    f = mod.get_function(LN_NAME)
    assert mod.get_function(LN_NAME) is f
    M, N = 3, 8
    x = kernels.zeros((M, N))
    g, b, y = kernels.zeros(N), kernels.zeros(N), kernels.zeros((M, N))
    f((M,), (256,), (x, g, b, y, np.int32(M), np.int32(N), np.float32(1e-5)))
    name, grid, block, args, shared = rec.launches[-1]
    assert (name, grid, block, shared) == (LN_NAME, (M, 1, 1), (256, 1, 1), 0)
    assert args[0] is x and type(args[-1]) is np.float32
    with pytest.raises(kernels.ArgumentError) as info:
        f((M,), (256,), (x, g, b, y, np.int32(M), np.int32(N), 1e-5))
    assert info.value.param == "eps"
    with pytest.raises(kernels.LaunchError):
        f((M,), (2048,), (x, g, b, y, np.int32(M), np.int32(N), np.float32(1e-5)))
    assert len(rec.launches) == 1  # rejected launches never reach the backend
    f(M, 256, [x, g, b, y, np.int32(M), np.int32(N), np.float32(1e-5)], shared_mem=64)
    assert rec.launches[-1][4] == 64


def test_get_function_errors_explain_what_to_do(recording):
    mod = kernels.RawModule(code=LN_SRC, name_expressions=[LN_NAME])
    with pytest.raises(kernels.KernelNotFoundError) as info:
        mod.get_function("layernorm_kernel")
    assert "name_expressions" in info.value.message and "<256>" in info.value.message
    with pytest.raises(kernels.KernelNotFoundError) as info:
        mod.get_function("layernorm_kernel<128>")
    with pytest.raises(LookupError):
        mod.get_function("no_such_kernel")
    cpp = kernels.RawModule(code="__global__ void k(float* x) {}\n")
    with pytest.raises(kernels.KernelNotFoundError) as info:
        cpp.get_function("k")
    assert 'extern "C"' in info.value.message
    assert kernels.RawModule(code="__global__ void k(float* x) {}\n",
                             name_expressions=["k"]).get_function("k").params[0].ctype == "float*"


def test_raw_kernel(recording):
    k = kernels.RawKernel(LN_SRC, "add_one")
    x = kernels.zeros(10)
    k((1,), (32,), (x, np.int32(10)))
    assert Recorder.modules[-1].launches[-1][0] == "add_one"
    assert [p.ctype for p in k.params] == ["float*", "int"]
    with pytest.raises(kernels.ArgumentError):
        k((1,), (32,), (x, 10))
    with pytest.raises(kernels.KernelNotFoundError):
        kernels.RawKernel(LN_SRC, "add_two")


def test_unsupported_constructor_forms():
    with pytest.raises(TypeError):
        kernels.RawModule(path="/tmp/x.cubin")
    with pytest.raises(ValueError):
        kernels.RawModule(code="", backend="nvcc")


# --------------------------------------------------------------------------- cupy backend pieces

def test_cupy_options_pin_the_standard():
    assert cupy_options(("-DX=1",)) == ("-DX=1", "-std=c++17")
    assert cupy_options(("--std=c++14",)) == ("--std=c++14",)


def test_cupy_compile_exception_maps_to_the_same_format():
    class FakeCompileException(Exception):  # cupy's CompileException keeps the NVRTC log
        def get_message(self):
            return ("/tmp/tmpab12cd/kern.cu(3): error: identifier \"y\" is undefined\n"
                    "    x[0] = y;\n         ^\n\n1 error detected in the compilation of "
                    "\"/tmp/tmpab12cd/kern.cu\".\n")
    code = 'extern "C" __global__\nvoid k(float* x) {\n    x[0] = y;\n}\n'
    err = _map_compile_error(FakeCompileException(), code)
    assert isinstance(err, kernels.CompileError)
    assert err.line == 3 and err.source_line == "    x[0] = y;"
    assert err.diagnostics == [(3, "error", 'identifier "y" is undefined')]


# --------------------------------------------------------------------------- end to end

def _layernorm_ref(x, g, b, eps):
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=1, keepdims=True)
    var = x64.var(axis=1, keepdims=True)
    return ((x64 - mean) / np.sqrt(var + eps) * g + b).astype(np.float32)


def _run_layernorm():
    rng = np.random.default_rng(0)
    M, N = 5, 300
    xh = rng.standard_normal((M, N)).astype(np.float32)
    gh = rng.standard_normal(N).astype(np.float32)
    bh = rng.standard_normal(N).astype(np.float32)
    mod = kernels.RawModule(code=LN_SRC, name_expressions=[LN_NAME])
    f = mod.get_function(LN_NAME)
    x, g, b = kernels.asarray(xh), kernels.asarray(gh), kernels.asarray(bh)
    y = kernels.zeros((M, N))
    f((M,), (256,), (x, g, b, y, np.int32(M), np.int32(N), np.float32(1e-5)))
    kernels.synchronize()
    np.testing.assert_allclose(kernels.asnumpy(y), _layernorm_ref(xh, gh, bh, 1e-5),
                               rtol=1e-4, atol=1e-4)
    k = kernels.RawKernel(LN_SRC, "add_one")
    v = kernels.zeros(1000)
    k(((1000 + 255) // 256,), (256,), (v, np.int32(1000)))
    assert np.array_equal(kernels.asnumpy(v), np.ones(1000, np.float32))
    with pytest.raises(kernels.ArgumentError):
        f((M,), (256,), (x, g, b, y, np.int32(M), np.int32(N), np.float64(1e-5)))


def test_end_to_end_on_cpu_emulator(cpu_backend):
    try:
        from kernels.cpu import CpuModule  # noqa: F401
    except ImportError:
        pytest.skip("CPU emulator backend (kernels.cpu.CpuModule) not present")
    _run_layernorm()


@pytest.mark.gpu
def test_end_to_end_on_gpu(monkeypatch):
    monkeypatch.setenv("KERNELS_BACKEND", "cupy")
    import cupy
    assert kernels.xp is cupy
    assert not kernels.device_name().startswith("CPU")
    _run_layernorm()
    mod = kernels.RawModule(code=LN_SRC, name_expressions=[LN_NAME])
    f = mod.get_function(LN_NAME)
    host = np.zeros((2, 8), np.float32)
    d = kernels.asarray(host)
    with pytest.raises(kernels.ArgumentError) as info:
        f((2,), (256,), (host, d, d, d, np.int32(2), np.int32(8), np.float32(1e-5)))
    assert "kernels.asarray" in info.value.message


VEC_SRC = r"""
extern "C" __global__ void scale4(const float4* __restrict__ in, float4* out, float s, int n4) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n4) { float4 v = in[i]; out[i] = make_float4(v.x * s, v.y * s, v.z * s, v.w * s); }
}
"""


def test_vector_types_and_rejections_end_to_end_on_cpu(cpu_backend):
    try:
        from kernels.cpu import CpuModule  # noqa: F401
    except ImportError:
        pytest.skip("CPU emulator backend (kernels.cpu.CpuModule) not present")
    k = kernels.RawKernel(VEC_SRC, "scale4")
    src = kernels.asarray(np.arange(64, dtype=np.float32))
    out = kernels.zeros(64)
    k((1,), (16,), (src, out, np.float32(0.5), np.int32(16)))
    assert np.array_equal(kernels.asnumpy(out), np.arange(64, dtype=np.float32) * 0.5)
    backing = kernels.zeros(65)
    with pytest.raises(kernels.ArgumentError) as info:
        k((1,), (16,), (backing[1:], out, np.float32(0.5), np.int32(16)))
    assert info.value.param == "in" and "aligned" in info.value.message
    with pytest.raises(kernels.LaunchError):
        k((0,), (16,), (src, out, np.float32(0.5), np.int32(16)))
    with pytest.raises(kernels.LaunchError):
        k((1,), (16,), (src, out, np.float32(0.5), np.int32(16)), shared_mem=300 * 1024)


def test_cupy_backend_wiring_with_a_stand_in_cupy(monkeypatch):
    """The GPU wrapper's calls into cupy (checked for real by the gpu-marked test)."""
    import sys
    import types
    from kernels import _cupy

    calls = {}

    class CompileException(Exception):
        def get_message(self):
            return '/tmp/x/kern.cu(2): error: expected a ";"\n\n1 error detected\n'

    class DriverError(Exception):
        pass

    class FakeKernel:
        max_dynamic_shared_size_bytes = 0
        kernel = object()

        def __call__(self, grid, block, args, **kw):
            calls["launch"] = (grid, block, args, kw, self.max_dynamic_shared_size_bytes)

    class FakeRawModule:
        def __init__(self, code, options, name_expressions, enable_cooperative_groups):
            calls["module"] = (options, name_expressions, enable_cooperative_groups)
            self.code = code

        def compile(self):
            if "BROKEN" in self.code:
                raise CompileException()

        def get_function(self, name):
            if name == "missing":
                raise DriverError("CUDA_ERROR_NOT_FOUND")
            return FakeKernel()

    fake = types.SimpleNamespace(
        RawModule=FakeRawModule,
        cuda=types.SimpleNamespace(compiler=types.SimpleNamespace(CompileException=CompileException),
                                   driver=types.SimpleNamespace(CUDADriverError=DriverError)))
    monkeypatch.setitem(sys.modules, "cupy", fake)
    mod = _cupy.CupyModule("src", ("-DX=1",), ["k<4>"])
    assert calls["module"] == (("-DX=1", "-std=c++17"), ("k<4>",), False)
    fn = mod.get_function("k<4>")
    fn.launch((2, 1, 1), (64, 1, 1), [1, 2], 64 * 1024)
    grid, block, args, kw, smem_attr = calls["launch"]
    assert (grid, block, args, kw["shared_mem"], smem_attr) == ((2, 1, 1), (64, 1, 1), (1, 2),
                                                                  65536, 65536)
    with pytest.raises(kernels.CompileError) as info:
        _cupy.CupyModule("line1\nBROKEN\n", (), [])
    assert info.value.line == 2 and info.value.source_line == "BROKEN"
    with pytest.raises(kernels.KernelNotFoundError):
        mod.get_function("missing")


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="counts Linux memory mappings")
def test_loaded_modules_do_not_pile_up_fiber_stacks(cpu_backend):
    """Each emulator module has its own fiber-stack pool (2 mappings per stack). A process that loads many
    modules with big blocks (a test suite, a batch grader) once ran into vm.max_map_count and aborted;
    after a launch a module now keeps a few stacks, whatever the block size."""
    def maps() -> int:
        return len(Path("/proc/self/maps").read_text().splitlines())

    x = kernels.zeros(1024)
    kernels.RawKernel(LN_SRC.replace("x[i] += 1.0f", "x[i] += 0.5f"), "add_one")((1,), (1024,), (x, np.int32(1024)))
    before = maps()
    for k in range(4):  # distinct sources: distinct modules, each launching one 1024-thread block
        src = LN_SRC.replace("x[i] += 1.0f", f"x[i] += {k + 2}.0f")
        kernels.RawKernel(src, "add_one")((1,), (1024,), (x, np.int32(1024)))
    grown = maps() - before
    assert grown < 4 * 200, f"{grown} new memory mappings for 4 modules (2 per fiber stack kept: 2048 each before)"


OVERLOADED_SRC = r"""
__global__ void add(int* a, int n, int* b) { int i = threadIdx.x; if (i < n) a[i] += b[0]; }
__global__ void add(float* a, int n) { int i = threadIdx.x; if (i < n) a[i] += 1.0f; }
__global__ void plain(int* y) { y[threadIdx.x] = 7; }
"""


def test_name_expressions_nvrtc_accepts_that_are_not_lvalues(cpu_backend):
    """An overloaded kernel picked with static_cast (cupy and NVRTC accept it) and `&k` both launch."""
    pick = "static_cast<void(*)(int*, int, int*)>(add)"
    mod = kernels.RawModule(code=OVERLOADED_SRC, name_expressions=[pick, "&plain"])
    a, b = kernels.asarray(np.zeros(4, np.int32)), kernels.asarray(np.array([3], np.int32))
    mod.get_function(pick)((1,), (4,), (a, np.int32(4), b))
    assert kernels.asnumpy(a).tolist() == [3, 3, 3, 3]
    mod.get_function("&plain")((1,), (4,), (a,))
    assert kernels.asnumpy(a).tolist() == [7, 7, 7, 7]


def test_ambiguous_name_expression_names_the_kernel_line(cpu_backend):
    with pytest.raises(kernels.CompileError) as info:
        kernels.RawModule(code=OVERLOADED_SRC, name_expressions=["add"])
    assert info.value.line == 2 and "add" in info.value.message
