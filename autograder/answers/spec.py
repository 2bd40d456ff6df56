"""A written item's ``rubric:`` block (the claim format, docs/grading.md) compiled for matching.

Validation and compilation are one pass, so a spec that validates is a spec that runs:
``compile_spec`` raises ``SpecError`` naming the key path; ``validate`` is that check alone.
Compiled specs are cached by content (rubric files are reloaded when they change).
"""
from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import yaml

from .normalise import normalise

SPEC_KEYS = {"parts", "claims", "misconceptions", "points", "nudge"}
CLAIM_KEYS = {"id", "label", "topic", "core", "says", "contradicts", "why", "asks"}
MISCONCEPTION_KEYS = {"id", "says", "why", "veto", "unless"}
POINTS_KEYS = {"full", "partial", "contradiction", "term_list"}
CONTRADICTION_POLICIES = ("zero", "cancel")

# Units a number slot may name; a list of paraphrases is accepted too.
UNITS = {
    "bytes": ["字节", "byte", "bytes", "b"],
    "bits": ["位", "bit", "bits", "比特", "significant bits", "significand bits", "mantissa bits", "bits of (mantissa|precision)"],
    "passes": ["遍", "次", "pass", "passes", "times", "reads", "趟"],
    "x": ["倍", "x"],
}


class SpecError(ValueError):
    """A malformed rubric block; the message starts with the key path."""


@dataclass(frozen=True)
class Number:
    """A number slot: ``value`` (or, with ``other``, any other value) followed by ``unit``."""
    value: float
    other: bool = False
    unit: Optional[re.Pattern] = None
    tol: float = 1e-9                    # relative


@dataclass(frozen=True)
class Part:
    """One element of a pattern: paraphrases and/or number slots (alternatives)."""
    name: str
    regex: Optional[re.Pattern]          # the paraphrases (None: number slots only)
    negation_inside: bool = False        # every paraphrase spells a negation itself ("不可能为负")
    negated: bool = False                # "not:name": must appear negated ("不会溢出")
    numbers: Tuple[Number, ...] = ()


@dataclass(frozen=True)
class Claim:
    id: str
    label: str
    topic: str
    core: bool
    says: Tuple[Tuple[Part, ...], ...]
    contradicts: Tuple[Tuple[Part, ...], ...]
    why: str
    asks: str = ""                       # the part of the question it answers: full points need every one


@dataclass(frozen=True)
class Misconception:
    id: str
    says: Tuple[Tuple[Part, ...], ...]
    why: str
    veto: bool = True                    # false: it zeroes the item like a contradiction, without a veto
    unless: Optional[Part] = None        # not when this comes first in the sentence ("缩放之后就可以直接相加")


@dataclass(frozen=True)
class Spec:
    claims: Tuple[Claim, ...]
    misconceptions: Tuple[Misconception, ...]
    full: int
    partial: int
    contradiction: str
    term_list: float                     # share of claims whose terms a term list must name for 1 point
    nudge: str
    term_parts: Tuple[Part, ...]         # every paraphrase group the claims use (term coverage)


_NEG_WORD = re.compile(r"不|没|未|无(?!穷|限)|非|\bnot\b|\bno\b|\bnever\b|\bcan not\b|\bwithout\b")


_CJK = re.compile(r"[\u4e00-\u9fff]")


def _literal(piece: str) -> str:
    """A literal stretch of a paraphrase as a regex: a space is optional spaces, and between two
    words of which one is Chinese an attributive 的 is optional both ways ("不同的 bank" = "不同
    bank", "树的形状" = "树形状"): Chinese marks the same relation with and without it.  Word
    boundaries come from jieba with the course dictionary, so 的 is never inserted inside a term."""
    if not _CJK.search(piece):
        return re.sub(r"(?<=[a-z])\\ (?=[a-z])", lambda m: _WORD_GAP, re.escape(piece)).replace(r"\ ", r"\s*")
    from .normalise import _jieba
    toks = [w for w in _jieba().lcut(piece, HMM=False) if w]
    out = []
    for i, w in enumerate(toks):
        if w == "的":
            out.append("(?:的)?")
            continue
        if w.isspace():
            out.append(r"\s*")
        else:
            out.append(re.escape(w))
        nxt = toks[i + 1] if i + 1 < len(toks) else ""
        if nxt and nxt != "的" and not w.isspace() and not nxt.isspace() and _de_between(w[-1], nxt[0]):
            out.append("(?:的)?")
    return "".join(out)


# Between two English words of a paraphrase an article, auxiliary or adverb may stand ("never written"
# = "never be written", "same row" = "the same row", "is coalesced" = "is then coalesced"); a word
# that carries meaning ("large negative values" is not "large values") may not.
_WORD_GAP = (r"\s*(?:(?:the|a|an|be|been|being|is|are|was|were|would|will|can|could|should|may|might|must|"
             r"then|also|only|just|all|even|ever|still|always|actually|really|already|its|their|this|that)\s+){0,2}")


def _de_between(left: str, right: str) -> bool:
    """Whether an attributive 的 may stand between these two characters: one is Chinese, the other
    Chinese or a letter (not a digit: "1个" is a numeral and its measure word)."""
    word = re.compile(r"[\u4e00-\u9fffa-z_]")
    return bool(word.match(left) and word.match(right) and (_CJK.match(left) or _CJK.match(right)))


def _light(syn: str) -> str:
    """Light notation: " ?" = optional space, "s?" / "-?" = optional character, "(a|b)" = one of, "(a)?" / "(a|b)?"
    = optional, groups nest ("(偏(一点|一些)?|不准)"), a space = optional spaces; everything else literal
    ("rsqrtf(0)", "mean(x^2)" match as written), with an optional 的 between Chinese words (``_literal``)."""
    out, lit, i = [], 0, 0

    def flush(upto):
        out.append(_literal(syn[lit:upto]))

    while i < len(syn):
        c = syn[i]
        if c == "(":
            j = _closing(syn, i)
            if j < 0:
                i += 1                    # an unmatched parenthesis is literal
                continue
            inner, opt = syn[i + 1:j], syn[j + 1:j + 2] == "?"
            alts = _top_level_split(inner)
            flush(i)
            if len(alts) > 1 or opt:      # "(32 ?路)?": notation inside too
                out.append("(?:" + "|".join(_light(x) for x in alts) + ")" + ("?" if opt else ""))
            else:                         # plain parentheses are literal, what they hold is notation ("exp(m ?- ?m_new)")
                out.append(re.escape("(") + _light(inner) + re.escape(")"))
            i = j + 1 + opt
            lit = i
        elif c == " ":                    # a space (or " ?"): optional spaces, and a 的 between Chinese words
            flush(i)
            end = i + 2 if syn[i + 1:i + 2] == "?" else i + 1
            around = (syn[i - 1:i] or " ", syn[end:end + 1] or " ")
            out.append(r"\s*(?:的\s*)?" if _de_between(*around) else
                       _WORD_GAP if all(re.match(r"[a-z]", x) for x in around) else r"\s*")
            i = lit = end
        elif syn[i + 1:i + 2] == "?" and c not in "()?":
            flush(i)
            out.append(re.escape(c) + "?")
            i = lit = i + 2
        else:
            i += 1
    flush(len(syn))
    return "".join(out)


def _closing(syn: str, i: int) -> int:
    depth = 0
    for k in range(i, len(syn)):
        depth += {"(": 1, ")": -1}.get(syn[k], 0)
        if depth == 0:
            return k
    return -1


def _top_level_split(inner: str) -> List[str]:
    parts, depth, start = [], 0, 0
    for k, ch in enumerate(inner):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == "|" and depth == 0:
            parts.append(inner[start:k])
            start = k + 1
    return parts + [inner[start:]]


# English words that are not inflected in a paraphrase: function words and symbols ("not" must not hit "noted",
# "inf" not "infer", "off" not "offer")
_UNINFLECTED = {"not", "non", "nor", "no", "off", "on", "in", "of", "to", "and", "but", "yet", "can", "may", "was",
                "has", "had", "the", "inf", "nan", "eps", "max", "min", "exp", "log", "if", "or", "is", "it", "be"}


def _inflected(body: str, norm: str, short: bool = True) -> str:
    """``body`` (the regex of ``norm``) with the English inflections of its last word: -s / -es / -ed / -er / -ing,
    a final e dropped before -ing / -ed ("use" -> "using", "used"), y -> ies / ied / ier ("copy" -> "copies"), a
    final consonant doubled ("stop" -> "stopped").  A paraphrase longer than four letters already matches as a
    prefix ("coalesc" hits "coalesced"), so for it (``short`` false) only the dropped e and y are added."""
    m = re.search(r"(?<![a-z0-9_])([a-z]{3,})$", norm)
    if not m or m.group(1) in _UNINFLECTED or not body.endswith(m.group(1)[-1]):
        return body
    w, stem = m.group(1), body[:-1]
    if w.endswith("e"):
        return stem + ("(?:e(?:s|d|rs?)?|ing)" if short else "(?:e|(?=ing))")
    if re.search(r"[^aeiou]y$", w):
        return stem + ("(?:y(?:s|ing)?|ie[sdr])" if short else "(?:y|ie[sdr])")
    if not short:
        return body
    double = w[-1] + "(?:ed|er|ing)|" if re.search(r"[^aeiou][aeiou][bdgklmnprt]$", w) else ""
    return body + f"(?:{double}es|e[dr]s?|s|ing)?"


_BARE_ALTERNATION = re.compile(r"[\u4e00-\u9fff]\|[\u4e00-\u9fff]|[a-z]{2}\|[a-z]{2}")


def _without_groups(norm: str) -> str:
    while True:
        out = re.sub(r"\([^()]*\)", "", norm)
        if out == norm:
            return out
        norm = out


def _paraphrase_regex(syn: str, where: str) -> str:
    if not isinstance(syn, str) or not syn.strip():
        raise SpecError(f"{where}: expected a non-empty string")
    if syn.startswith("re:"):
        body = syn[3:]
    else:
        # a backslash before a sign (p ?\+ ?d/2, x\[t\]) is regex habit: the sign itself is meant
        norm = re.sub(r"\\([^\w\s])", r"\1", normalise(syn))
        if not norm:
            raise SpecError(f"{where}: {syn!r} is empty after normalisation")
        if _BARE_ALTERNATION.search(_without_groups(norm)):
            # '导致|造成' would match only the literal text with the bar in it ("|x|" is an absolute value)
            raise SpecError(f"{where}: {syn!r}: a | between two words outside parentheses is literal here; "
                            f"write '(导致|造成)' or two paraphrases")
        body = _light(norm)
        if re.match(r"[a-z0-9_]", norm):
            body = r"(?<![a-z0-9_])" + body        # ASCII paraphrases start a word ("coalesc" hits "coalesced")
            if len(norm) <= 4 and re.search(r"[a-z0-9_]$", norm):
                # short ones are whole words ("nan" misses "nano"), but an English word keeps its inflections:
                # "slow" hits "slows", "slowed", "slower", "slowing"
                body = _inflected(body, norm) + r"(?![a-z0-9_]|\.\d)"
            else:
                body = _inflected(body, norm, short=False)
        if re.match(r"\d", norm):
            body = r"(?<!第)(?<![0-9.])" + body    # "2 ?遍" is a count, not the ordinal in "第2遍"
        if re.search(r"\d$", norm):
            body += r"(?![0-9]|\.\d)"              # "= 0" is not "= 0.5" or "= 01"
        elif re.search(r"[a-z]$", norm) and not re.match(r"[a-z0-9_]", norm):
            body = _inflected(body, norm) + r"(?![a-z0-9])"
    try:
        re.compile(body)
    except re.error as exc:
        raise SpecError(f"{where}: bad regex {syn!r}: {exc}") from None
    return body


def _group(name: str, alternatives: Any, where: str) -> Part:
    if isinstance(alternatives, (str, dict)):
        alternatives = [alternatives]
    if not isinstance(alternatives, list) or not alternatives:
        raise SpecError(f"{where}: expected a non-empty list of paraphrases")
    texts = [a for a in alternatives if not isinstance(a, dict)]
    for i, a in enumerate(texts):
        if isinstance(a, str) and a.startswith("not:"):
            # a list holds paraphrases: 'not:x' there would be the literal text "not:x", which no answer writes
            raise SpecError(f"{where}[{i}]: {a!r} in a list of paraphrases is literal text; a negated part is an "
                            f"element of the pattern itself ([..., {a!r}, ...]), or write the negation in the "
                            f"paraphrase ('不会溢出')")
    numbers = tuple(_number(a, f"{where}[{i}]") for i, a in enumerate(alternatives) if isinstance(a, dict))
    bodies = [_paraphrase_regex(s, f"{where}[{i}]") for i, s in enumerate(texts)]
    neg = bool(texts) and all(_NEG_WORD.search(normalise(s) if not s.startswith("re:") else s[3:]) for s in texts)
    regex = re.compile("|".join(f"(?:{b})" for b in bodies)) if bodies else None
    return Part(name, regex, negation_inside=neg, numbers=numbers)


def _number(el: Dict[str, Any], where: str) -> Number:
    extra = set(el) - {"num", "num_not", "unit", "tol"}
    if extra or ("num" in el) == ("num_not" in el):
        raise SpecError(f"{where}: a number slot is {{num: V | num_not: V, unit: U, tol: T}}")
    value = el.get("num", el.get("num_not"))
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise SpecError(f"{where}: number {value!r} is not a number") from None
    if "num_not" in el and el.get("unit") is None:
        raise SpecError(f"{where}: num_not needs a unit (any other number anywhere is not a claim)")
    return Number(value, "num_not" in el, _unit(el.get("unit"), f"{where}.unit"), float(el.get("tol", 1e-9)))


def _unit(unit: Any, where: str) -> Optional[re.Pattern]:
    if unit is None:
        return None
    syns = UNITS.get(unit, unit) if isinstance(unit, str) else unit
    if isinstance(syns, str):
        raise SpecError(f"{where}: unknown unit {unit!r} (known: {', '.join(UNITS)}, or a list of paraphrases)")
    # a unit follows its number directly ("128b", "16 字节"): no word-start guard
    bodies = [_paraphrase_regex(x, f"{where}").replace(r"(?<![a-z0-9_])", "", 1) for x in syns]
    return re.compile("|".join(f"(?:{b})" for b in bodies))


def _element(el: Any, parts: Dict[str, Part], where: str) -> Part:
    if isinstance(el, str):
        negated = el.startswith("not:")
        name = el[4:] if negated else el
        if name not in parts:
            raise SpecError(f"{where}: {name!r} is not one of parts ({', '.join(sorted(parts)) or 'none'})")
        p = parts[name]
        return Part(p.name, p.regex, p.negation_inside, True, p.numbers) if negated else p
    if isinstance(el, list):
        return _group(f"inline:{'/'.join(map(str, el))[:40]}", el, where)
    if isinstance(el, dict):
        n = _number(el, where)
        return Part(f"number:{n.value:g}", None, numbers=(n,))
    raise SpecError(f"{where}: expected a part name, a list of paraphrases or a number slot")


def _patterns(raw: Any, parts: Dict[str, Part], where: str, required: bool) -> Tuple[Tuple[Part, ...], ...]:
    if raw is None and not required:
        return ()
    if not isinstance(raw, list) or (required and not raw):
        raise SpecError(f"{where}: expected a list of patterns (each a list of parts in order)")
    out = []
    for i, pat in enumerate(raw):
        if not isinstance(pat, list) or not pat:
            raise SpecError(f"{where}[{i}]: expected a non-empty list of parts")
        out.append(tuple(_element(el, parts, f"{where}[{i}][{j}]") for j, el in enumerate(pat)))
    return tuple(out)


def _unknown(d: Dict[str, Any], allowed, where: str):
    extra = set(d) - set(allowed)
    if extra:
        raise SpecError(f"{where}{sorted(extra)[0]}: unknown key (allowed: {', '.join(sorted(allowed))})")


def _compile(raw: Dict[str, Any]) -> Spec:
    if not isinstance(raw, dict):
        raise SpecError("expected a mapping with claims:")
    _unknown(raw, SPEC_KEYS, "")
    praw = raw.get("parts") or {}
    if not isinstance(praw, dict):
        raise SpecError("parts: expected a mapping of name -> paraphrases")
    parts = dict(_lexicon())
    parts.update({name: _group(name, syns, f"parts.{name}") for name, syns in praw.items()})
    craw = raw.get("claims")
    if not isinstance(craw, list) or not craw:
        raise SpecError("claims: expected a non-empty list of claims")
    claims, seen = [], set()
    for i, c in enumerate(craw):
        w = f"claims[{i}]"
        if not isinstance(c, dict):
            raise SpecError(f"{w}: expected a mapping")
        _unknown(c, CLAIM_KEYS, f"{w}.")
        cid = c.get("id")
        if not isinstance(cid, str) or not cid or cid in seen:
            raise SpecError(f"{w}.id: expected a unique non-empty string")
        seen.add(cid)
        label = c.get("label") or cid
        claims.append(Claim(cid, label, c.get("topic") or label, bool(c.get("core", False)),
                            _patterns(c.get("says"), parts, f"{w}.says", True),
                            _patterns(c.get("contradicts"), parts, f"{w}.contradicts", False),
                            c.get("why") or "", str(c.get("asks") or "")))
        if claims[-1].core and not claims[-1].contradicts:
            raise SpecError(f"{w}.core: a core claim needs contradicts: (what vetoes)")
    mis = []
    for i, m in enumerate(raw.get("misconceptions") or []):
        w = f"misconceptions[{i}]"
        if not isinstance(m, dict):
            raise SpecError(f"{w}: expected {{id, says, why}}")
        _unknown(m, MISCONCEPTION_KEYS, f"{w}.")
        if not m.get("why"):
            raise SpecError(f"{w}.why: say (in Chinese) why it is wrong; it is the veto message")
        unless = _group("unless", m["unless"], f"{w}.unless") if m.get("unless") else None
        mis.append(Misconception(m.get("id") or f"m{i}", _patterns(m.get("says"), parts, f"{w}.says", True),
                                 m["why"], bool(m.get("veto", True)), unless))
    pol = raw.get("points") or {}
    if not isinstance(pol, dict):
        raise SpecError("points: expected {full: N, partial: N, contradiction: zero|cancel, term_list: share}")
    _unknown(pol, POINTS_KEYS, "points.")
    full = pol.get("full", max(1, (len(claims) + 1) // 2))
    partial = pol.get("partial", 1)
    if not (isinstance(full, int) and isinstance(partial, int) and 1 <= partial <= full <= len(claims)):
        raise SpecError(f"points: need 1 <= partial <= full <= {len(claims)} (the number of claims)")
    contradiction = pol.get("contradiction", "zero")
    if contradiction not in CONTRADICTION_POLICIES:
        raise SpecError(f"points.contradiction: one of {', '.join(CONTRADICTION_POLICIES)}")
    term_parts = {}
    for c in claims:
        for pat in c.says:
            for p in pat:
                if p.regex is not None and not p.name.startswith("inline:") and not p.negated:
                    term_parts[p.name] = p
    return Spec(tuple(claims), tuple(mis), full, partial, contradiction, float(pol.get("term_list", 0.5)),
                raw.get("nudge") or "", tuple(term_parts.values()))


LEXICON = Path(__file__).with_name("lexicon.yaml")


@functools.lru_cache(maxsize=1)
def _lexicon() -> Dict[str, Part]:
    """The course-wide paraphrase families (lexicon.yaml), usable by every item."""
    raw = yaml.safe_load(LEXICON.read_text(encoding="utf-8")) or {}
    return {name: _group(name, syns, f"{LEXICON.name}:{name}") for name, syns in raw.items()}


@functools.lru_cache(maxsize=256)
def _compile_cached(key: str) -> Spec:
    return _compile(json.loads(key))


def compile_spec(raw: Dict[str, Any]) -> Spec:
    try:
        key = json.dumps(raw, sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError):
        return _compile(raw)
    return _compile_cached(key)


def validate(raw: Dict[str, Any]) -> None:
    """Raise SpecError (a ValueError naming the key path) on a malformed rubric block."""
    compile_spec(raw)


def claim_parts(claim: Claim) -> List[Part]:
    return [p for pat in claim.says for p in pat if p.regex is not None and not p.negated]
