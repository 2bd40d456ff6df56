"""Kernels of one module fail alone (issue 21).

NVRTC accepted the module, so when the host compiler rejects part of it, the part is a construct the
emulator does not implement. Instead of failing the whole module (and every innocent kernel in it), the
functions whose *bodies* hold the rejected lines are rebuilt as a call of ``emu::unsupported(construct,
line)``: launching a kernel that reaches one raises ``UnsupportedFeatureError`` naming the construct and
the user's line, and every other kernel builds and runs. A function whose *signature* is rejected is left
out, so its callers are rejected next round and stubbed in turn. Line numbers never move.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

CONTROL = {"if", "for", "while", "switch", "catch", "do", "else", "return", "sizeof", "decltype", "alignof",
           "__launch_bounds__", "__attribute__", "alignas", "static_assert"}
_QUAL_TAIL = re.compile(r"(\s*(const|volatile|noexcept(\s*\([^()]*\))?|override|final|mutable|&|&&|"
                        r"->\s*[\w:<>,\s*&]+?|__attribute__\s*\(\([^()]*\)\)))*\s*$")


@dataclass
class Function:
    name: str
    head_start: int      # offset of the declaration's first character
    body_open: int       # offset of '{'
    body_close: int      # offset of the matching '}'


def mask(code: str) -> str:
    """Comments, string/char literals and preprocessor lines blanked (same length, newlines kept)."""
    out = list(code)
    i, n = 0, len(code)
    line_start = True
    while i < n:
        c = code[i]
        if line_start and c in " \t":
            i += 1
            continue
        if line_start and c == "#":                       # a directive, with its continuation lines
            j = i
            while j < n and not (code[j] == "\n" and code[j - 1] != "\\"):
                j += 1
            for k in range(i, j):
                if out[k] != "\n":
                    out[k] = " "
            i = j
            continue
        line_start = c == "\n"
        if code.startswith("//", i):
            j = code.find("\n", i)
            j = n if j < 0 else j
            for k in range(i, j):
                out[k] = " "
            i = j
        elif code.startswith("/*", i):
            j = code.find("*/", i + 2)
            j = n if j < 0 else j + 2
            for k in range(i, j):
                if out[k] != "\n":
                    out[k] = " "
            i = j
        elif c in "\"'":
            if c == "'" and i > 0 and (code[i - 1].isalnum() or code[i - 1] == "_"):   # digit separator 1'000
                i += 1
                continue
            j = i + 1
            while j < n and code[j] != c and code[j] != "\n":
                j += 2 if code[j] == "\\" else 1
            for k in range(i + 1, min(j, n)):
                out[k] = " "
            i = j + 1
        else:
            i += 1
    return "".join(out)


def _match(m: str, open_at: int, o: str = "{", c: str = "}") -> int:
    depth = 0
    for i in range(open_at, len(m)):
        if m[i] == o:
            depth += 1
        elif m[i] == c:
            depth -= 1
            if depth == 0:
                return i
    return len(m) - 1


def _head_name(head: str) -> Optional[str]:
    """The function name of a declaration head ending in its parameter list (None: not a function)."""
    h = _QUAL_TAIL.sub("", head).rstrip()
    # a constructor's member initialiser list: `Foo(int x) : a(x), b{y}` -> cut at the top-level ' : '
    depth = 0
    for i, ch in enumerate(h):
        if ch in "(<[":
            depth += 1
        elif ch in ")>]":
            depth -= 1
        elif ch == ":" and depth == 0 and h[i - 1:i + 1] != "::" and h[i:i + 2] != "::":
            h = h[:i].rstrip()
            break
    if not h.endswith(")"):
        return None
    depth, i = 0, len(h) - 1
    while i >= 0:
        if h[i] == ")":
            depth += 1
        elif h[i] == "(":
            depth -= 1
            if depth == 0:
                break
        i -= 1
    m = re.search(r"(operator\s*\S+|~?[A-Za-z_][\w:]*)\s*$", h[:i])
    if not m or m.group(1).split("::")[-1] in CONTROL:
        return None
    return m.group(1)


def _in_init_list(head: str) -> bool:
    depth = 0
    for i, ch in enumerate(head):
        if ch in "(<[":
            depth += 1
        elif ch in ")>]":
            depth -= 1
        elif ch == ":" and depth == 0 and head[i - 1:i + 1] != "::" and head[i:i + 2] != "::":
            # `Foo(int x) : a(x), b{` -- the brace follows a member's name, not a complete initialiser list
            return head[:i].rstrip().endswith(")") and re.search(r"[\w>]\s*$", head) is not None
    return False


def functions(code: str) -> List[Function]:
    """Function definitions at namespace/class scope (bodies not descended into)."""
    m = mask(code)
    out: List[Function] = []

    def scan(lo: int, hi: int) -> None:
        start = lo          # where the current declaration began
        i = lo
        while i < hi:
            ch = m[i]
            if ch in ";}":
                start = i + 1
            elif ch == "(":
                i = _match(m, i, "(", ")")
            elif ch == "{":
                head = m[start:i]
                close = _match(m, i)
                stripped = head.strip()
                if _in_init_list(stripped):                # `Foo() : b{2} {`: a member's brace initialiser
                    i = close + 1
                    continue
                name = _head_name(stripped) if "=" not in stripped.replace("==", "").replace("operator=", "") else None
                if re.match(r'^(namespace\b|extern\s*("[^"]*")?\s*$)', stripped) or re.search(
                        r"\b(struct|class|union)\b[^()]*$", stripped) or stripped == "":
                    scan(i + 1, close)                     # a scope: declarations inside
                elif name:
                    out.append(Function(name, start + len(head) - len(head.lstrip()), i, close))
                i = close
                start = close + 1
            i += 1

    scan(0, len(m))
    return out


def _line_at(code: str, offset: int) -> int:
    return code.count("\n", 0, offset) + 1


def construct_of(message: str) -> str:
    """A reader's name for what the host compiler rejected."""
    msg = message.strip()
    low = msg.lower()
    if low.startswith("inline ptx assembly"):
        return "inline PTX assembly (asm)"
    if "asm" in low and ("constraint" in low or "operand" in low or "register" in low or "'asm'" in low or "‘asm’" in low):
        return "inline PTX assembly (asm)"
    if "wmma" in low or "nvcuda" in low or "mma" in low.split():
        return "tensor-core matrix operations (nvcuda::wmma / mma)"
    if re.search(r"\b(tex\d?d|tex2dlod|surf\dd|cudatextureobject_t|cudasurfaceobject_t|texture<)", low):
        return "textures and surfaces"
    q = re.search(r"[‘'`]([^’'`]+)[’'`]", msg)
    if q:
        return f"`{q.group(1)}` ({msg})"
    return msg


def stub(code: str, errors: Sequence[Tuple[int, int, str]]) -> Tuple[str, Dict[str, Tuple[int, str]], List[int]]:
    """Rewrite `code` so the functions holding errors (line, column, message) fail at run time instead of at
    build time. Returns (new code, {function: (line, construct)} stubbed or dropped, error lines at file scope)."""
    funcs = functions(code)
    chars = list(code)
    done: Dict[str, Tuple[int, str]] = {}
    outside: List[int] = []
    starts = [0]
    for i, ch in enumerate(code):
        if ch == "\n":
            starts.append(i + 1)
    edits: List[Tuple[int, int, str]] = []
    taken = set()
    for line, col, text in sorted(set(errors)):
        if line < 1 or line > len(starts):
            outside.append(line)
            continue
        off = starts[line - 1] + max(col, 1) - 1
        f = next((f for f in funcs if f.head_start <= off <= f.body_close), None)
        if f is None:
            outside.append(line)
            continue
        if id(f) in taken:
            continue
        taken.add(id(f))
        construct = construct_of(text)
        done[f.name] = (line, construct)
        if off > f.body_open:       # in the body: keep the declaration, the body reports the construct
            literal = construct.replace("\\", "\\\\").replace('"', '\\"')
            body = code[f.body_open + 1:f.body_close]
            call = f' ::emu::unsupported("{literal}", {line}); '
            edits.append((f.body_open + 1, f.body_close, call + "\n" * body.count("\n")))
        else:                        # in the signature: leave the function out; callers are rejected next
            span = code[f.head_start:f.body_close + 1]
            edits.append((f.head_start, f.body_close + 1, "\n" * span.count("\n")))
    for lo, hi, text in sorted(edits, reverse=True):
        chars[lo:hi] = list(text)
    return "".join(chars), done, outside
