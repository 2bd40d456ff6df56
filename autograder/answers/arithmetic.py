"""Arithmetic a reader can check: a relation between two numeric expressions that IEEE arithmetic makes false.

"0 × inf = 0", "-1e-7 + 1e-5 < 0", "rsqrt(inf) = inf", "inf - inf = 0": a teacher needs no rubric to see these
are false, and a false step used as an argument scores 0 (the course rule).  Only relations whose two sides are
numbers alone are read (literals, inf, nan, e, + - × / ^, sqrt / rsqrt / exp / log and their f forms); anything
with an identifier or a unit ("eps = 1e-8", "12 字节 = 3 × 4 B") is not arithmetic and is left to the rubric.  A
relation is false only when it is false in both FP32 and FP64 (so "exp(100) = inf", true in FP32, stands), and
"=" allows the rounding of the number written ("1/sqrt(1e-5) = 316", "sqrt(1e-5) ≈ 0.003").
"""
from __future__ import annotations

import math
import re
from typing import Callable, List, Optional, Tuple

import numpy as np

from .normalise import sentences

_REL = re.compile(r"(?<![<>=!])(<=|>=|!=|==|≈|~=|=|<|>)(?![<>=])")
# what an arithmetic side may hold; anything else (letters of an identifier, CJK, units) ends it
_SIDE = re.compile(r"(?:[\d.+\-*/×·^() ]|inf|nan|rsqrtf?|sqrtf?|expf?|logf?|ln|e(?=\s*\^)|e(?=[-+]?\d))+")
_TOKEN = re.compile(r"\s*(?:(\d+(?:\.\d*)?(?:e[-+]?\d+)?|\.\d+(?:e[-+]?\d+)?)|(inf|nan|rsqrtf?|sqrtf?|expf?|logf?|ln|e)|"
                    r"([-+*/×·^()]))")
_FUNCS = {"sqrt": np.sqrt, "sqrtf": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x), "rsqrtf": lambda x: 1 / np.sqrt(x),
          "exp": np.exp, "expf": np.exp, "log": np.log, "logf": np.log, "ln": np.log}
SIDE_CHARS = 120           # a side of a relation someone checks by eye is short; longer runs are not read
_AMBIGUOUS_POWER = re.compile(r"\^\s*[-+]?\s*(?:[\d.]+|inf|nan|e)\s*[-+*/×·]")
_NEG_BEFORE = re.compile(r"(?:不是|并非|不会|不等于|不能|没有|not|never)\s*$")


class _Parser:
    """Recursive descent over + - × / ^, unary minus, function calls and parentheses, in one float dtype."""

    def __init__(self, text: str, dtype):
        self.toks, self.i, self.dtype = [], 0, dtype
        pos = 0
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if not m or m.end() == pos:
                if text[pos:].strip():
                    raise ValueError(text)
                break
            self.toks.append(m.group(1) or m.group(2) or m.group(3))
            pos = m.end()

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self):
        t = self.peek()
        self.i += 1
        return t

    def parse(self):
        v = self.expr()
        if self.peek() is not None or not self.toks:
            raise ValueError("trailing")
        return v

    def expr(self):
        v = self.term()
        while self.peek() in ("+", "-"):
            v = v + self.term() if self.take() == "+" else v - self.term()
        return v

    def term(self):
        v = self.power()
        while self.peek() in ("*", "/", "×", "·"):
            v = v / self.power() if self.take() == "/" else v * self.power()
        return v

    def power(self):
        v = self.unary()
        if self.peek() == "^":
            self.take()
            v = v ** self.power()
        return v

    def unary(self):
        if self.peek() in ("-", "+"):
            return -self.unary() if self.take() == "-" else self.unary()
        return self.atom()

    def atom(self):
        t = self.take()
        if t is None:
            raise ValueError("end")
        if t == "(":
            v = self.expr()
            if self.take() != ")":
                raise ValueError(")")
            return v
        if t in _FUNCS:
            if self.take() != "(":
                raise ValueError("call")
            v = self.expr()
            if self.take() != ")":
                raise ValueError(")")
            return self.dtype(_FUNCS[t](self.dtype(v)))
        if t == "inf":
            return self.dtype(np.inf)
        if t == "nan":
            return self.dtype(np.nan)
        if t == "e":
            return self.dtype(math.e)
        if re.match(r"[\d.]", t):
            return self.dtype(float(t))
        raise ValueError(t)


def _value(text: str, dtype) -> Optional[float]:
    try:
        with np.errstate(all="ignore"):
            return float(_Parser(text, dtype).parse())
    except (ValueError, ZeroDivisionError, OverflowError):
        return None


def _slack(literal: str) -> float:
    """Half a unit in the last written digit of a plain literal ("316" -> 0.5, "0.003" -> 0.0005), else 0."""
    m = re.fullmatch(r"\s*-?(\d+)(?:\.(\d+))?(?:e([-+]?\d+))?\s*", literal)
    if not m:
        return 0.0
    decimals = len(m.group(2) or "")
    exp = int(m.group(3) or 0)
    if not m.group(2) and not m.group(3):        # "2048", "316": an integer is written to its last digit
        return 0.5
    return 0.5 * 10.0 ** (exp - decimals)


def _holds(a: float, rel: str, b: float, slack: float) -> bool:
    if rel in ("=", "==", "≈", "~="):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        if math.isinf(a) or math.isinf(b):
            return a == b
        tol = max(slack, 1e-3 * max(abs(a), abs(b))) * (3 if rel in ("≈", "~=") else 1)
        return abs(a - b) <= tol
    if math.isnan(a) or math.isnan(b):
        return rel == "!="
    return {"<": a < b, ">": a > b, "<=": a <= b, ">=": a >= b, "!=": a != b}[rel]


def false_relations(norm: str, in_quote: Callable[[int], bool],
                    supposed: Callable[[str, int], bool] = lambda s, at: False) -> List[Tuple[str, str]]:
    """(why, sentence) for each relation between numbers alone that is false in FP32 and in FP64."""
    out = []
    for a, b in sentences(norm):
        s = norm[a:b]
        for m in _REL.finditer(s):
            left = _tail(s[max(0, m.start() - SIDE_CHARS):m.start()])
            right = _head(s[m.end():m.end() + SIDE_CHARS])
            if not left or not right or not re.search(r"\d|inf|nan", left + right):
                continue
            if _AMBIGUOUS_POWER.search(left) or _AMBIGUOUS_POWER.search(right):
                continue          # "e^-inf - (-inf)" is flattened LaTeX: where the exponent ends is unknown
            if not (re.search(r"[-+*/×·^(]|inf|nan|sqrt|exp|log|ln", left + right)):
                continue          # "65504 = 65536" compares two figures someone wrote; facts.py reads those
            start = m.start() - len(left)
            if in_quote(a + start) or supposed(s, start) or _NEG_BEFORE.search(s[:start]):
                continue
            results = []
            for dtype in (np.float32, np.float64):
                x, y = _value(left, dtype), _value(right, dtype)
                if x is None or y is None:
                    break
                results.append(_holds(x, m.group(1), y, max(_slack(left), _slack(right))))
            if len(results) == 2 and not any(results):
                out.append((f"算式不成立：{left.strip()} {m.group(1)} {right.strip()}", s.strip()))
                break
    return out


def _tail(s: str) -> str:
    """The longest arithmetic run that ends ``s`` (the left side of a relation)."""
    runs = [m for m in _SIDE.finditer(s) if m.end() == len(s)]
    if not runs or re.search(r"[a-z0-9_]$", s[:runs[-1].start()]):
        return ""             # "x2 = 4", "v1 < 2": the digits end an identifier
    return _balanced(runs[-1].group(0), left=True)


def _head(s: str) -> str:
    m = _SIDE.match(s)
    if not m or re.match(r"[a-z_]", s[m.end():]):
        return ""             # "= 4bytes", "= 2x": the number starts a word
    return _balanced(m.group(0), left=False)


def _balanced(side: str, *, left: bool) -> str:
    """Trim an unmatched parenthesis that belongs to the surrounding text ("(0 × inf = nan)")."""
    side = side.strip()
    while side and side.count("(") != side.count(")"):
        if left and side.startswith("(") and side.count("(") > side.count(")"):
            side = side[1:].strip()
        elif not left and side.endswith(")") and side.count(")") > side.count("("):
            side = side[:-1].strip()
        else:
            return ""
    return side
