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


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    # under pytest-xdist (`make test` runs two workers, `--dist loadgroup`): the tests of a module marked slow
    # share expensive module fixtures (a graded course, a JupyterLab server), so they stay on one worker.
    # tryfirst: xdist turns xdist_group marks into node ids in its own hook; added after it, a mark is ignored
    # and each worker builds the module's fixtures again
    for item in items:
        if "slow" in item.keywords and "xdist_group" not in item.keywords:
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
    if _gpu_available():
        return
    skip = pytest.mark.skip(reason="no CUDA GPU visible to cupy")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


_LOST_GROUPS = set()


def pytest_collection_finish(session):
    # pytest 9.2 made node ids structured and xdist 3.8 still groups by rewriting them (pytest-xdist#1386):
    # the groups vanish silently and every slow module fixture is built once per worker (minutes of make test).
    # pyproject pins pytest below 9.2; should an upgrade lose the groups again, the grouped tests fail saying so.
    if os.environ.get("PYTEST_XDIST_WORKER") and session.config.getoption("loadgroup", False):
        _LOST_GROUPS.update(i.nodeid for i in session.items
                            if i.get_closest_marker("xdist_group") and "@" not in i.nodeid)


def pytest_runtest_setup(item):
    if item.nodeid in _LOST_GROUPS:
        pytest.fail("pytest-xdist --dist loadgroup lost its groups: install the pytest version pyproject.toml "
                    "pins (pytest-xdist#1386)", pytrace=False)
