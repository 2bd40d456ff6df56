"""Device code built for the CPU emulator links against the emulator runtime and the math library only:
a host library call is a compile error naming the symbol (as the GPU link fails), and inline assembly that
makes a system call is refused (issue 19)."""
from __future__ import annotations

import numpy as np
import pytest

import kernels
from kernels import errors

SYSTEM = r'''
extern "C" __device__ int system(const char*);
extern "C" __global__ void k(float* y) {
    system("touch /tmp/kernels-linkage-pwned");
    y[threadIdx.x] = 1.0f;
}
'''

SYSCALL = r'''
extern "C" __global__ void k(float* y) {
    asm volatile("syscall");
    y[threadIdx.x] = 1.0f;
}
'''

MATH = r'''
extern "C" __global__ void k(float* y) {
    y[threadIdx.x] = expf(1.0f) + sqrtf(4.0f) + fmaxf(-1.0f, 0.0f) + __expf(0.0f);
}
'''


def _run(src):
    y = kernels.asarray(np.zeros(4, np.float32))
    kernels.RawKernel(src, "k")((1,), (4,), (y,))
    return kernels.asnumpy(y)


@pytest.fixture(autouse=True)
def _cpu(monkeypatch, tmp_path):
    monkeypatch.setenv("KERNELS_BACKEND", "cpu")
    monkeypatch.setenv("KERNELS_CHECK", "")


def test_host_library_call_is_a_compile_error_naming_it(tmp_path):
    with pytest.raises(errors.CompileError) as exc:
        _run(SYSTEM)
    assert "system" in str(exc.value) and exc.value.line == 4
    assert not (tmp_path / "kernels-linkage-pwned").exists()


@pytest.mark.skipif(__import__("platform").machine() != "x86_64", reason="x86-64 inline assembly")
def test_inline_syscall_is_refused():
    with pytest.raises(errors.CompileError, match="system call"):
        _run(SYSCALL)


def test_math_library_still_links():
    assert np.allclose(_run(MATH), np.exp(1) + 2 + 0 + 1, rtol=1e-5)
