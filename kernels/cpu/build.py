"""Host-compiler builds for the CPU emulator: source rewrite, g++ invocation,
content-addressed cache with atomic publication and a cross-process lock."""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Iterable, List, Optional, Sequence, Tuple

from ..errors import CompileError
from . import isolate

HERE = Path(__file__).resolve().parent
INCLUDE_DIR = HERE / "include"
RUNTIME_DIR = HERE / "runtime"
USER_FILE = "kernel.cu"          # name user diagnostics and debug info refer to
BUILD_FORMAT = "emu-build-6"     # bump when the generated code changes shape

CXX = os.environ.get("KERNELS_CXX", "g++")
BASE_FLAGS = ["-std=c++17", "-g", "-gdwarf-4", "-w", "-fPIC", "-fno-strict-aliasing", "-ffp-contract=off",
              "-fno-math-errno", "-fno-finite-loops", "-fno-gnu-unique", "-pthread"]
# -fno-gnu-unique: a template kernel's __shared__ variables are STB_GNU_UNIQUE symbols by default, which the
# dynamic loader binds to the first module that defines them: two builds of one kernel (the plain and the
# instrumented one, or a student's edited kernel with a bigger tile) would share the first one's storage
# -fno-finite-loops: a spin loop must spin (and time out) as on the GPU, not be deleted as C++ allows
NATIVE_FLAGS = ["-O2"]
# racecheck: the compiler's ThreadSanitizer instrumentation calls our own hooks
# (runtime/racecheck_shim.cpp); libtsan is never linked.
# The same instrumented build runs lanes in lockstep (min-PC order between a warp's parked lanes): blocks are
# kept in source order so the lanes behind in the program have the lower addresses.
RACECHECK_FLAGS = ["-O1", "-DEMU_RACECHECK", "-fsanitize=thread", "--param=tsan-instrument-func-entry-exit=0",
                   "-fno-reorder-blocks", "-fno-reorder-blocks-and-partition", "-fno-tree-sra"]
MEMCHECK_FLAGS = ["-O1", "-fno-omit-frame-pointer", "-DEMU_ASAN",
                  "-fsanitize=address,alignment,null", "-fno-sanitize-recover=all"]


def cache_dir() -> Path:
    root = os.environ.get("KERNELS_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "kernels")
    path = Path(root) / "cpu"
    path.mkdir(parents=True, exist_ok=True)
    return path


_runtime_version = None


def runtime_version() -> str:
    """Hash of every header and runtime source plus the compiler identity."""
    global _runtime_version
    if _runtime_version is None:
        h = hashlib.sha256(BUILD_FORMAT.encode())
        for root in (INCLUDE_DIR, RUNTIME_DIR):
            for p in sorted(root.rglob("*")):
                if p.is_file():
                    h.update(str(p.relative_to(HERE)).encode())
                    h.update(p.read_bytes())
        h.update(" ".join(BASE_FLAGS + NATIVE_FLAGS + MEMCHECK_FLAGS + RACECHECK_FLAGS).encode())
        try:
            h.update(subprocess.run([CXX, "--version"], capture_output=True, text=True).stdout.encode())
        except OSError:
            pass
        _runtime_version = h.hexdigest()[:16]
    return _runtime_version


# --- source rewrite (line count preserved) -------------------------------------

# alignment arguments may be expressions with one level of parentheses: __align__(sizeof(T))
_ALIGN_ARG = r"\s*\((?:[^()]|\([^()]*\))*\)\s*"
_EXTERN_SHARED = re.compile(
    r"extern\s+__shared__\s+((?:__align__" + _ALIGN_ARG + r"|alignas" + _ALIGN_ARG + r")*)"
    r"([A-Za-z_][\w:<>,\s]*?[\w>])\s*((?:__align__" + _ALIGN_ARG + r"|alignas" + _ALIGN_ARG + r")*)"
    r"([A-Za-z_]\w*)\s*\[\s*\]\s*;")
_STATIC_SHARED = re.compile(r"\bstatic(\s+)__shared__\b|\b__shared__(\s+)static\b")
_SHARED_ALIGNAS = re.compile(r"\b__shared__\s+(alignas" + _ALIGN_ARG + r")")
# `extern float __shared__ smem[];` (qualifier after the type, as in NVIDIA's threadFenceReduction sample)
_EXTERN_SHARED_LATE = re.compile(
    r"extern\s+([A-Za-z_][\w:<>,\s]*?[\w>])\s+__shared__\s+((?:__align__" + _ALIGN_ARG + r"|alignas" + _ALIGN_ARG +
    r")*)([A-Za-z_]\w*)\s*\[\s*\]\s*;")


def rewrite_source(code: str) -> str:
    """CUDA-only constructs g++ cannot take, rewritten on the same lines."""
    def extern_shared(m: re.Match) -> str:
        ctype, name = m.group(2).strip(), m.group(4)
        newlines = m.group(0).count("\n")
        return (f"static {ctype}* const {name} = reinterpret_cast<{ctype}*>(::emu::dyn_smem);"
                + "\n" * newlines)
    code = _EXTERN_SHARED.sub(extern_shared, code)

    def extern_shared_late(m: re.Match) -> str:
        ctype, name = m.group(1).strip(), m.group(3)
        return (f"static {ctype}* const {name} = reinterpret_cast<{ctype}*>(::emu::dyn_smem);"
                + "\n" * m.group(0).count("\n"))
    code = _EXTERN_SHARED_LATE.sub(extern_shared_late, code)
    # `__shared__ alignas(16) float t[..];`: once __shared__ is `static`, C++ wants alignas in front of it
    code = _SHARED_ALIGNAS.sub(lambda m: m.group(1).strip() + " __shared__ ", code)
    code = _STATIC_SHARED.sub(lambda m: "__shared__" + (m.group(1) or m.group(2)), code)
    return code


def entry_stubs(callables: Sequence[str]) -> str:
    lines = ['', '#line 1 "<emu-entries>"']
    for i, expr in enumerate(callables):
        # parameter names no kernel is called (a kernel named `a` or `c` must still resolve)
        lines.append(f'extern "C" int emu_entry_{i}(const emu_launch_cfg* emu_cfg_, void** emu_args_, '
                     f'emu_result* emu_res_) {{ return ::emu::launch(&({expr}), emu_cfg_, emu_args_, emu_res_); }}')
        lines.append(f'extern "C" int emu_arity_{i}() {{ return ::emu::arity(&({expr})); }}')
    table = ", ".join(f"emu_entry_{i}" for i in range(len(callables)))
    lines.append(f'extern "C" int emu_num_entries = {len(callables)};')
    lines.append('extern "C" int (*const emu_entry_table[])(const emu_launch_cfg*, void**, emu_result*) = '
                 f'{{ {table or "nullptr"} }};')
    return "\n".join(lines) + "\n"


def translation_unit(code: str, callables: Sequence[str]) -> str:
    return f'#line 1 "{USER_FILE}"\n' + rewrite_source(code) + "\n" + entry_stubs(callables)


_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"\n]+)[>"]', re.M)


def _included_headers(code: str, flags: Sequence[str]) -> List[str]:
    """The <...> headers the user code includes, directly or through its own "..." headers (found on its -I
    paths), in order of first appearance."""
    dirs = [f[2:] for f in flags if f.startswith("-I")]
    found: List[str] = []
    seen: set = set()

    def scan(text: str, depth: int) -> None:
        for m in _INCLUDE.finditer(text):
            kind, name = m.group(1), m.group(2).strip()
            if kind == "<":
                if name not in found:
                    found.append(name)
                continue
            for d in dirs:
                p = Path(d) / name
                if p.is_file() and str(p) not in seen and depth < 8:
                    seen.add(str(p))
                    try:
                        scan(p.read_text(errors="replace"), depth + 1)
                    except OSError:
                        pass
                    break
    scan(code, 0)
    return found


def memcheck_translation_unit(code: str, callables: Sequence[str], flags: Sequence[str]) -> str:
    """The memcheck build's TU: the user code inside an anonymous namespace.

    A template kernel's (or template __device__ function's) `__shared__` array is a function-local static of a
    template instantiation: a COMDAT object, which GCC's AddressSanitizer never pads with redzones (the linker may
    pick another TU's copy), so `sh[threadIdx.x]` past the end of a `__shared__ MD sh[8]` in `k<256>` went
    unreported (LeetCUDA's online_safe_softmax_f32_per_token_kernel, which faults on the H200). Inside an
    anonymous namespace every instantiation has internal linkage and its statics are ordinary, padded objects.
    The headers the code includes are included first, outside the namespace (their guards make the user's
    own #include lines no-ops), so library declarations stay where they belong. Line numbers are unchanged."""
    pre = "".join(f"#include <{h}>\n" for h in _included_headers(code, flags))
    return (pre + "namespace {\n" + f'#line 1 "{USER_FILE}"\n' + rewrite_source(code)
            + "\n}  // namespace (emu memcheck)\n" + entry_stubs(callables))


_ARCH = re.compile(r"^(?:-arch|--gpu-architecture)[= ]?(?:compute_|sm_|lto_)(\d+)[a-z]?$")


def cuda_arch(options: Iterable[str] = ()) -> int:
    """__CUDA_ARCH__ of the course's GPU backend: cupy compiles for the device it runs on (it appends the device's
    -arch after the user's, and NVRTC takes the last: `-arch=compute_80` still gives 900 on the H200, measured),
    and the front end (kernels.nvrtc.DEFAULT_ARCH) targets that device, compute_90."""
    from ..nvrtc import DEFAULT_ARCH
    return int(_ARCH.match(DEFAULT_ARCH).group(1)) * 10


def user_flags(options: Iterable[str]) -> List[str]:
    """Pass through the NVRTC options that mean the same to g++ (macros, include dirs), and
    __CUDA_ARCH__ equal to the architecture NVRTC targets."""
    opts = list(options or ())
    out: List[str] = [f"-D__CUDA_ARCH__={cuda_arch(opts)}"]
    i = 0
    while i < len(opts):
        o = str(opts[i])
        if o in ("-D", "--define-macro", "-I", "--include-path") and i + 1 < len(opts):
            out.append(("-D" if o in ("-D", "--define-macro") else "-I") + str(opts[i + 1]))
            i += 2
            continue
        if o.startswith("--define-macro="):
            out.append("-D" + o.split("=", 1)[1])
        elif o.startswith("--include-path="):
            out.append("-I" + o.split("=", 1)[1])
        elif o.startswith("-D") or o.startswith("-I"):
            out.append(o)
        i += 1
    return out


# --- compiling -------------------------------------------------------------------

_DIAG = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+):(?:(?P<col>\d+):)?\s*(?P<sev>fatal error|error|warning|note):\s*(?P<msg>.*)$",
                   re.M)


def parse_diagnostics(log: str) -> List[Tuple[int, str, str]]:
    out = []
    for m in _DIAG.finditer(log):
        if os.path.basename(m.group("file")) == USER_FILE and m.group("sev") != "note":
            sev = "error" if "error" in m.group("sev") else "warning"
            out.append((int(m.group("line")), sev, m.group("msg").strip()))
    return out


def _run_compiler(cmd: List[str], cwd: str, user_code: str) -> None:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        log = (proc.stdout + proc.stderr).strip()
        diags = parse_diagnostics(log)
        first = next((d for d in diags if d[1] == "error"), None)
        lines = user_code.splitlines()
        line = first[0] if first else None
        src = lines[line - 1] if line and 0 < line <= len(lines) else None
        if first is None:
            m = re.search(r"error: (.*)", log)
            detail = m.group(1).strip() if m else "see log"
        else:
            detail = first[2]
        msg = f"the CPU emulator's host compiler rejected the kernel: {detail}"
        raise CompileError(msg, log=log, diagnostics=diags, line=line, source_line=src)


class _Lock:
    """flock-based lock so concurrent processes build each artefact once."""

    def __init__(self, path: Path):
        self.path = path

    def __enter__(self):
        self.fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)


def _publish(tmp: Path, final: Path) -> None:
    os.replace(tmp, final)   # atomic on one file system


def runtime_objects(mode: str) -> List[Path]:
    """The runtime compiled once per (runtime version, mode) and reused by every module."""
    d = cache_dir()
    flags = MEMCHECK_FLAGS if mode == "memcheck" else NATIVE_FLAGS
    objs = []
    sources = ["runtime.cpp", "fiber_switch.S"] + (["racecheck_shim.cpp"] if mode == "racecheck" else [])
    for src in sources:
        flavour = "memcheck" if mode == "memcheck" else "native"
        out = d / f"rt-{runtime_version()}-{flavour}-{src.split('.')[0]}.o"
        objs.append(out)
        if out.exists():
            continue
        with _Lock(d / (out.name + ".lock")):
            if out.exists():
                continue
            with tempfile.TemporaryDirectory(dir=d) as tmp:
                tmp_out = Path(tmp) / out.name
                cmd = [CXX, *BASE_FLAGS, *flags, "-I", str(INCLUDE_DIR), "-c", str(RUNTIME_DIR / src),
                       "-o", str(tmp_out)]
                proc = subprocess.run(cmd, capture_output=True, text=True)
                if proc.returncode != 0:
                    raise RuntimeError(f"building the emulator runtime failed:\n{proc.stdout}{proc.stderr}")
                _publish(tmp_out, out)
    return objs


_REQUIRED = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+):(?P<col>\d+):\s+required from")
# the assembler's messages: inline PTX (`asm("mov.u32 %0, %%laneid;")`) reaches it as x86 assembly
_ASM_ERROR = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+): Error: (?P<msg>.*)$")
MAX_ISOLATION_ROUNDS = 6


def user_errors(log: str) -> List[Tuple[int, int, str]]:
    """(line, column, message) of every error against the user's code; an error inside the emulator's
    headers counts at the user's line that instantiated it ("required from here")."""
    out: List[Tuple[int, int, str]] = []
    context: Optional[Tuple[int, int]] = None
    for row in log.splitlines():
        a = _ASM_ERROR.match(row)
        if a and os.path.basename(a.group("file")) == USER_FILE:
            out.append((int(a.group("line")), 1, "inline PTX assembly (asm): " + a.group("msg").strip()))
            continue
        r = _REQUIRED.match(row)
        if r and os.path.basename(r.group("file")) == USER_FILE:
            context = (int(r.group("line")), int(r.group("col")))
            continue
        m = _DIAG.match(row)
        if not m or "error" not in m.group("sev"):
            continue
        if os.path.basename(m.group("file")) == USER_FILE:
            out.append((int(m.group("line")), int(m.group("col") or 1), m.group("msg").strip()))
        elif context is not None:
            out.append((context[0], context[1], m.group("msg").strip()))
        context = None
    return out


def _compile(mode: str, tmp: str, tu: str, user_code: str, flags: List[str], objs: List[Path], out: Path) -> None:
    src = Path(tmp) / "module.cpp"
    src.write_text(tu)
    common = ["-I", str(INCLUDE_DIR), "-include", str(INCLUDE_DIR / "emu.h")]
    if mode == "native":
        cmd = [CXX, *BASE_FLAGS, *NATIVE_FLAGS, "-shared", *flags, *common, str(src), *map(str, objs), "-o", str(out)]
    elif mode == "racecheck":
        obj = Path(tmp) / "module.o"
        _run_compiler([CXX, *BASE_FLAGS, *RACECHECK_FLAGS, *flags, *common, "-c", str(src), "-o", str(obj)], tmp,
                      user_code)
        cmd = [CXX, "-shared", "-pthread", str(obj), *map(str, objs), "-o", str(out)]
    else:
        cmd = [CXX, *BASE_FLAGS, *MEMCHECK_FLAGS, *flags, *common, str(src), str(RUNTIME_DIR / "memcheck_main.cpp"),
               *map(str, objs), "-o", str(out)]
    _run_compiler(cmd, tmp, user_code)


def build(code: str, options: Sequence[str], callables: Sequence[str], mode: str) -> Path:
    """Build (or fetch from the cache) the module: a shared library (mode "native"), the instrumented
    library (mode "racecheck": racecheck, lockstep, memory counters) or the memcheck runner executable.

    Functions the host compiler rejects are stubbed (kernels.cpu.isolate) so the module's other kernels
    still build; ``stubbed(path)`` lists them."""
    tu = translation_unit(code, callables)
    flags = user_flags(options)
    key = hashlib.sha256("\0".join([runtime_version(), mode, tu, *flags]).encode()).hexdigest()[:24]
    d = cache_dir()
    out = d / {"native": f"mod-{key}.so", "racecheck": f"race-{key}.so", "memcheck": f"memcheck-{key}.bin"}[mode]
    if out.exists():
        return out
    objs = runtime_objects(mode)
    with _Lock(d / (out.name + ".lock")):
        if out.exists():
            return out
        with tempfile.TemporaryDirectory(dir=d) as tmp:
            tmp_out = Path(tmp) / out.name
            src, stubs = code, {}
            wrapped = mode == "memcheck"
            round_ = 0
            while True:
                try:
                    unit = (memcheck_translation_unit(src, callables, flags) if wrapped
                            else translation_unit(src, callables))
                    _compile(mode, tmp, unit, code, flags, objs, tmp_out)
                    break
                except CompileError as exc:
                    errs = user_errors(exc.log)
                    new, done, outside = isolate.stub(src, errs) if errs else (src, {}, [])
                    if outside or not done or new == src or round_ >= MAX_ISOLATION_ROUNDS - 1:
                        if wrapped:
                            # maybe code the namespace does not fit (a specialisation of a library template,
                            # ...): start over with the plain TU (no redzones for template statics)
                            wrapped, src, stubs, round_ = False, code, {}, 0
                            continue
                        raise
                    stubs.update(done)
                    src = new
                    round_ += 1
            if stubs:
                meta = Path(tmp) / (out.name + ".stubs.json")
                meta.write_text(json.dumps({k: list(v) for k, v in stubs.items()}))
                _publish(meta, Path(str(out) + ".stubs.json"))
            _publish(tmp_out, out)
    return out


def stubbed(path: Path) -> dict:
    """{function: (line, construct)} the build of `path` replaced by an UnsupportedFeatureError."""
    meta = Path(str(path) + ".stubs.json")
    try:
        return {k: tuple(v) for k, v in json.loads(meta.read_text()).items()}
    except (OSError, ValueError):
        return {}


def clear_cache() -> None:
    shutil.rmtree(cache_dir(), ignore_errors=True)
