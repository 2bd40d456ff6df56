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
from ..signature import kernel_line
from . import isolate

HERE = Path(__file__).resolve().parent
INCLUDE_DIR = HERE / "include"
RUNTIME_DIR = HERE / "runtime"
USER_FILE = "kernel.cu"          # name user diagnostics and debug info refer to
ENTRIES_FILE = "<emu-entries>"   # the generated launch entries: line i + 1 is name expression i
BUILD_FORMAT = "emu-build-8"     # bump when the generated code changes shape (8: entries take the expression as is)

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


# Inline PTX that only reads a special register (`asm("mov.u32 %0, %%laneid;" : "=r"(lane));`, the common
# form in warp-aggregated atomics and lane-mask code) becomes an assignment of the emulator's value; any other
# asm reaches the assembler and is reported as unsupported at its line.
_SPECIAL_REGISTERS = {
    "laneid": "::emu::g_cur->lane", "warpid": "::emu::g_cur->warp",
    "lanemask_eq": "(1u << ::emu::g_cur->lane)", "lanemask_lt": "((1u << ::emu::g_cur->lane) - 1u)",
    "lanemask_le": "((2u << ::emu::g_cur->lane) - 1u)", "lanemask_gt": "(~((2u << ::emu::g_cur->lane) - 1u))",
    "lanemask_ge": "(~((1u << ::emu::g_cur->lane) - 1u))",
    **{f"{reg}.{c}": f"{var}.{c}" for reg, var in (("tid", "threadIdx"), ("ntid", "blockDim"), ("ctaid", "blockIdx"),
                                                   ("nctaid", "gridDim")) for c in "xyz"},
    "clock": "clock64()", "clock64": "clock64()",
}
_ASM_SREG = re.compile(
    r'\b(?:asm|__asm__)\s*(?:volatile\s*|__volatile__\s*)?\(\s*"\s*mov\.[bus](?:32|64)\s+%0\s*,\s*%%'
    r'(?P<reg>[a-z_]+[0-9]*(?:\.[xyz])?)\s*;?\s*"\s*:\s*"=[rl]"\s*\((?P<dst>[^()]*)\)\s*\)\s*;')


def _special_register_read(m: re.Match) -> str:
    value = _SPECIAL_REGISTERS.get(m.group("reg"))
    if value is None:
        return m.group(0)
    dst = m.group("dst").strip()
    return (f"({dst}) = static_cast<std::remove_reference_t<decltype({dst})>>({value});"
            + "\n" * m.group(0).count("\n"))


def rewrite_source(code: str) -> str:
    """CUDA-only constructs g++ cannot take, rewritten on the same lines."""
    code = _ASM_SREG.sub(_special_register_read, code)
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
    lines = ['', f'#line 1 "{ENTRIES_FILE}"']
    for i, expr in enumerate(callables):
        # One line per entry (its line in ENTRIES_FILE is i + 1). The name expression is passed as it is, not
        # `&(expr)`: a function name decays to its pointer, and expressions NVRTC accepts that are not
        # lvalues (`static_cast<void(*)(int*)>(k)`, `&k`) stay valid. Parameter names no kernel is called
        # (a kernel named `a` or `c` must still resolve).
        lines.append(f'extern "C" int emu_entry_{i}(const emu_launch_cfg* emu_cfg_, void** emu_args_, '
                     f'emu_result* emu_res_) {{ return ::emu::launch(({expr}), emu_cfg_, emu_args_, emu_res_); }} '
                     f'extern "C" int emu_arity_{i}() {{ return ::emu::arity(({expr})); }}')
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


def _entry_error(log: str, user_code: str, callables: Sequence[str]) -> Optional[Tuple[int, str]]:
    """(line, message) for an error in the generated launch entries: the name expression it comes from,
    at the line that defines the kernel it names (or None when no kernel of the code has that name)."""
    for m in _DIAG.finditer(log):
        if m.group("file") == ENTRIES_FILE and "error" in m.group("sev"):
            i = int(m.group("line")) - 1
            if 0 <= i < len(callables):
                expr = callables[i]
                return (kernel_line(user_code, expr),
                        f"name expression '{expr}' does not give one __global__ function: {m.group('msg').strip()}")
    return None


def _run_compiler(cmd: List[str], cwd: str, user_code: str, callables: Sequence[str] = ()) -> None:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        log = (proc.stdout + proc.stderr).strip()
        diags = parse_diagnostics(log)
        first = next((d for d in diags if d[1] == "error"), None)
        lines = user_code.splitlines()
        line = first[0] if first else None
        if first is None:
            entry = _entry_error(log, user_code, callables)
            if entry is not None:
                line, detail = entry
            else:
                m = re.search(r"error: (.*)", log)
                detail = m.group(1).strip() if m else "see log"
        else:
            detail = first[2]
        src = lines[line - 1] if line and 0 < line <= len(lines) else None
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


def precompiled_header(mode_flags: Sequence[str], flags: Sequence[str]) -> Path:
    """The ``-include`` path of emu.h precompiled for one build mode and user flags (``<dir>/emu.h`` beside
    ``<dir>/emu.h.gch``): every build includes it, and parsing it with the C++ headers it pulls in was a third of
    a small kernel's compile. GCC takes the .gch only when the flags match and otherwise reads the header
    itself; where the .gch cannot be built, the header in the source tree is returned."""
    d = cache_dir()
    tag = hashlib.sha256("\0".join([*mode_flags, *flags]).encode()).hexdigest()[:12]
    pdir = d / f"rt-{runtime_version()}-pch-{tag}"
    if (pdir / "emu.h.gch").exists():
        return pdir / "emu.h"
    with _Lock(d / (pdir.name + ".lock")):
        if (pdir / "emu.h.gch").exists():
            return pdir / "emu.h"
        tmp = Path(tempfile.mkdtemp(dir=d))
        shutil.copyfile(INCLUDE_DIR / "emu.h", tmp / "emu.h")
        cmd = [CXX, *BASE_FLAGS, *mode_flags, *flags, "-I", str(INCLUDE_DIR), "-x", "c++-header",
               str(INCLUDE_DIR / "emu.h"), "-o", str(tmp / "emu.h.gch")]
        if subprocess.run(cmd, capture_output=True, text=True).returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            return INCLUDE_DIR / "emu.h"
        try:
            os.rename(tmp, pdir)
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)
    return pdir / "emu.h"


def memcheck_main_object(flags: Sequence[str]) -> Path:
    """The memcheck runner's ``main`` (runtime/memcheck_main.cpp), compiled once per (runtime version, user
    flags) instead of in every memcheck build: it is half of a small kernel's memcheck build time."""
    d = cache_dir()
    tag = hashlib.sha256("\0".join(flags).encode()).hexdigest()[:12]
    out = d / f"rt-{runtime_version()}-memcheck-main-{tag}.o"
    if out.exists():
        return out
    with _Lock(d / (out.name + ".lock")):
        if out.exists():
            return out
        with tempfile.TemporaryDirectory(dir=d) as tmp:
            tmp_out = Path(tmp) / out.name
            cmd = [CXX, *BASE_FLAGS, *MEMCHECK_FLAGS, *flags, "-I", str(INCLUDE_DIR), "-include",
                   str(INCLUDE_DIR / "emu.h"), "-c", str(RUNTIME_DIR / "memcheck_main.cpp"), "-o", str(tmp_out)]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0:
                raise RuntimeError(f"building the emulator's memcheck runner failed:\n{proc.stdout}{proc.stderr}")
            _publish(tmp_out, out)
    return out


# --- what device code may link against ---------------------------------------------
# Device code on a GPU can call device functions and the CUDA math library, nothing of the host. Built for the
# CPU, the same source could call libc (`extern "C" __device__ int system(const char*);` linked and ran a
# shell command). So the user's object may only reference the emulator runtime, the math library and the
# compiler's own helpers; anything else is a CompileError naming the symbol, like the GPU's link error. Raw
# system-call instructions from inline assembly are refused the same way. (The grader's sandbox remains the
# boundary: this makes the CPU build fail where the GPU build fails, with a clear message.)
_ABI_SYMBOLS = {"_GLOBAL_OFFSET_TABLE_", "__stack_chk_fail", "__dso_handle", "__tls_get_addr", "memcpy", "memset",
                "memmove", "memcmp", "__gxx_personality_v0", "_Unwind_Resume", "__cxa_guard_acquire",
                "__cxa_guard_release", "__cxa_guard_abort", "__cxa_pure_virtual", "__cxa_atexit",
                "__cxa_begin_catch", "__cxa_end_catch", "__cxa_rethrow", "__cxa_allocate_exception",
                "__cxa_free_exception", "__cxa_throw", "_ZSt9terminatev", "__assert_fail"}
# host functions standing in for device built-ins (clock(), device malloc, printf, assert); none of them can
# reach the file system, the network or another process
_HARMLESS_LIBC = {"clock", "time", "clock_gettime", "gettimeofday", "abort", "strlen", "strcmp", "strncmp",
                  "memchr", "abs", "labs", "llabs", "malloc", "free", "calloc", "realloc", "aligned_alloc",
                  "posix_memalign", "nanosleep", "usleep", "sched_yield", "__errno_location", "printf", "vprintf",
                  "puts", "putchar"}
_SYSCALL_INSN = re.compile(r"\t(syscall|sysenter|int\s+\$0x80|svc\s+#?0x0|svc\s+#0)\b")
_allowed_cache: dict = {}


def _nm(args: List[str]) -> List[str]:
    proc = subprocess.run(["nm", *args], capture_output=True, text=True)
    return proc.stdout.split() if proc.returncode == 0 else []


def allowed_symbols_file(runtime_objs: Sequence[Path]) -> Path:
    """Where ``allowed_symbols`` keeps its answer for these runtime objects (listing libm and libgcc with nm took
    a quarter of a second in every fresh process that built a kernel: each sandboxed notebook run, each build)."""
    tag = hashlib.sha256("\0".join(p.name for p in runtime_objs).encode()).hexdigest()[:12]
    return cache_dir() / f"rt-{runtime_version()}-allowed-{tag}.json"


def allowed_symbols(runtime_objs: Sequence[Path]) -> set:
    """Symbols user device code may reference: the runtime's own, libm's, libgcc's and the C++ ABI's."""
    key = tuple(str(p) for p in runtime_objs)
    if key not in _allowed_cache:
        stored = allowed_symbols_file(runtime_objs)
        try:
            _allowed_cache[key] = set(json.loads(stored.read_text()))
            return _allowed_cache[key]
        except (OSError, ValueError, TypeError):
            pass
        ok = set(_ABI_SYMBOLS) | _HARMLESS_LIBC
        for obj in runtime_objs:
            ok |= set(_nm(["--defined-only", "--format=just-symbols", str(obj)]))
        libm = subprocess.run([CXX, "-print-file-name=libm.so.6"], capture_output=True, text=True).stdout.strip()
        if libm and os.path.exists(libm):
            ok |= {s.split("@")[0] for s in _nm(["-D", "--defined-only", "--format=just-symbols", libm])}
        libgcc = subprocess.run([CXX, "-print-libgcc-file-name"], capture_output=True, text=True).stdout.strip()
        if libgcc and os.path.exists(libgcc):        # the compiler's arithmetic helpers (__popcountdi2, ...)
            ok |= set(_nm(["--defined-only", "--format=just-symbols", libgcc]))
        _allowed_cache[key] = ok
        try:
            fd, tmp = tempfile.mkstemp(dir=stored.parent, suffix=".tmp")
            with os.fdopen(fd, "w") as f:
                json.dump(sorted(ok), f)
            _publish(Path(tmp), stored)
        except OSError:
            pass
    return _allowed_cache[key]


def check_linkage(obj: Path, runtime_objs: Sequence[Path], user_code: str) -> None:
    """Raise CompileError when the user's object needs a symbol outside ``allowed_symbols`` or makes a
    system call itself."""
    undefined = _nm(["-u", "--format=just-symbols", str(obj)])
    if not undefined and not os.path.exists(obj):
        return
    ok = allowed_symbols(runtime_objs)
    bad = [u for u in undefined if u not in ok and not u.startswith(("_ZN3emu", "emu_"))]
    problem = None
    if bad:
        names = subprocess.run(["c++filt", *bad], capture_output=True, text=True).stdout.split("\n") or bad
        name = (names[0] or bad[0]).strip()
        short = re.sub(r"\(.*$", "", name)
        problem = (f"undefined symbol `{name}`: device code may call device functions and the CUDA math library "
                   f"only, not host library functions (on a GPU this fails to link too)", short)
    else:
        dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(obj)], capture_output=True, text=True).stdout
        m = _SYSCALL_INSN.search(dis)
        if m:
            problem = (f"inline assembly makes a system call (`{m.group(1)}`): device code cannot", "asm")
    if problem is None:
        return
    msg, needle = problem
    lines = user_code.splitlines()
    hits = [i + 1 for i, ln in enumerate(lines) if re.search(rf"\b{re.escape(needle)}\b", ln)]
    uses = [i for i in hits if "extern" not in lines[i - 1]]       # the call, not its declaration
    line = (uses or hits or [None])[0]
    raise CompileError(f"the CPU emulator refused the kernel: {msg}", log=msg,
                       diagnostics=[(line, "error", msg)] if line else [], line=line,
                       source_line=lines[line - 1] if line else None)


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


def _compile(mode: str, tmp: str, tu: str, user_code: str, flags: List[str], objs: List[Path], out: Path,
             callables: Sequence[str] = ()) -> None:
    src = Path(tmp) / "module.cpp"
    src.write_text(tu)
    mode_flags = {"native": NATIVE_FLAGS, "racecheck": RACECHECK_FLAGS}.get(mode, MEMCHECK_FLAGS)
    common = ["-I", str(INCLUDE_DIR), "-include", str(precompiled_header(mode_flags, flags))]
    if mode == "native":
        obj = Path(tmp) / "module.o"
        _run_compiler([CXX, *BASE_FLAGS, *NATIVE_FLAGS, *flags, *common, "-c", str(src), "-o", str(obj)], tmp,
                      user_code, callables)
        check_linkage(obj, objs, user_code)
        cmd = [CXX, "-shared", "-pthread", str(obj), *map(str, objs), "-o", str(out)]
    elif mode == "racecheck":
        obj = Path(tmp) / "module.o"
        _run_compiler([CXX, *BASE_FLAGS, *RACECHECK_FLAGS, *flags, *common, "-c", str(src), "-o", str(obj)], tmp,
                      user_code, callables)
        cmd = [CXX, "-shared", "-pthread", str(obj), *map(str, objs), "-o", str(out)]
    else:
        cmd = [CXX, *BASE_FLAGS, *MEMCHECK_FLAGS, *flags, *common, str(src), str(memcheck_main_object(flags)),
               *map(str, objs), "-o", str(out)]
    _run_compiler(cmd, tmp, user_code, callables)


def build(code: str, options: Sequence[str], callables: Sequence[str], mode: str) -> Path:
    """Build (or fetch from the cache) the module: a shared library (mode "native"), the instrumented
    library (mode "racecheck": racecheck, lockstep, memory counters) or the memcheck runner executable.

    Functions the host compiler rejects are stubbed (kernels.cpu.isolate) so the module's other kernels
    still build; ``stubbed(path)`` lists them."""
    if mode != "native":           # the linkage check runs on the native build; the others need it first
        build(code, options, callables, "native")
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
                    _compile(mode, tmp, unit, code, flags, objs, tmp_out, callables)
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
