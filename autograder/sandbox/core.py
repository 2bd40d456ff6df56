"""bubblewrap invocation, resource limits and the watchdog (see the package docstring)."""
from __future__ import annotations

import fcntl
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

MODES = ("auto", "require", "off")
INSIDE = "/sandbox"                 # the private directory as the sandboxed process sees it
UID_BASE = 61000                    # sandbox uids when the grader runs as root: UID_BASE + slot
UID_SLOTS = 256
POLL_S = 0.05
DISK_POLL_S = 0.5
TMPFS_MB = 256


class SandboxUnavailable(RuntimeError):
    """bubblewrap is missing or cannot create namespaces here; the message says why and what to do."""


@dataclass(frozen=True)
class Limits:
    wall_s: float = 120.0
    cpu_s: int = 600
    memory_mb: int = 2048               # resident memory of every process in the sandbox together
    address_space_mb: Optional[int] = None   # RLIMIT_AS as well (not where ASan runs: it reserves terabytes)
    procs: int = 64
    file_mb: int = 64                   # largest file the sandbox may write (RLIMIT_FSIZE)
    disk_mb: int = 512                  # everything in its private directory together (watched from outside)
    files: int = 20000                  # files in its private directory
    open_files: int = 512
    output_kb: int = 256                # stdout / stderr kept (the rest is dropped, ``Outcome.truncated``)


@dataclass
class Outcome:
    rc: Optional[int]                   # exit status (negative: killed by that signal); None if never started
    stdout: str = ""
    stderr: str = ""
    seconds: float = 0.0
    sandboxed: bool = False
    killed: Optional[str] = None        # "time" | "memory" | "disk" when the watchdog stopped it
    truncated: bool = False
    peak_rss_mb: float = 0.0
    notes: List[str] = field(default_factory=list)


# ----------------------------------------------------------------------------- availability

_probe: Dict[bool, Optional[str]] = {}


def _bwrap() -> Optional[str]:
    return shutil.which("bwrap") or (os.path.exists("/usr/bin/bwrap") and "/usr/bin/bwrap") or None


def _as_root() -> bool:
    return os.geteuid() == 0


def unavailable_reason() -> Optional[str]:
    """None when a sandbox can be created here, else why not (English, for logs and errors)."""
    key = _as_root()
    if key in _probe:
        return _probe[key]
    exe = _bwrap()
    if exe is None:
        _probe[key] = ("bubblewrap (bwrap) is not installed: `apt-get install bubblewrap` "
                       "(Debian/Ubuntu) or `dnf install bubblewrap`")
        return _probe[key]
    with tempfile.TemporaryDirectory(prefix="autograder-probe-") as tmp:
        os.chmod(tmp, 0o755)
        argv = _bwrap_argv(exe, Path(tmp), {}, ["/bin/true"], uid=(UID_BASE + UID_SLOTS) if key else None, ro=())
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=30)
            _probe[key] = None if proc.returncode == 0 else \
                f"bubblewrap cannot create namespaces here (exit {proc.returncode}): {proc.stderr.strip()[:300]}"
        except (OSError, subprocess.TimeoutExpired) as exc:
            _probe[key] = f"bubblewrap failed to start: {exc}"
    return _probe[key]


def available() -> bool:
    return unavailable_reason() is None


def will_isolate(mode: str) -> bool:
    """Whether ``run(..., mode=mode)`` will run sandboxed here (``require`` raises there when it cannot)."""
    return mode != "off" and available()


# ----------------------------------------------------------------------------- what the sandbox sees

def _package_dirs() -> List[str]:
    import autograder
    import kernels  # noqa: F401  (its location)
    return [str(Path(m.__file__).resolve().parent) for m in (autograder, sys.modules["kernels"])]


def _grader_pythonpath() -> List[str]:
    """The grader's own PYTHONPATH (existing directories, resolved)."""
    out = []
    for p in os.environ.get("PYTHONPATH", "").split(os.pathsep):
        if p and os.path.isdir(p) and os.path.realpath(p) not in out:
            out.append(os.path.realpath(p))
    return out


def child_pythonpath() -> str:
    """PYTHONPATH of the grader's child processes: where ``autograder`` and ``kernels`` are imported from (a
    checkout run through PYTHONPATH, not installed, has no other way in) and the grader's own PYTHONPATH."""
    out = []
    for p in [os.path.dirname(d) for d in _package_dirs()] + _grader_pythonpath():
        if p not in out:
            out.append(p)
    return os.pathsep.join(out)


def python_roots() -> List[str]:
    """Directories the interpreter and the installed packages live in (bound read-only). A PYTHONPATH entry that
    holds the course itself (a checkout: solutions/, the rubric) is never bound whole, only its two packages."""
    pkgs = _package_dirs()
    extra = [p for p in _grader_pythonpath() if not any(d == p or d.startswith(p + "/") for d in pkgs)]
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, *pkgs, *extra,
             str(Path(sys.executable).resolve().parent.parent)}
    out = []
    for r in sorted(roots, key=len):
        r = os.path.realpath(r)
        if not os.path.isdir(r) or r in ("/", "/usr") or any(r == o or r.startswith(o + "/") for o in out):
            continue
        out.append(r)
    return out


_SYSTEM = ("/usr", "/etc", "/opt/conda")     # read-only system parts (those that exist)
_TOP_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")


def _bwrap_argv(exe: str, work: Path, env: Mapping[str, str], argv: Sequence[str], uid: Optional[int],
                ro: Iterable[Tuple[str, str]], devices: Sequence[str] = ()) -> List[str]:
    a = [exe, "--die-with-parent", "--new-session", "--unshare-ipc", "--unshare-pid", "--unshare-net",
         "--unshare-uts", "--unshare-cgroup-try", "--hostname", "sandbox"]
    if uid is None:               # unprivileged: the user namespace maps us to ourselves
        a += ["--unshare-user", "--cap-drop", "ALL"]
    for p in _SYSTEM:
        if os.path.isdir(p):
            a += ["--ro-bind", p, p]
    for p in _TOP_LINKS:
        if os.path.islink(p):
            a += ["--symlink", os.readlink(p), p]
        elif os.path.isdir(p):
            a += ["--ro-bind", p, p]
    # the private /tmp and /dev/shm first: a later bind below /tmp (a grader installed under /tmp) lands on
    # top of the tmpfs instead of being hidden by it
    tmp = str(TMPFS_MB * 2**20)     # RAM-backed: sized, or writing there would hold memory the RSS watch misses
    a += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--size", tmp, "--tmpfs", "/tmp", "--perms", "1777",
          "--size", tmp, "--tmpfs", "/dev/shm"]
    made = {"/tmp", "/dev/shm", "/dev", "/proc"}

    def parents(path: str):     # bwrap would create mount points' parents 0700 (root): make them 0755
        out, p = [], os.path.dirname(path)
        while p not in ("/", "") and p not in made:
            out.append(p)
            made.add(p)
            p = os.path.dirname(p)
        return [x for d in reversed(out) for x in ("--perms", "0755", "--dir", d)]
    for r in python_roots():
        if not r.startswith("/usr/"):
            a += parents(r) + ["--ro-bind", r, r]
    a += ["--bind", str(work), INSIDE]
    for host, inside in ro:
        a += ["--ro-bind", host, inside]
    for d in devices:
        a += ["--dev-bind", d, d]
    a += ["--chdir", INSIDE, "--clearenv"]
    for k, v in env.items():
        a += ["--setenv", k, v]
    a.append("--")
    if uid is not None:           # bwrap ran as root to mount; the command runs as an ordinary host user
        setpriv = shutil.which("setpriv")
        if setpriv:
            a += [setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all",
                  "--bounding-set=-all", "--no-new-privs", "--"]
        else:
            a += [sys.executable, "-m", "autograder.sandbox.drop", str(uid), "--"]
    return a + list(argv)


# ----------------------------------------------------------------------------- uids (root only)

class _UidSlot:
    """An exclusive sandbox uid (flock), so concurrent sandboxes never share a uid and process limit."""

    def __init__(self):
        self.uid, self.fd = None, None

    def __enter__(self):
        lockdir = Path(tempfile.gettempdir()) / "autograder-uids"
        lockdir.mkdir(exist_ok=True)
        for k in range(UID_SLOTS):
            fd = os.open(lockdir / f"{UID_BASE + k}.lock", os.O_CREAT | os.O_RDWR, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue
            self.uid, self.fd = UID_BASE + k, fd
            _kill_uid(self.uid)       # a previous grader killed hard may have left something behind
            return self
        raise SandboxUnavailable(f"all {UID_SLOTS} sandbox uids are in use")

    def __exit__(self, *exc):
        if self.uid is not None:
            _kill_uid(self.uid)
        if self.fd is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)


# ----------------------------------------------------------------------------- processes

def _procs() -> Dict[int, Tuple[int, int, int]]:
    """pid -> (ppid, real uid, rss pages) of every process on the host."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat", "rb") as f:
                stat = f.read().decode("ascii", "replace")
            rest = stat[stat.rindex(")") + 2:].split()
            ppid, rss = int(rest[1]), int(rest[21])
            uid = os.stat(f"/proc/{d}").st_uid
            out[int(d)] = (ppid, uid, rss)
        except (OSError, ValueError, IndexError):
            continue
    return out


def _tree(root: int, procs) -> List[int]:
    kids: Dict[int, List[int]] = {}
    for pid, (ppid, _, _) in procs.items():
        kids.setdefault(ppid, []).append(pid)
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        if p in procs:
            out.append(p)
        todo += kids.get(p, [])
    return out


def _members(root: int, uid: Optional[int], procs) -> List[int]:
    pids = set(_tree(root, procs))
    if uid is not None:
        pids |= {p for p, (_, u, _) in procs.items() if u == uid}
    return sorted(pids)


_PAGE_MB = os.sysconf("SC_PAGE_SIZE") / 2**20


def _kill_uid(uid: int) -> None:
    for _ in range(3):
        left = [p for p, (_, u, _) in _procs().items() if u == uid]
        if not left:
            return
        for p in left:
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.05)


def _kill(proc: subprocess.Popen, uid: Optional[int]) -> None:
    procs = _procs()
    for p in _members(proc.pid, uid, procs):
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass
    if uid is not None:
        _kill_uid(uid)


def _rlimits(limits: Limits, uid: Optional[int]):
    def apply():
        def lim(what, value):
            try:
                resource.setrlimit(what, (value, value))
            except (ValueError, OSError):
                pass
        lim(resource.RLIMIT_CORE, 0)
        lim(resource.RLIMIT_CPU, int(limits.cpu_s))
        lim(resource.RLIMIT_FSIZE, int(limits.file_mb) * 2**20)
        lim(resource.RLIMIT_NOFILE, int(limits.open_files))
        if limits.address_space_mb:
            lim(resource.RLIMIT_AS, int(limits.address_space_mb) * 2**20)
        if uid is not None:      # counted per host uid: the slot's own uid holds only this sandbox
            lim(resource.RLIMIT_NPROC, int(limits.procs))
    return apply


def _nproc_headroom(limits: Limits) -> int:
    """Without a uid of its own the sandbox shares our uid's process count: allow what runs now + procs."""
    me = os.getuid()
    return sum(1 for _, (_, u, _) in _procs().items() if u == me) + int(limits.procs)


# ----------------------------------------------------------------------------- run

def gpu_devices() -> List[str]:
    """The NVIDIA device nodes a sandbox needs to run on the GPU (cupy backend)."""
    return sorted(str(p) for p in Path("/dev").glob("nvidia*"))


def prepare_workdir(parent: Optional[os.PathLike] = None, prefix: str = "sbx-") -> Path:
    """A fresh private directory (traversable by a sandbox uid; nothing else of the grader's in it)."""
    base = Path(parent) if parent else Path(tempfile.gettempdir()) / "autograder-sandboxes"
    base.mkdir(parents=True, exist_ok=True)
    os.chmod(base, 0o711)
    return Path(tempfile.mkdtemp(prefix=prefix, dir=base))


def run(argv: Sequence[str], work: os.PathLike, *, limits: Limits = Limits(), env: Optional[Mapping[str, str]] = None,
        mode: str = "auto", ro_files: Optional[Mapping[str, str]] = None, devices: Sequence[str] = ()) -> Outcome:
    """Run ``argv`` with ``work`` as its private working directory (``/sandbox`` inside).

    ``env`` is the whole environment (values may say ``{work}`` for the private directory as the process sees
    it); ``ro_files`` maps paths relative to ``work`` to host files made visible read-only there (copied when
    not sandboxed). Never raises for what the command does; raises ``SandboxUnavailable`` when
    ``mode="require"`` and no sandbox can be made.
    """
    if mode not in MODES:
        raise ValueError(f"sandbox mode {mode!r}: expected one of {', '.join(MODES)}")
    work = Path(work).resolve()
    reason = unavailable_reason() if mode != "off" else "sandbox turned off"
    if reason and mode == "require":
        raise SandboxUnavailable(reason)
    sandboxed = reason is None
    inside = INSIDE if sandboxed else str(work)
    full_env = {"PATH": os.pathsep.join([str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin", "/bin"]),
                "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "HOME": "{work}/home", "TMPDIR": "/tmp" if sandboxed else "{work}/tmp",
                "PYTHONDONTWRITEBYTECODE": "1", "PYTHONNOUSERSITE": "1", "PYTHONPATH": child_pythonpath()}
    full_env.update(env or {})
    full_env = {k: str(v).replace("{work}", inside) for k, v in full_env.items()}
    (work / "home").mkdir(exist_ok=True)
    (work / "tmp").mkdir(exist_ok=True)
    ro = []
    for rel, host in (ro_files or {}).items():
        target = work / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if sandboxed:
            target.touch(exist_ok=True)        # mount point
            ro.append((str(host), f"{INSIDE}/{rel}"))
        elif not target.exists():
            shutil.copyfile(host, target)
    started = time.monotonic()
    slot = _UidSlot() if (sandboxed and _as_root()) else None
    outdir = Path(tempfile.mkdtemp(prefix="sbx-out-"))     # grader-owned, outside the sandbox
    try:
        uid = slot.__enter__().uid if slot else None
        if uid is not None:
            for p in [work, *work.rglob("*")]:
                if not p.is_symlink():
                    os.chown(p, uid, uid)
        if sandboxed:
            cmd = _bwrap_argv(_bwrap(), work, full_env, argv, uid, ro, devices)
            child_env = {"PATH": full_env["PATH"]}
        else:
            cmd, child_env = list(argv), full_env
        preexec = _rlimits(limits, uid)
        if uid is None and not _as_root():
            headroom = _nproc_headroom(limits)
            inner = preexec

            def preexec():   # noqa: F811
                inner()
                try:
                    resource.setrlimit(resource.RLIMIT_NPROC, (headroom, headroom))
                except (ValueError, OSError):
                    pass
        out_f, err_f = open(outdir / "out", "wb"), open(outdir / "err", "wb")
        try:
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out_f, stderr=err_f, env=child_env,
                                    cwd=str(work), start_new_session=True, preexec_fn=preexec)
        except OSError as exc:
            return Outcome(rc=None, stderr=f"could not start: {exc}", sandboxed=sandboxed)
        finally:
            out_f.close()
            err_f.close()
        killed, peak, disk_at = None, 0.0, 0.0
        try:
            while proc.poll() is None:
                now = time.monotonic()
                if now - started > limits.wall_s:
                    killed = "time"
                    break
                procs = _procs()
                rss = sum(procs[p][2] for p in _members(proc.pid, uid, procs) if p in procs) * _PAGE_MB
                peak = max(peak, rss)
                if rss > limits.memory_mb:
                    killed = "memory"
                    break
                if now - disk_at > DISK_POLL_S:
                    disk_at = now
                    if _too_much_disk(work, limits):
                        killed = "disk"
                        break
                time.sleep(POLL_S)
        finally:
            if proc.poll() is None:
                _kill(proc, uid)
            elif uid is not None:
                _kill_uid(uid)       # nothing it started may outlive it (the PID namespace already saw to it)
        rc = proc.returncode
        stdout, t1 = _read_capped(outdir / "out", limits.output_kb)
        stderr, t2 = _read_capped(outdir / "err", limits.output_kb)
        return Outcome(rc=rc, stdout=stdout, stderr=stderr, seconds=round(time.monotonic() - started, 3),
                       sandboxed=sandboxed, killed=killed, truncated=t1 or t2, peak_rss_mb=round(peak, 1),
                       notes=[] if sandboxed else [reason or ""])
    finally:
        shutil.rmtree(outdir, ignore_errors=True)
        if slot is not None:
            slot.__exit__(None, None, None)


def _too_much_disk(work: Path, limits: Limits) -> bool:
    """The private directory past ``disk_mb`` or ``files`` (it is on the grader's disk; RLIMIT_FSIZE bounds one
    file only)."""
    total, count, todo = 0, 0, [str(work)]
    while todo:
        d = todo.pop()
        try:
            with os.scandir(d) as it:
                for e in it:
                    count += 1
                    if count > limits.files:
                        return True
                    try:
                        if e.is_dir(follow_symlinks=False):
                            todo.append(e.path)
                        else:
                            total += e.stat(follow_symlinks=False).st_size
                    except OSError:
                        continue
        except OSError:
            continue
    return total > limits.disk_mb * 2**20


def _read_capped(path: Path, kb: int) -> Tuple[str, bool]:
    limit = int(kb) * 1024
    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
            data = f.read(limit)
    except OSError:
        return "", False
    return data.decode("utf-8", "replace"), size > limit


def read_result(path: os.PathLike, max_mb: float) -> Optional[bytes]:
    """A file the sandbox wrote, read by the grader: None when missing, not a regular file or too large."""
    p = Path(path)
    try:
        if p.is_symlink() or not p.is_file() or p.stat().st_size > max_mb * 2**20:
            return None
        fd = os.open(p, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as f:
            return f.read(int(max_mb * 2**20) + 1)
    except OSError:
        return None


def reclaim(work: os.PathLike) -> None:
    """Delete a private directory (whatever uid owns what the sandbox left in it)."""
    shutil.rmtree(work, ignore_errors=True)
