"""memcheck and racecheck run a launch on copies of its arrays. The copies are made per
allocation (kernels/cpu/memory.py): an in-place kernel (the same array passed twice) stays
in place, a view keeps its offset into its array and its address modulo 256, so a float4
load through ``x[1:]`` is misaligned in every run, as on a GPU."""
import numpy as np
import pytest

import kernels

SCALE = r'''
extern "C" __global__ void scale(float* out, const float* inp, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = inp[i] * 2.0f;
}'''

LOAD4 = r'''
extern "C" __global__ void copy4(float* out, const float* inp, int n4) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) reinterpret_cast<float4*>(out)[i] = reinterpret_cast<const float4*>(inp)[i];
}'''

CHECKS = [(), ("memcheck",), ("racecheck",), ("memcheck", "racecheck")]


@pytest.fixture(autouse=True)
def cpu(monkeypatch):
    monkeypatch.setenv("KERNELS_BACKEND", "cpu")


@pytest.mark.parametrize("checks", CHECKS, ids=lambda c: "+".join(c) or "plain")
def test_in_place_kernel_stays_in_place_under_every_check(checks):
    f = kernels.RawModule(code=SCALE).get_function("scale")
    x = np.arange(40, dtype=np.float32)
    with kernels.check(*checks):
        f((2,), (32,), (x, x, np.int32(40)))
    assert np.array_equal(x, np.arange(40, dtype=np.float32) * 2)


@pytest.mark.parametrize("checks", CHECKS, ids=lambda c: "+".join(c) or "plain")
def test_views_keep_their_offset_into_the_array(checks):
    f = kernels.RawModule(code=SCALE).get_function("scale")
    x = np.arange(41, dtype=np.float32)
    with kernels.check(*checks):
        f((1,), (32,), (x[21:], x[1:21], np.int32(20)))   # two views of one array: x[21 + i] = 2 x[1 + i]
    assert np.array_equal(x[21:], np.arange(1, 21, dtype=np.float32) * 2)
    assert np.array_equal(x[:21], np.arange(21, dtype=np.float32))


def test_overlapping_views_race_is_reported():
    # x[i + 1] = 2 x[i]: thread i reads x[i] while thread i - 1 writes it
    f = kernels.RawModule(code=SCALE).get_function("scale")
    x = np.arange(41, dtype=np.float32)
    with kernels.check("racecheck"), pytest.raises(kernels.RaceError):
        f((2,), (32,), (x[1:], x[:-1], np.int32(40)))


@pytest.mark.parametrize("checks", [("memcheck",), ("memcheck", "racecheck")], ids="+".join)
def test_misaligned_view_stays_misaligned_under_memcheck(checks):
    f = kernels.RawModule(code=LOAD4).get_function("copy4")
    x = np.arange(33, dtype=np.float32)
    y = np.zeros(33, np.float32)
    with kernels.check(*checks), pytest.raises(kernels.OutOfBoundsError) as ei:
        f((1,), (32,), (y[1:], x[1:], np.int32(8)))
    assert "misaligned" in ei.value.message


@pytest.mark.parametrize("checks", CHECKS, ids=lambda c: "+".join(c) or "plain")
def test_aligned_view_passes(checks):
    f = kernels.RawModule(code=LOAD4).get_function("copy4")
    x = np.arange(36, dtype=np.float32)
    y = np.zeros(36, np.float32)
    with kernels.check(*checks):
        f((1,), (32,), (y[4:], x[4:], np.int32(8)))
    assert np.array_equal(y[4:], x[4:]) and not y[:4].any()


def test_read_before_a_view_inside_its_array_is_legal_but_before_the_array_is_not():
    src = r'''
extern "C" __global__ void prev(float* out, const float* inp, int n) {
    int i = threadIdx.x;
    if (i < n) out[i] = inp[i - 1];
}'''
    f = kernels.RawModule(code=src).get_function("prev")
    x = np.arange(9, dtype=np.float32)
    y = np.zeros(8, np.float32)
    with kernels.check("memcheck"):
        f((1,), (32,), (y, x[1:], np.int32(8)))        # inp[-1] is x[0]: inside x's allocation
    assert np.array_equal(y, x[:-1])
    for base in (np.arange(8, dtype=np.float32), np.arange(9, dtype=np.float32)[1:].copy()):
        with kernels.check("memcheck"), pytest.raises(kernels.OutOfBoundsError) as ei:
            f((1,), (32,), (y, base, np.int32(8)))     # inp[-1] is before the allocation
        assert "'inp'" in ei.value.message and "before the start" in ei.value.message, ei.value.message
