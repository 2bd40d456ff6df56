"""Argument and launch-configuration checks (both backends share them)."""
import numpy as np
import pytest

from kernels import nvrtc
from kernels.args import MAX_DYNAMIC_SHARED, check_args, check_launch
from kernels.errors import ArgumentError, LaunchError

SRC = r"""
#include <cuda_fp16.h>
#include <cuda_bf16.h>
template <int B>
__global__ void layernorm_kernel(const float* __restrict__ input, const float* __restrict__ gamma,
                                 const float* __restrict__ beta, float* __restrict__ output,
                                 int M, int N, float eps) {}
extern "C" __global__ void vec4(const float4* __restrict__ in, float4* out, int n) {}
extern "C" __global__ void halves(const __half* a, __nv_bfloat16* b, __half s, unsigned long long n) {}
extern "C" __global__ void raw(void* p, double d, bool flag, size_t n) {}
extern "C" __global__ void byval(float4 v, int n) {}
"""


@pytest.fixture(scope="module")
def kernels_():
    return nvrtc.compile_source(SRC, name_expressions=["layernorm_kernel<256>"]).kernels


@pytest.fixture(scope="module")
def ln(kernels_):
    return kernels_["layernorm_kernel<256>"]


def ln_args(M=4, N=8):
    x = np.zeros((M, N), np.float32)
    g = np.ones(N, np.float32)
    b = np.zeros(N, np.float32)
    y = np.empty((M, N), np.float32)
    return [x, g, b, y, np.int32(M), np.int32(N), np.float32(1e-5)]


def raises(params, args, backend="cpu"):
    with pytest.raises(ArgumentError) as info:
        check_args("k", params, args, backend)
    return info.value


def test_good_arguments_pass(ln):
    args = ln_args()
    assert check_args("layernorm_kernel<256>", ln, tuple(args), "cpu") == args


def test_argument_count(ln):
    err = raises(ln, ln_args()[:-1])
    assert "takes 7 arguments" in err.message and "got 6" in err.message
    assert "float eps" in err.message
    assert "7 个参数" in err.details


def test_args_must_be_a_sequence(ln):
    err = raises(ln, ln_args()[0])
    assert "tuple" in err.message


def test_float64_array_for_float_pointer(ln):
    args = ln_args()
    args[1] = args[1].astype(np.float64)
    err = raises(ln, args)
    assert err.index == 1 and err.param == "gamma"
    assert "parameter 1 'gamma' (const float*)" in err.message
    assert "float32" in err.message and "float64" in err.message
    assert "astype" in err.details


@pytest.mark.parametrize("value,kind", [(1e-5, "float"), (8, "int"), (True, "bool"), (8.0, "float")])
def test_python_scalars_must_be_wrapped(ln, value, kind):
    args = ln_args()
    idx = 6 if kind == "float" else 5
    args[idx] = value
    err = raises(ln, args)
    assert err.index == idx
    assert f"Python {kind}" in err.message
    want = "float32" if idx == 6 else "int32"
    assert f"numpy.{want}(" in err.message and f"numpy.{want}(" in err.details


def test_numpy_scalar_of_wrong_dtype(ln):
    args = ln_args()
    args[6] = np.float64(1e-5)
    err = raises(ln, args)
    assert err.param == "eps" and "expected numpy.float32, got numpy.float64" in err.message
    args = ln_args()
    args[4] = np.int64(4)
    assert raises(ln, args).param == "M"


def test_array_for_scalar_and_scalar_for_pointer(ln):
    args = ln_args()
    args[5] = np.array([8], np.int32)
    assert "scalar parameter" in raises(ln, args).message
    args = ln_args()
    args[0] = np.float32(1.0)
    assert "needs an array" in raises(ln, args).message
    args = ln_args()
    args[0] = [1.0, 2.0]
    assert "needs an array" in raises(ln, args).message


def test_non_contiguous_array(ln):
    args = ln_args(M=8, N=8)
    args[0] = args[0].T
    err = raises(ln, args)
    assert err.param == "input" and "C-contiguous" in err.message
    args = ln_args()
    args[1] = np.ones(16, np.float32)[::2]
    assert raises(ln, args).param == "gamma"


def test_numpy_array_on_cupy_backend_is_wrong_device(ln):
    err = raises(ln, ln_args(), backend="cupy")
    assert err.index == 0 and "kernels.asarray" in err.message
    assert "kernels.asarray" in err.details


def test_device_array_on_cpu_backend_is_wrong_device(ln):
    cupy = pytest.importorskip("cupy")
    try:
        d = cupy.zeros((4, 8), np.float32)
    except Exception:
        pytest.skip("cupy installed but no GPU")
    args = ln_args()
    args[0] = d
    assert "cupy array" in raises(ln, args).message


def test_read_only_array_for_non_const_pointer(ln):
    args = ln_args()
    args[3].flags.writeable = False
    err = raises(ln, args)
    assert err.param == "output" and "read-only" in err.message
    ok = ln_args()
    ok[0].flags.writeable = False  # const pointer: reading a read-only array is fine
    check_args("k", ln, ok, "cpu")


def test_vector_pointer_alignment_and_size(kernels_):
    p = kernels_["vec4"]
    buf = np.zeros(17, np.float32)
    good = [buf[:16], np.zeros(16, np.float32), np.int32(4)]
    check_args("vec4", p, good, "cpu")
    misaligned = [buf[1:17], np.zeros(16, np.float32), np.int32(4)]
    err = raises(p, misaligned)
    assert err.index == 0 and "16-byte aligned" in err.message
    short = [np.zeros(16, np.float32), np.zeros(15, np.float32), np.int32(4)]
    err = raises(p, short)
    assert err.index == 1 and "4 per vector" in err.message
    wrong = [np.zeros(16, np.float64), np.zeros(16, np.float32), np.int32(4)]
    assert "float32" in raises(p, wrong).message


def test_half_and_bfloat16(kernels_):
    p = kernels_["halves"]
    bf16 = p[1].dtype
    good = [np.zeros(4, np.float16), np.zeros(4, np.uint16), np.float16(1), np.uint64(4)]
    check_args("halves", p, good, "cpu")
    good[1] = np.zeros(4, bf16)
    check_args("halves", p, good, "cpu")
    bad = [np.zeros(4, np.float32), np.zeros(4, np.uint16), np.float16(1), np.uint64(4)]
    assert "float16" in raises(p, bad).message
    bad = [np.zeros(4, np.float16), np.zeros(4, np.uint16), np.float32(1), np.uint64(4)]
    assert raises(p, bad).param == "s"
    bad = [np.zeros(4, np.float16), np.zeros(4, np.uint16), 1.0, np.uint64(4)]
    assert "numpy.float16(1.0)" in raises(p, bad).message


def test_void_pointer_takes_any_array_and_other_scalars(kernels_):
    p = kernels_["raw"]
    check_args("raw", p, [np.zeros(3, np.int16), np.float64(1), np.bool_(True), np.uint64(3)], "cpu")
    err = raises(p, [np.zeros(3), np.float64(1), np.int32(1), np.uint64(3)])
    assert err.param == "flag" and "numpy.bool" in err.message


def test_python_scalars_cupy_passes_exactly_are_accepted_and_converted(kernels_):
    # cupy passes bool as bool, int as 8-byte long long, float as double: exact for these
    out = check_args("raw", kernels_["raw"], (np.zeros(3), 1.5, True, 3), "cpu")
    assert type(out[1]) is np.float64 and type(out[2]) is np.bool_ and type(out[3]) is np.uint64
    err = raises(kernels_["raw"], [np.zeros(3), 1.5, True, -3])
    assert err.param == "n" and "numpy.uint64(-3)" in err.message
    err = raises(kernels_["raw"], [np.zeros(3), 1, True, 3])
    assert err.param == "d" and "8-byte long long" in err.message


# --------------------------------------------------------------------------- launch configuration

def test_launch_normalises_dims():
    assert check_launch(4, 256) == ((4, 1, 1), (256, 1, 1), 0)
    assert check_launch((4, 2), (32, 8), 1024) == ((4, 2, 1), (32, 8, 1), 1024)
    assert check_launch([np.int64(3)], (np.int32(2), 2, 2)) == ((3, 1, 1), (2, 2, 2), 0)


@pytest.mark.parametrize("grid,block,shared,needle", [
    (1, 1025, 0, "1024"),
    (1, (32, 33), 0, "1056 threads"),
    (1, (1, 1, 65), 0, "block.z = 65"),
    ((1, 65536), 32, 0, "grid.y = 65536"),
    ((1, 1, 70000), 32, 0, "grid.z = 70000"),
    (0, 32, 0, "grid.x = 0"),
    (4, (32, 0), 0, "block.y = 0"),
    (-1, 32, 0, "grid.x = -1"),
    (4, 32, MAX_DYNAMIC_SHARED + 1, "227 KiB"),
    (4, 32, -4, "negative"),
    (4.0, 32, 0, "int or a tuple"),
    ((1, 2, 3, 4), 32, 0, "int or a tuple"),
    (4, (32.0,), 0, "int or a tuple"),
    (4, 32, 1.5, "shared_mem must be an int"),
])
def test_launch_errors(grid, block, shared, needle):
    with pytest.raises(LaunchError) as info:
        check_launch(grid, block, shared, kernel="k")
    assert needle in str(info.value)
    assert info.value.kernel == "k" and info.value.details


def test_launch_limits_are_inclusive():
    check_launch((2 ** 31 - 1, 65535, 65535), (1024, 1, 1), MAX_DYNAMIC_SHARED)
    check_launch(1, (1, 16, 64))


def test_vector_by_value_needs_structured_scalar(kernels_):
    p = kernels_["byval"]
    assert not p[0].is_pointer and p[0].size == 16
    err = raises(p, [np.float32(1), np.int32(1)])
    assert err.param == "v" and "16-byte numpy structured scalar" in err.message
    rec = np.array((1, 2, 3, 4), dtype=[(c, "<f4") for c in "xyzw"])[()]
    check_args("byval", p, [rec, np.int32(1)], "cpu")
