"""A JupyterLab server and a headless Chromium (Debian's, driven by Playwright) for the browser tests."""
from __future__ import annotations

import asyncio
import contextlib
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-sync",
                 "--disable-background-networking", "--disable-component-update"]


def need_browser() -> None:
    if CHROMIUM is None:
        pytest.skip("Debian chromium is not installed (make test installs it when run as root)")
    pytest.importorskip("playwright.sync_api")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def lab_server(root: Path, env: dict, log_path: Path, *, ready: str = "/api/status", timeout_s: float = 180,
               extra_args=()):
    """Start ``jupyter lab`` serving ``root`` (no token); yields its base URL once ``ready`` answers."""
    port = free_port()
    log = open(log_path, "w")
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--allow-root", f"--port={port}",
         "--ip=127.0.0.1", "--ServerApp.token=", "--ServerApp.password=", f"--ServerApp.root_dir={root}",
         "--ServerApp.disable_check_xsrf=True", "--LabApp.news_url=",
         "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate", *extra_args],
        cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + timeout_s
        while True:
            try:
                urllib.request.urlopen(base + ready, timeout=3)
                break
            except Exception:
                if time.time() > deadline or server.poll() is not None:
                    log.flush()
                    pytest.fail(f"JupyterLab ({ready}) did not start:\n" + Path(log_path).read_text()[-3000:])
                time.sleep(0.5)
        yield base
    finally:
        server.terminate()
        try:
            server.wait(15)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


def _forget_stale_running_loop():
    """A sync test runs no coroutine, so an event loop marked as running in this thread is a leftover: library
    code an earlier test on the same xdist worker ran marked another thread's loop as this thread's. Playwright's
    sync API refuses to start under it ("using Playwright Sync API inside the asyncio loop", seen once in
    make test, depending on which modules a worker ran before)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    asyncio.events._set_running_loop(None)


@contextlib.contextmanager
def chromium():
    from playwright.sync_api import sync_playwright
    _forget_stale_running_loop()
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()
