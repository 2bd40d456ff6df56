"""Kernel parameter lists: C type -> numpy dtype, source scanning, demangling.

Where the types come from (see ``kernels.nvrtc``):

* name expressions (``"layernorm_kernel<256>"``): NVRTC's lowered (Itanium
  mangled) name, demangled here -> the real types after template substitution
  and typedefs;
* other kernels (``extern "C"``): a probe compile that mangles
  ``decltype(kernel)``, demangled the same way;
* the source text itself only as a fallback and for parameter *names*
  (mangled names carry no names).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import List, Optional, Tuple

import numpy as np


@dataclass(frozen=True)
class Param:
    """One kernel parameter.

    ``dtype`` is the numpy dtype of a scalar parameter, or of the *elements* a
    pointer parameter expects (``float4*`` -> float32); ``None`` when unknown
    (structs, ``void*``, pointer-to-pointer).  ``size`` is ``sizeof`` of the
    scalar, or of one pointee for pointers (``float4*`` -> 16, ``float*`` -> 4;
    0 when unknown).  ``lanes``/``align`` describe vector types
    (``float4``: 4 lanes, 16-byte alignment).
    """

    name: str
    ctype: str
    is_pointer: bool
    is_const: bool
    dtype: Optional[np.dtype]
    size: int
    lanes: int = 1
    align: int = 0

    def describe(self, index: int) -> str:
        return f"parameter {index} '{self.name}' ({self.ctype})"


# --------------------------------------------------------------------------- C types

def _bf16_dtype() -> np.dtype:
    try:  # ml_dtypes gives a real bfloat16; otherwise raw bits in uint16
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    except ImportError:
        return np.dtype(np.uint16)


_SCALARS = {
    "float": "float32", "double": "float64",
    "__half": "float16", "half": "float16",
    "bool": "bool",
    "char": "int8", "signed char": "int8", "unsigned char": "uint8",
    "short": "int16", "unsigned short": "uint16",
    "int": "int32", "unsigned int": "uint32",
    "long": "int64", "unsigned long": "uint64",          # LP64 (Linux, host and device)
    "long long": "int64", "unsigned long long": "uint64",
    "int8_t": "int8", "uint8_t": "uint8", "int16_t": "int16", "uint16_t": "uint16",
    "int32_t": "int32", "uint32_t": "uint32", "int64_t": "int64", "uint64_t": "uint64",
    "size_t": "uint64", "ptrdiff_t": "int64", "intptr_t": "int64", "uintptr_t": "uint64",
}
_BF16_NAMES = ("__nv_bfloat16", "nv_bfloat16")

# vector type -> (scalar C type, lanes, alignment); sizes follow vector_types.h
_VECTORS = {}
for _base, _c in (("char", "signed char"), ("uchar", "unsigned char"), ("short", "short"),
                  ("ushort", "unsigned short"), ("int", "int"), ("uint", "unsigned int"),
                  ("float", "float"), ("long", "long"), ("ulong", "unsigned long"),
                  ("longlong", "long long"), ("ulonglong", "unsigned long long"),
                  ("double", "double")):
    _sz = np.dtype(_SCALARS[_c]).itemsize
    for _n in (1, 2, 3, 4):
        # 3-vectors keep the scalar's alignment; 4-vectors of 8-byte scalars are 16-aligned
        _al = _sz if _n in (1, 3) else min(_sz * _n, 16)
        _VECTORS[f"{_base}{_n}"] = (_c, _n, _al)
for _n in ("longlong4", "ulonglong4", "double4", "long4", "ulong4"):
    _VECTORS[_n + "_16a"] = (_VECTORS[_n][0], 4, 16)
    _VECTORS[_n + "_32a"] = (_VECTORS[_n][0], 4, 32)
_VECTORS.update({"__half2": ("__half", 2, 4), "half2": ("__half", 2, 4),
                 "__nv_bfloat162": ("__nv_bfloat16", 2, 4), "nv_bfloat162": ("__nv_bfloat16", 2, 4)})

_QUALIFIERS = {"const", "volatile", "__restrict__", "__restrict", "restrict", "struct", "class",
               "enum", "typename", "__grid_constant__", "register"}
_BUILTIN_WORDS = {"void", "bool", "char", "short", "int", "long", "float", "double", "signed",
                  "unsigned", "__int128"}


def scalar_dtype(base: str) -> Optional[np.dtype]:
    """numpy dtype of a scalar C type spelled canonically (``"unsigned int"``)."""
    if base in _BF16_NAMES:
        return _bf16_dtype()
    name = _SCALARS.get(base)
    return np.dtype(name) if name else None


def _canonical_base(words: List[str]) -> str:
    """``['unsigned']`` -> ``'unsigned int'``, ``['long', 'int']`` -> ``'long'``, ..."""
    words = [w for w in words if w not in _QUALIFIERS]
    words = [w.split("::")[-1] if w.startswith(("std::", "::")) else w for w in words]
    if not words:
        return ""
    if set(words) <= _BUILTIN_WORDS:
        unsigned = "unsigned" in words
        signed = "signed" in words
        rest = [w for w in words if w not in ("unsigned", "signed")]
        if rest.count("long") >= 2:
            core = "long long"
        elif "long" in rest and "double" not in rest:
            core = "long"
        elif "short" in rest:
            core = "short"
        elif rest:
            core = rest[-1]
        else:
            core = "int"
        if core == "char":
            return "unsigned char" if unsigned else ("signed char" if signed else "char")
        if unsigned:
            return "unsigned " + core
        return core
    return " ".join(words)


def parse_ctype(ctype: str, name: str = "") -> Param:
    """A :class:`Param` from a C type spelled as in source or as demangled
    (``"float const*"``, ``"const float* __restrict__"``, ``"float4*"``)."""
    text = re.sub(r"\s+", " ", ctype.replace("&", " & ").replace("*", " * ")).strip()
    tokens = text.split(" ")
    stars = tokens.count("*")
    is_pointer = stars > 0 or text.endswith("[]")
    if "[" in text:
        is_pointer = True
        stars = max(stars, 1)
        tokens = [t.split("[")[0] for t in tokens if not t.startswith("[")]
    # const that applies to the pointee: before the first '*'
    head = tokens[:tokens.index("*")] if "*" in tokens else tokens
    is_const = "const" in head
    base = _canonical_base([t for t in head if t not in ("&", "")])
    pretty = re.sub(r"\s+\*", "*", text)
    # demangler spelling "float const*" -> the usual "const float*"
    pretty = re.sub(r"^([\w:<>, ]+?) const(\*|$)", r"const \1\2", pretty)
    dtype: Optional[np.dtype] = None
    size = 0
    lanes = 1
    align = 0
    if stars <= 1:
        if base in _VECTORS:
            scalar, lanes, align = _VECTORS[base]
            dtype = scalar_dtype(scalar)
            size = dtype.itemsize * lanes if dtype is not None else 0
        else:
            dtype = scalar_dtype(base)
            if dtype is not None:
                size = dtype.itemsize
                align = size
    if stars > 1:
        dtype, size, lanes, align = None, 8, 1, 8
    return Param(name=name, ctype=pretty, is_pointer=is_pointer, is_const=is_const,
                 dtype=dtype, size=size, lanes=lanes, align=align)


# --------------------------------------------------------------------------- demangling

@lru_cache(maxsize=1)
def _cxa_demangle():
    for libname in ("libstdc++.so.6", ctypes.util.find_library("stdc++"), "libc++.so.1",
                    "libc++abi.dylib", "libstdc++.6.dylib"):
        if not libname:
            continue
        try:
            lib = ctypes.CDLL(libname)
            fn = lib.__cxa_demangle
        except (OSError, AttributeError):
            continue
        fn.restype = ctypes.c_void_p
        fn.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_void_p,
                       ctypes.POINTER(ctypes.c_int)]
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None)
        libc.free.argtypes = [ctypes.c_void_p]
        return fn, libc.free
    return None


def demangle(mangled: str) -> Optional[str]:
    """Itanium demangling through the C++ runtime's ``__cxa_demangle``; None if unavailable."""
    found = _cxa_demangle()
    if found is None:
        return None
    fn, free = found
    status = ctypes.c_int(0)
    ptr = fn(mangled.encode(), None, None, ctypes.byref(status))
    if status.value != 0 or not ptr:
        return None
    try:
        return ctypes.string_at(ptr).decode()
    finally:
        free(ptr)


def split_top_level(text: str, sep: str = ",") -> List[str]:
    """Split at ``sep`` outside (), <>, [], {}."""
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "(<[{":
            depth += 1
        elif ch in ")>]}":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    tail = "".join(cur)
    if tail.strip() or parts:
        parts.append(tail)
    return [p.strip() for p in parts]


def _last_group(text: str, open_ch: str, close_ch: str) -> Optional[Tuple[int, int]]:
    """(start, end) of the last balanced group ending at the string's last ``close_ch``."""
    end = text.rfind(close_ch)
    if end < 0:
        return None
    depth = 0
    for i in range(end, -1, -1):
        if text[i] == close_ch:
            depth += 1
        elif text[i] == open_ch:
            depth -= 1
            if depth == 0:
                return i, end
    return None


def demangled_param_types(demangled: str) -> Optional[List[str]]:
    """Parameter types of a demangled function: ``"void k<256>(float const*, int)"`` ->
    ``["float const*", "int"]``."""
    grp = _last_group(demangled.rstrip(), "(", ")")
    if grp is None:
        return None
    inner = demangled[grp[0] + 1:grp[1]].strip()
    if inner in ("", "void"):
        return []
    return split_top_level(inner)


def probe_param_types(demangled: str) -> Optional[List[str]]:
    """Types from a probe ``void __kernels_probe<void (float*, int)>()``."""
    lt = demangled.find("<")
    grp = _last_group(demangled, "<", ">")
    if lt < 0 or grp is None:
        return None
    return demangled_param_types(demangled[lt + 1:grp[1]])


# --------------------------------------------------------------------------- source scanning

@dataclass
class KernelDecl:
    """A ``__global__`` function found in the source."""

    name: str                       # unqualified
    qualname: str                   # with named namespaces: "ns::k"
    line: int                       # 1-based line of the name
    is_template: bool
    extern_c: bool
    anonymous_ns: bool
    params: List[Tuple[Optional[str], str]] = field(default_factory=list)  # (name, type text)


def blank_comments_and_strings(src: str) -> str:
    """Comments and literal contents -> spaces (newlines kept, so lines still match);
    quotes are kept so ``extern "C"`` stays recognisable."""
    out = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", src[i:j]))
            i = j
        elif c in "\"'":
            # raw strings are rare in kernels; treat R"(...)" like a plain string
            j = i + 1
            while j < n and src[j] != c and src[j] != "\n":
                j += 2 if src[j] == "\\" else 1
            j = min(j, n - 1)
            body = src[i + 1:j]
            out.append(c + ("C" if body == "C" else " " * len(body)) + src[j])
            i = j + 1
        else:
            out.append(c)
            i += 1
    text = "".join(out)
    # preprocessor lines (with continuations) carry no declarations we can use
    return re.sub(r"(?m)^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


_TOKEN = re.compile(r'"[^"\n]*"|[A-Za-z_]\w*(?:\s*::\s*[A-Za-z_~]\w*)*|::|\d[\w.]*|\S')
_ATTR_CALLS = {"__launch_bounds__", "__attribute__", "__declspec", "alignas", "__align__",
               "__cluster_dims__", "__maxnreg__", "decltype", "noexcept", "throw"}


def _tokens(text: str):
    line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
    import bisect
    for m in _TOKEN.finditer(text):
        tok = re.sub(r"\s+", "", m.group(0))
        yield tok, bisect.bisect_right(line_starts, m.start())


def _match(toks, i, open_t, close_t) -> int:
    """Index just past the group opening at ``toks[i]``."""
    depth = 0
    while i < len(toks):
        t = toks[i][0]
        if t == open_t:
            depth += 1
        elif t == close_t:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return i


def _match_angle(toks, i) -> int:
    depth, paren = 0, 0
    while i < len(toks):
        t = toks[i][0]
        if t in "([":
            paren += 1
        elif t in ")]":
            paren -= 1
        elif paren == 0 and t == "<":
            depth += 1
        elif paren == 0 and t == ">":
            depth -= 1
            if depth == 0:
                return i + 1
        if t in (";", "{", "}") or paren < 0:
            return i  # a less-than, not a template argument list
        i += 1
    return i


def _split_param(text: str) -> Tuple[Optional[str], str]:
    text = split_top_level(text, "=")[0].strip() if "=" in text else text.strip()
    text = re.sub(r"\b__attribute__\s*\(\(.*?\)\)", " ", text)
    text = re.sub(r"\[\[.*?\]\]", " ", text)
    m = re.match(r"^(.*?)([A-Za-z_]\w*)\s*((?:\[[^\]]*\]\s*)*)$", text, re.S)
    if not m:
        return None, text
    before, last, arrays = m.group(1), m.group(2), m.group(3)
    type_words = [w for w in re.findall(r"[A-Za-z_][\w:]*", before) if w not in _QUALIFIERS]
    if last in _BUILTIN_WORDS or not type_words:
        return None, text
    ctype = before.strip()
    if arrays.strip():
        ctype += "*"
    return last, ctype


def find_kernels(source: str) -> List[KernelDecl]:
    """Every ``__global__`` function (definition or declaration) in ``source``."""
    toks = list(_tokens(blank_comments_and_strings(source)))
    found: List[KernelDecl] = []
    scope: List[Tuple[str, str]] = []  # ("ns", name) | ("extern", "C") | ("other", "")

    def walk(i: int, end: int) -> None:
        decl_template = decl_global = decl_externc = False
        last_ident = None
        while i < end:
            t, line = toks[i]
            if t == "namespace":
                j = i + 1
                name = ""
                if j < end and toks[j][0] not in ("{",):
                    name = toks[j][0]
                    j += 1
                if j < end and toks[j][0] == "{":
                    close = _match(toks, j, "{", "}")
                    scope.append(("ns", name))
                    walk(j + 1, close - 1)
                    scope.pop()
                    i = close
                else:  # namespace alias
                    while i < end and toks[i][0] != ";":
                        i += 1
                    i += 1
                decl_template = decl_global = decl_externc = False
                continue
            if t == "extern" and i + 1 < end and toks[i + 1][0].startswith('"'):
                linkage_c = toks[i + 1][0] == '"C"'
                if i + 2 < end and toks[i + 2][0] == "{":
                    close = _match(toks, i + 2, "{", "}")
                    scope.append(("extern", "C" if linkage_c else "C++"))
                    walk(i + 3, close - 1)
                    scope.pop()
                    i = close
                    continue
                decl_externc = linkage_c
                i += 2
                continue
            if t == "template" and i + 1 < end and toks[i + 1][0] == "<":
                decl_template = True
                i = _match_angle(toks, i + 1)
                continue
            if t == "__global__":
                decl_global = True
            elif t in _ATTR_CALLS and i + 1 < end and toks[i + 1][0] == "(":
                i = _match(toks, i + 1, "(", ")")
                continue
            elif t == "[" and i + 1 < end and toks[i + 1][0] == "[":
                i = _match(toks, i, "[", "]")
                continue
            elif t == "(" and last_ident is not None:
                close = _match(toks, i, "(", ")")
                if decl_global:
                    a = i
                    # raw parameter text, from the source with comments/strings blanked
                    param_toks = toks[a + 1:close - 1]
                    params = []
                    if param_toks:
                        text = " ".join(p for p, _ in param_toks)
                        for part in split_top_level(text):
                            if part and part != "void":
                                params.append(_split_param(part))
                    name_tok, name_line = last_ident
                    short = name_tok.split("::")[-1]
                    named = [n for k, n in scope if k == "ns" and n]
                    externc = decl_externc or any(k == "extern" and n == "C" for k, n in scope)
                    anon = any(k == "ns" and not n for k, n in scope)
                    found.append(KernelDecl(
                        name=short, qualname="::".join(named + [name_tok]), line=name_line,
                        is_template=decl_template, extern_c=externc, anonymous_ns=anon,
                        params=params))
                i = close
                last_ident = None
                continue
            elif t == "{":
                i = _match(toks, i, "{", "}")
                decl_template = decl_global = decl_externc = False
                last_ident = None
                continue
            elif t == ";":
                decl_template = decl_global = decl_externc = False
                last_ident = None
            elif re.match(r"[A-Za-z_~]", t):
                last_ident = (t, line)
            elif t in ("<",):
                # template arguments in a return type or qualifier: skip them
                i = _match_angle(toks, i)
                continue
            i += 1

    walk(0, len(toks))
    return found


def params_from_source(decl: KernelDecl) -> List[Param]:
    """Fallback when no compiler-derived types are available."""
    out = []
    for idx, (name, ctype) in enumerate(decl.params):
        out.append(parse_ctype(ctype, name or f"arg{idx}"))
    return out


def source_types_resolved(decl: KernelDecl) -> bool:
    """True when every parameter is spelled with builtin/CUDA type names only, so the
    source spelling is already the real type (no typedef, macro or template to resolve)."""
    for _, ctype in decl.params:
        words = [w for w in re.findall(r"[A-Za-z_][\w:]*", ctype) if w not in _QUALIFIERS]
        for w in words:
            if not (w in _BUILTIN_WORDS or w in _SCALARS or w in _VECTORS or w in _BF16_NAMES):
                return False
    return True


def named_params(types: List[str], decl: Optional[KernelDecl]) -> List[Param]:
    """Combine compiler-derived types with the parameter names from the source."""
    names: List[Optional[str]] = [None] * len(types)
    if decl is not None and len(decl.params) == len(types):
        names = [n for n, _ in decl.params]
    return [parse_ctype(t, names[i] or f"arg{i}") for i, t in enumerate(types)]


def base_name(name_expression: str) -> str:
    """``"ns::layernorm_kernel<256>"`` -> ``"layernorm_kernel"``; ``"&k"`` -> ``"k"``."""
    text = name_expression.strip().lstrip("&").strip()
    lt = text.find("<")
    if lt >= 0:
        text = text[:lt]
    return text.split("::")[-1].strip()


def kernel_line(source: str, name_expression: str) -> Optional[int]:
    """The line of the first ``__global__`` function of ``source`` named by an identifier of
    ``name_expression`` (``"static_cast<void(*)(int*)>(add)"`` -> the line of ``add``), or None."""
    decls = find_kernels(source)
    for ident in re.findall(r"[A-Za-z_]\w*", name_expression):
        for d in decls:
            if d.name == ident:
                return d.line
    return None


__all__ = ["Param", "KernelDecl", "kernel_line", "parse_ctype", "scalar_dtype", "demangle",
           "demangled_param_types", "probe_param_types", "find_kernels", "params_from_source",
           "named_params", "base_name", "source_types_resolved", "split_top_level", "blank_comments_and_strings"]
