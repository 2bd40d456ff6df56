"""The per-submission sandbox: what a sandboxed process can see, reach, hold and leave behind, and what the
self-check and instructor grading do where no sandbox can be made."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from autograder import sandbox
from autograder.sandbox import core

needs_bwrap = pytest.mark.skipif(not sandbox.available(), reason=f"no sandbox here: {sandbox.unavailable_reason()}")
PY = sys.executable


def run(code, tmp_path, **limits):
    work = core.prepare_workdir(tmp_path)
    out = sandbox.run([PY, "-c", code], work, limits=core.Limits(**{"wall_s": 60, **limits}), mode="require")
    return out, work


@needs_bwrap
def test_private_dir_only_and_no_network(tmp_path):
    secret = tmp_path / "secret.txt"          # stands for solutions/, the rubric, the gradebook, other students
    secret.write_text("solution")
    code = f"""
import os, socket, json
seen = {{}}
seen['secret'] = os.path.exists({str(secret)!r})
seen['repo_rubric'] = os.path.exists({str(core.python_roots()[0])!r} + '/../grading_rubric.yaml')
seen['home'] = os.path.exists('/root/.ssh') or os.path.exists('/root/.cache/kernels')
seen['cwd'] = os.getcwd()
open('mine.txt', 'w').write('x')
try:
    open('/usr/lib/x', 'w')
    seen['usr_writable'] = True
except OSError:
    seen['usr_writable'] = False
s = socket.socket(); s.settimeout(2)
seen['net'] = s.connect_ex(('1.1.1.1', 53))
s = socket.socket(); s.settimeout(2)
seen['host_localhost'] = s.connect_ex(('127.0.0.1', 22))
seen['uid'] = os.getuid()
print(json.dumps(seen))
"""
    out, work = run(code, tmp_path)
    import json
    seen = json.loads(out.stdout)
    assert out.sandboxed and not seen["secret"] and not seen["repo_rubric"] and not seen["home"]
    assert seen["cwd"] == core.INSIDE and (work / "mine.txt").exists() and not seen["usr_writable"]
    assert seen["net"] != 0 and seen["host_localhost"] != 0
    if os.geteuid() == 0:
        assert seen["uid"] >= core.UID_BASE            # never root, a uid of its own


@needs_bwrap
def test_nothing_it_starts_outlives_it(tmp_path):
    code = "import subprocess; subprocess.Popen(['sleep', '987654']); print('started')"
    out, _ = run(code, tmp_path)
    assert out.stdout.strip() == "started"
    time.sleep(0.5)
    left = subprocess.run(["pgrep", "-f", "sleep 987654"], capture_output=True, text=True).stdout.strip()
    assert left == ""


@needs_bwrap
def test_limits_memory_processes_file_size_output_time(tmp_path):
    out, _ = run("x = bytearray(3 * 2**30); x[::4096] = b'1' * len(x[::4096])", tmp_path, memory_mb=400)
    assert out.killed == "memory" and out.rc != 0
    out, _ = run("""
import os, time
n = 0
try:
    for _ in range(1000):
        if os.fork() == 0:
            time.sleep(3); os._exit(0)
        n += 1
except OSError:
    pass
print(n)
""", tmp_path, procs=20)
    assert int(out.stdout.strip().splitlines()[0]) < 25
    out, _ = run("open('big', 'wb').write(b'0' * (20 * 2**20))", tmp_path, file_mb=5)
    assert out.rc != 0                            # SIGXFSZ / EFBIG past 5 MB
    out, _ = run("print('y' * (10 * 2**20))", tmp_path, output_kb=64)
    assert out.truncated and len(out.stdout) <= 64 * 1024
    t0 = time.monotonic()
    out, _ = run("while True: pass", tmp_path, wall_s=3)
    assert out.killed == "time" and time.monotonic() - t0 < 20


def _no_bwrap(monkeypatch):
    monkeypatch.setattr(core, "_bwrap", lambda: None)
    monkeypatch.setattr(core, "_probe", {})


def test_without_bubblewrap_the_self_check_runs_and_says_so(monkeypatch, tmp_path):
    _no_bwrap(monkeypatch)
    assert not sandbox.available() and "bubblewrap" in sandbox.unavailable_reason()
    work = core.prepare_workdir(tmp_path)
    res = sandbox.run([PY, "-c", "print('ran')"], work, limits=core.Limits(wall_s=30), mode="auto")
    assert res.stdout.strip() == "ran" and not res.sandboxed
    with pytest.raises(sandbox.SandboxUnavailable, match="bubblewrap"):
        sandbox.run([PY, "-c", "print(1)"], work, mode="require")
    from pathlib import Path

    from autograder import check
    lesson = Path(__file__).resolve().parents[2] / "lessons" / "05_layernorm.ipynb"
    v = check.grade_notebook(lesson, seed=1)              # what L.self_check() runs
    assert any("没有可用的沙箱" in n for n in v.notes) and v.score == 0


def test_without_bubblewrap_instructor_grading_refuses_unless_no_sandbox(monkeypatch, tmp_path, capsys):
    _no_bwrap(monkeypatch)
    from autograder import batch
    rc = batch.main([str(tmp_path), "--lesson", "05_layernorm", "--out", str(tmp_path / "o"), "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and "--no-sandbox" in err and "bubblewrap" in err


@pytest.mark.parametrize("mode", ["require", "off"])
def test_a_course_run_from_pythonpath_grades_in_a_child(tmp_path, monkeypatch, mode):
    """A checkout run through PYTHONPATH (not pip-installed, e.g. a GPU box): the judge's child processes import
    autograder, kernels and the grader's PYTHONPATH packages; a sandboxed child still sees none of the checkout
    beyond the two packages (the checkout root on PYTHONPATH is not bound whole)."""
    if mode == "require" and not sandbox.available():
        pytest.skip(f"no sandbox here: {sandbox.unavailable_reason()}")
    repo = str(Path(sandbox.__file__).resolve().parents[2])        # the checkout (autograder/sandbox/__init__.py)
    site = tmp_path / "site"
    site.mkdir()
    (site / "grader_dep.py").write_text("X = 42\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([repo, str(site)]))
    work = core.prepare_workdir(tmp_path)
    code = (f"import grader_dep, autograder.judge.runner, kernels, os; "
            f"print(grader_dep.X, os.path.exists({os.path.join(repo, 'grading_rubric.yaml')!r}))")
    out = sandbox.run([PY, "-c", code], work, limits=core.Limits(wall_s=60), mode=mode)
    assert out.rc == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["42", str(mode == "off")]
