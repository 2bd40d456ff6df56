"""Fixtures for the runtime conformance/diagnostic suites: run the same kernel
on every available backend (CPU emulator always; cupy when a GPU is visible)."""
import pytest

from kernel_launch import launch


@pytest.fixture(params=["cpu", pytest.param("cupy", marks=pytest.mark.gpu)])
def backend(request, monkeypatch):
    if request.param == "cupy":
        from kernels import _config
        if not _config._gpu_available():
            pytest.skip("no CUDA GPU visible to cupy")
    monkeypatch.setenv("KERNELS_BACKEND", request.param)
    return request.param


@pytest.fixture
def cpu(monkeypatch):
    """Diagnostics that only the emulator produces."""
    monkeypatch.setenv("KERNELS_BACKEND", "cpu")
    return "cpu"


@pytest.fixture
def run(backend):
    return launch
