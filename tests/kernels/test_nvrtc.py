"""NVRTC front end: cupy parity of what compiles, diagnostics, parameter discovery."""
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from kernels import nvrtc
from kernels.errors import CompileError
from kernels.signature import find_kernels

SIMPLE = 'extern "C" __global__ void k(float* x) { x[threadIdx.x] = 1.0f; }\n'


@pytest.fixture(autouse=True)
def _no_disk_cache(monkeypatch):
    # what these tests check must come from NVRTC now, not from an earlier run's cache
    monkeypatch.setenv("KERNELS_NVRTC_DISK_CACHE", "0")


@pytest.mark.parametrize("header", ["cuda_fp16.h", "cuda_bf16.h", "cooperative_groups.h",
                                    "cuda_runtime.h", "math_constants.h",
                                    "cooperative_groups/reduce.h", "cuda/std/limits"])
def test_cuda_headers_resolve_like_cupy(header):
    res = nvrtc.compile_source(f"#include <{header}>\n" + SIMPLE)
    assert "k" in res.kernels


@pytest.mark.parametrize("header", ["cstdio", "stdio.h", "cmath", "vector"])
def test_host_headers_are_rejected_like_cupy(header):
    with pytest.raises(CompileError) as info:
        nvrtc.compile_source(f"#include <{header}>\n" + SIMPLE)
    err = info.value
    assert err.line == 1
    assert header in err.diagnostics[0][2]
    assert "主机端" in err.details


def test_missing_header_wheels_are_named(monkeypatch):
    monkeypatch.setattr(nvrtc, "include_dirs", lambda: ())
    with pytest.raises(CompileError) as info:
        nvrtc.compile_source("#include <cuda_fp16.h>\n" + SIMPLE)
    assert "pip install nvidia-cuda-runtime" in info.value.message
    assert "nvidia-cuda-runtime" in info.value.details


def test_minus_infinity_without_header_is_rejected():
    src = 'extern "C" __global__ void k(float* x) {\n  x[0] = -INFINITY;\n}\n'
    with pytest.raises(CompileError) as info:
        nvrtc.compile_source(src)
    err = info.value
    assert err.line == 2
    assert err.source_line.strip() == "x[0] = -INFINITY;"
    assert 'identifier "INFINITY" is undefined' in err.message
    assert "CUDART_INF_F" in err.details


def test_math_constants_infinity_is_fine():
    src = ('#include <math_constants.h>\n'
           'extern "C" __global__ void k(float* x) { x[0] = -CUDART_INF_F; }\n')
    assert nvrtc.compile_source(src).kernels["k"][0].ctype == "float*"


def test_fp16_kernel_compiles_and_types_resolve():
    src = ('#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n'
           'extern "C" __global__ void k(const __half* a, __nv_bfloat16* b, half2* c, __half s) {}\n')
    params = nvrtc.compile_source(src).kernels["k"]
    assert [p.dtype for p in params[:2]] == [np.dtype(np.float16), params[1].dtype]
    assert params[1].dtype.itemsize == 2
    assert params[2].lanes == 2 and params[2].dtype == np.float16
    assert not params[3].is_pointer and params[3].dtype == np.float16


def test_diagnostics_map_to_user_lines_and_keep_all_errors():
    src = ("// line 1\n"
           'extern "C" __global__ void k(float* x) {\n'
           "  int unused;\n"
           "  x[0] = undefined_a;\n"
           "  x[1] = undefined_b;\n"
           "}\n")
    with pytest.raises(CompileError) as info:
        nvrtc.compile_source(src)
    err = info.value
    assert err.line == 4
    assert err.source_line == "  x[0] = undefined_a;"
    lines = [(line, sev) for line, sev, _ in err.diagnostics]
    assert (3, "warning") in lines and (4, "error") in lines and (5, "error") in lines
    assert "undefined_a" in err.log


def test_warnings_are_kept_and_never_printed(capfd):
    src = 'extern "C" __global__ void k(float* x) { int unused; x[0] = 1.0f; }\n'
    res = nvrtc.compile_source(src)
    out, errtext = capfd.readouterr()
    assert out == "" and errtext == ""
    assert res.warnings and res.warnings[0][0] == 1 and res.warnings[0][1] == "warning"


def test_header_error_is_attributed_to_the_instantiating_line():
    src = ("template <int B> __device__ void check() { static_assert(B < 100, \"too big\"); }\n"
           "template <int B> __global__ void k(float* x) {\n"
           "  check<B>();\n"
           "}\n")
    with pytest.raises(CompileError) as info:
        nvrtc.compile_source(src, name_expressions=["k<256>"])
    assert info.value.line == 1
    assert "too big" in info.value.message


def test_unannotated_functions_are_device_functions_like_cupy():
    # cupy compiles with --device-as-default-execution-space
    src = ("float sq(float v) { return v * v; }\n"
           'extern "C" __global__ void k(float* x) { x[0] = sq(x[0]); }\n')
    assert "k" in nvrtc.compile_source(src).kernels


def test_host_launch_wrapper_is_rejected_with_advice():
    src = ("#include <cuda_runtime.h>\n"
           "__global__ void k(float* x) { x[0] = 1.0f; }\n"
           "void launch(float* x, cudaStream_t s) {\n"
           "  k<<<1, 1, 0, s>>>(x);\n"
           "}\n")
    with pytest.raises(CompileError) as info:
        nvrtc.compile_source(src)
    assert info.value.line == 4
    assert "主机端函数" in info.value.details


def test_invalid_option():
    with pytest.raises(CompileError) as info:
        nvrtc.compile_source(SIMPLE, ["--no-such-option"])
    assert "no-such-option" in info.value.message


def test_user_options_and_defaults():
    opts = nvrtc.assemble_options(["-DN=4"])
    assert opts[0] == "-DN=4"
    assert nvrtc.DEFAULT_STD in opts and nvrtc.DEFAULT_ARCH in opts
    assert any(o.startswith("-I") for o in opts)
    opts = nvrtc.assemble_options(["-std=c++14", "--gpu-architecture=compute_80"])
    assert nvrtc.DEFAULT_STD not in opts and nvrtc.DEFAULT_ARCH not in opts
    # the define reaches the compiler
    src = 'extern "C" __global__ void k(float* x) { static_assert(N == 4, "N"); }\n'
    nvrtc.compile_source(src, ["-DN=4"])
    with pytest.raises(CompileError):
        nvrtc.compile_source(src, ["-DN=5"])


def test_default_standard_is_cpp17():
    src = ("struct P { int a; int b; };\n"
           'extern "C" __global__ void k(float* x) {\n'
           "  if constexpr (sizeof(float) == 4) { x[0] = 1.0f; }\n"
           "  auto [a, b] = P{1, 2};\n"
           "  x[1] = a + b;\n"
           "}\n")
    nvrtc.compile_source(src)
    with pytest.raises(CompileError):
        nvrtc.compile_source(src, ["-std=c++11"])


def test_results_are_cached_by_hash():
    a = nvrtc.compile_source(SIMPLE, ["-DCACHE_TEST=1"])
    b = nvrtc.compile_source(SIMPLE, ["-DCACHE_TEST=1"])
    c = nvrtc.compile_source(SIMPLE, ["-DCACHE_TEST=2"])
    assert a is b and a is not c


def test_disk_cache_round_trip(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELS_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("KERNELS_NVRTC_DISK_CACHE", "1")
    src = ("typedef float real;\n"
           'extern "C" __global__ void k(const real* x, float4* v, int n) { int unused; }\n')
    nvrtc.clear_cache()
    first = nvrtc.compile_source(src, ["-DDISK=1"])
    files = list(tmp_path.rglob("*.json"))
    assert len(files) == 1
    nvrtc.clear_cache()
    again = nvrtc.compile_source(src, ["-DDISK=1"])
    assert again is not first
    assert again.kernels == first.kernels and again.warnings == first.warnings
    assert [d.name for d in again.decls] == ["k"]
    files[0].write_text("{not json")  # damaged entries are recompiled
    nvrtc.clear_cache()
    assert nvrtc.compile_source(src, ["-DDISK=1"]).kernels == first.kernels
    nvrtc.clear_cache(disk=True)
    assert not list(tmp_path.rglob("*.json"))


LAYERNORM_LIKE = r"""
#include <cuda_runtime.h>
namespace {
template<int BLOCK_SIZE>
__device__ __forceinline__ float warp_reduce_sum(float val) { return val; }

// template kernel in an anonymous namespace, as the lessons write it
template<int BLOCK_SIZE>
__global__ void layernorm_kernel(
    const float* __restrict__ input, const float* __restrict__ gamma,
    const float* __restrict__ beta, float* __restrict__ output,
    int M, int N, float eps) {
  if (blockIdx.x >= M) return;
}
}  // namespace
"""


def test_name_expression_template_in_anonymous_namespace():
    res = nvrtc.compile_source(LAYERNORM_LIKE, name_expressions=["layernorm_kernel<256>"])
    params = res.kernels["layernorm_kernel<256>"]
    assert [p.name for p in params] == ["input", "gamma", "beta", "output", "M", "N", "eps"]
    assert [p.ctype for p in params] == ["const float*"] * 3 + ["float*", "int", "int", "float"]
    assert [p.is_const for p in params[:4]] == [True, True, True, False]
    assert params[-1].dtype == np.float32 and params[4].dtype == np.int32
    assert res.lowered["layernorm_kernel<256>"].startswith("_Z")
    assert res.lowered["layernorm_kernel<256>"] in res.entries


def test_name_expressions_substitute_template_types_and_typedefs():
    src = ("#include <cuda_fp16.h>\n"
           "typedef unsigned int index_t;\n"
           "namespace ops {\n"
           "template <typename T, int N>\n"
           "__global__ void scale(T* out, const T* in, index_t n, T factor) {}\n"
           "}\n")
    res = nvrtc.compile_source(src, name_expressions=["ops::scale<float, 4>",
                                                      "ops::scale<__half, 8>",
                                                      "ops::scale<double, 1>"])
    f32 = res.kernels["ops::scale<float, 4>"]
    assert [p.dtype for p in f32] == [np.float32, np.float32, np.uint32, np.float32]
    assert [p.name for p in f32] == ["out", "in", "n", "factor"]
    assert res.kernels["ops::scale<__half, 8>"][3].dtype == np.float16
    assert res.kernels["ops::scale<double, 1>"][0].dtype == np.float64


def test_bad_name_expression_is_a_compile_error():
    with pytest.raises(CompileError) as info:
        nvrtc.compile_source(LAYERNORM_LIKE, name_expressions=["layernorm_kernal<256>"])
    assert "name_expressions" in info.value.diagnostics[0][2]


def test_extern_c_kernels_get_real_types_through_typedefs_and_namespaces():
    src = ("typedef float real;\n"
           "using idx = long long;\n"
           "namespace a {\n"
           'extern "C" __global__ void __launch_bounds__(128) k1(const real* x, idx n,\n'
           "    float4* v, unsigned char c, size_t s) {}\n"
           "}\n"
           "namespace {\n"
           'extern "C" __global__ void internal(float* x) {}  // internal linkage: mangled\n'
           "}\n"
           'extern "C" {\n'
           "  __global__ void k2(void) {}\n"
           "  __device__ float helper(float v) { return v; }\n"
           "}\n"
           "__global__ void cpp_linkage(int* p) {}\n")
    res = nvrtc.compile_source(src)
    assert set(res.kernels) == {"k1", "k2"}  # C++ linkage needs a name expression, as in cupy
    k1 = res.kernels["k1"]
    assert [p.name for p in k1] == ["x", "n", "v", "c", "s"]
    assert [p.dtype for p in k1] == [np.float32, np.int64, np.float32, np.uint8, np.uint64]
    assert k1[2].lanes == 4 and k1[2].align == 16 and k1[2].size == 16
    assert res.kernels["k2"] == []


def test_kernels_written_by_macros_are_found_through_ptx_entries():
    src = ("#define AXPY(name, T) extern \"C\" __global__ void name(T a, const T* x, T* y) {}\n"
           "AXPY(saxpy, float)\n"
           "AXPY(daxpy, double)\n")
    res = nvrtc.compile_source(src)
    assert [p.dtype for p in res.kernels["saxpy"]] == [np.float32] * 3
    assert [p.ctype for p in res.kernels["daxpy"]] == ["double", "const double*", "double*"]
    assert [p.name for p in res.kernels["daxpy"]] == ["arg0", "arg1", "arg2"]


def test_source_scanner_ignores_comments_strings_and_helpers():
    src = ("// __global__ void fake1(int x) {}\n"
           "/* __global__ void fake2(int x) {} */\n"
           'const char* s = "__global__ void fake3(int)";\n'
           "template <typename T, int N = (3 > 2)>\n"
           "__global__ void real1(T* out, const T in[], int n = 3) { if (n < 3) {} }\n"
           "__device__ int helper(int v) { return v; }\n"
           "__device__ float table[4 < 8 ? 2 : 3];\n"
           "constexpr bool small = 3 < 4;\n"
           "[[maybe_unused]] __global__ void real2(unsigned, float eps) {}\n"
           "template <> __global__ void real1<float>(float* out, const float in[], int n) {}\n")
    found = find_kernels(src)
    assert [d.name for d in found] == ["real1", "real2", "real1"]  # + explicit specialization
    assert found[2].line == 10
    decls = {d.name: d for d in found[:2]}
    assert decls["real1"].is_template and decls["real1"].line == 5
    assert [n for n, _ in decls["real1"].params] == ["out", "in", "n"]
    assert decls["real1"].params[1][1].endswith("*")
    assert decls["real2"].params[0] == (None, "unsigned")


PARITY_SOURCES = [
    SIMPLE,
    "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n" + SIMPLE,
    "#include <cooperative_groups.h>\n" + SIMPLE,
    "#include <math_constants.h>\n" + SIMPLE,
    "#include <cuda/std/limits>\n" + SIMPLE,
    "#include <cstdio>\n" + SIMPLE,
    'extern "C" __global__ void k(float* x) { x[0] = -INFINITY; }\n',
    "float sq(float v) { return v * v; }\n" + SIMPLE,
    "__global__ void g(float* x) {}\nvoid launch(float* x) { g<<<1, 1>>>(x); }\n",
]


@pytest.mark.gpu
@pytest.mark.parametrize("src", PARITY_SOURCES)
def test_front_end_accepts_exactly_what_cupy_accepts(src):
    cupy = pytest.importorskip("cupy")
    try:
        cupy.RawModule(code=src, options=("-std=c++17",)).compile()
        cupy_ok = True
    except cupy.cuda.compiler.CompileException:
        cupy_ok = False
    try:
        nvrtc.compile_source(src)
        ours_ok = True
    except CompileError:
        ours_ok = False
    assert ours_ok == cupy_ok



def test_reading_an_empty_log_leaves_the_process_one_byte_strings_alone():
    """NVRTC writes a NUL into the buffer it is given. A clean compile's log is that NUL alone; handed
    ``b" " * 1`` (CPython's one shared ``b" "``), every later ``b" " * n`` of the process was NULs, and numpy
    padded .npy headers with them: the judge's child on cupy wrote outputs no one could load (issue 19).
    In a child process, so that a regression cannot poison this worker's other tests."""
    code = textwrap.dedent("""
        import io, numpy as np
        from kernels import nvrtc
        prog = nvrtc._Program('__global__ void k(float* x) { x[0] = 1.0f; }', (nvrtc.DEFAULT_STD,), [])
        assert prog.ok and prog.log() == ''
        prog.ptx()
        n = 3
        assert b' ' * n == b'   ', b' ' * n
        buf = io.BytesIO()
        np.savez(buf, y=np.arange(3, dtype=np.float32))
        buf.seek(0)
        with np.load(buf) as z:
            assert z['y'].tolist() == [0.0, 1.0, 2.0]
    """)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
