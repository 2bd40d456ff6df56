"""An array passed twice to one launch (an in-place kernel: y is x) keeps its aliasing in racecheck's
re-runs: an element-wise in-place kernel is race-free, a kernel that reads a neighbour another thread
overwrites in place is still reported."""
import numpy as np
import pytest

import kernels

SRC = r"""
extern "C" __global__ void scale_inplace(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];          // reads its own element before writing it
}
extern "C" __global__ void shift_inplace(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i + 1 < n) y[i] = x[i + 1];          // reads the element thread i + 1 overwrites
}
"""


@pytest.fixture(autouse=True)
def cpu_backend(monkeypatch):
    monkeypatch.setenv("KERNELS_BACKEND", "cpu")


def test_elementwise_in_place_passes_racecheck():
    mod = kernels.RawModule(code=SRC)
    x = np.arange(300, dtype=np.float32)
    d = kernels.asarray(x.copy())
    with kernels.check("memcheck", "racecheck"):
        mod.get_function("scale_inplace")((3,), (128,), (d, d, np.int32(300)))
    np.testing.assert_array_equal(kernels.asnumpy(d), 2 * x)


def test_in_place_neighbour_read_is_still_a_race():
    mod = kernels.RawModule(code=SRC)
    d = kernels.asarray(np.arange(300, dtype=np.float32))
    with pytest.raises(kernels.RaceError):
        with kernels.check("racecheck"):
            mod.get_function("shift_inplace")((3,), (128,), (d, d, np.int32(300)))
