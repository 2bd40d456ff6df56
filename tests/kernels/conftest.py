"""Fixtures for the runtime conformance/diagnostic suites: run the same kernel
on every available backend (CPU emulator always; cupy when a GPU is visible)."""
import numpy as np
import pytest

import kernels


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


def launch(src, name, grid, block, args, shared_mem=0, name_expressions=None, options=()):
    """Compile `src`, launch `name` with numpy inputs and return all arguments as
    numpy (arrays copied back from the device)."""
    mod = kernels.RawModule(code=src, options=tuple(options), name_expressions=list(name_expressions or []))
    fn = mod.get_function(name)
    dev = [kernels.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
    fn(grid, block, tuple(dev), shared_mem=shared_mem)
    kernels.synchronize()
    return [kernels.asnumpy(d) if isinstance(a, np.ndarray) else a for a, d in zip(args, dev)]


@pytest.fixture
def run(backend):
    return launch
