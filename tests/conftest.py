"""Shared pytest configuration: markers and backend helpers."""
import os

import pytest


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU (cupy backend); skipped elsewhere")
    config.addinivalue_line("markers", "slow: executes whole notebooks or batches")
    config.addinivalue_line("markers", "browser: drives JupyterLab in headless Chromium")


def _gpu_available() -> bool:
    try:
        from kernels import _config
        return _config._gpu_available()
    except Exception:
        return False


def pytest_collection_modifyitems(config, items):
    # under pytest-xdist (`make test` runs two workers, `--dist loadgroup`): the tests of a module marked slow
    # share expensive module fixtures (a graded course, a JupyterLab server), so they stay on one worker
    for item in items:
        if "slow" in item.keywords and "xdist_group" not in item.keywords:
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
    if _gpu_available():
        return
    skip = pytest.mark.skip(reason="no CUDA GPU visible to cupy")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
