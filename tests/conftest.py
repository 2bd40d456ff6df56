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
    if _gpu_available():
        return
    skip = pytest.mark.skip(reason="no CUDA GPU visible to cupy")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
