"""Scoring free-text answers (Chinese, English, mixed) against a rubric entry.

A rubric names *concepts* (synonym groups), *chains* (cause concept -> effect
concept that must appear in one sentence joined by a causal connective), and
*misconceptions* (regexes that veto, with the matched sentence as evidence).
A term-only answer (concepts listed, no causal language around them) scores at
most 1 point however many terms it names.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional

CONNECTIVES = [
    "因为", "由于", "所以", "因此", "因而", "导致", "使得", "从而", "于是", "否则", "会", "造成", "引起",
    "以致", "进而", "则", "就(?!是)", "→", "->", "=>", "⇒", "⟹",
    r"\bbecause\b", r"\bso\b", r"\btherefore\b", r"\bthus\b", r"\bhence\b", r"\bleads? to\b", r"\bcaus(?:e|es|ed|ing)\b",
    r"\bresults? in\b", r"\botherwise\b", r"\bwhich means\b", r"\bdue to\b", r"\bsince\b",
    r"\bwill\b", r"\bproduc(?:e|es|ing)\b", r"\bif\b.*\bthen\b",
]
_CONNECTIVE_RE = re.compile("|".join(CONNECTIVES), re.I)
NEGATIONS = r"(不是|并非|并不|而非|而不是|不为|没有|无需|不用|不会|不能|不需要|绝非|不在于|不(?![同少止断足仅过久])|\bnot\b|\bno\b|\bnever\b|n't\b|rather than|instead of)"
_NEG_RE = re.compile(NEGATIONS, re.I)
_SENTENCE_SPLIT = re.compile(r"[。！？!?;\n]+|\.(?=\s|$)")
_CLAUSE_SPLIT = re.compile(r"[,，、:：]|\bbut\b|但是|但|而是")


class RubricSpecError(ValueError):
    pass


# ----------------------------------------------------------------------------- normalisation

def normalize(text: str) -> str:
    """Full-width -> half-width, markdown/LaTeX/code markup stripped, lower case; keeps sentence punctuation."""
    t = unicodedata.normalize("NFKC", text or "")
    t = re.sub(r"```[a-zA-Z0-9_+-]*\n?", " ", t)                  # fenced code markers (keep the code)
    t = re.sub(r"</?(br|p|div|span|b|i|u|em|strong|sup|sub|code|pre|font|li|ul|ol|img|details|summary)"
               r"(\s[^<>\n]*)?/?>", " ", t, flags=re.I)                 # html tags (not static_cast<float>, a < b > c)
    t = t.replace("`", " ")
    t = re.sub(r"\\(?:mathbb|mathrm|text|operatorname|mathbf|mathit)\{([^}]*)\}", r"\1", t)
    t = re.sub(r"\\(left|right|displaystyle|quad|qquad|,|;|!)", " ", t)
    t = re.sub(r"\\d?frac\{([^{}]*)\}\{([^{}]*)\}", r"(\1)/(\2)", t)
    t = re.sub(r"\\(to|rightarrow|Rightarrow|longrightarrow|implies)(?![a-zA-Z])", " → ", t)
    t = re.sub(r"\\(geq?|ge)(?![a-zA-Z])", " >= ", t)
    t = re.sub(r"\\(leq?|le)(?![a-zA-Z])", " <= ", t)
    t = re.sub(r"\\(cdot|times)(?![a-zA-Z])", " * ", t)
    t = re.sub(r"\\([a-zA-Z]+)", r" \1 ", t)                     # \epsilon -> epsilon, \sqrt -> sqrt
    t = t.replace("$", " ").replace("{", "").replace("}", "")
    t = re.sub(r"\*\*|~~", "", t)
    t = re.sub(r"(?<!\w)__([^\s_][^_\n]*?[^\s_]|[^\s_])__(?!\w)", r"\1", t)   # __bold__, not __syncthreads
    t = re.sub(r"(?m)^\s{0,3}(#{1,6}|>|[-*+]|\d+[.)])\s+", "", t)  # headings, quotes, list markers
    # English comparisons as symbols, so "eps is smaller than 1e-7" meets the same synonym as "eps < 1e-7"
    t = re.sub(r"\b(?:is |are |was )?(?:smaller|less|lower) than\b", " < ", t, flags=re.I)
    t = re.sub(r"\b(?:is |are |was )?(?:greater|larger|bigger|higher) than\b", " > ", t, flags=re.I)
    t = re.sub(r"[ \t\u3000]+", " ", t)
    return t.lower().strip()


def sentences(text: str) -> List[str]:
    return [s.strip() for s in _SENTENCE_SPLIT.split(text) if s and s.strip()]


_LIGHT = re.compile(r" \?|\([^()]*\|[^()]*\)")


def _light_pattern(syn: str) -> str:
    """The rubric's light notation (used without "re:"): " ?" = optional space, "(a|b|c)" = one of;
    everything else literal.  ("取决于 ?eps", "eps ?(<=|≤|<|小于) ?1e-7")"""
    out, pos = [], 0
    for m in re.finditer(r" \?|\(([^()]*\|[^()]*)\)| ", syn):
        out.append(re.escape(syn[pos:m.start()]))
        tok = m.group(0)
        if tok.startswith("("):
            out.append("(?:" + "|".join(re.escape(a).replace(r"\ ", r"\s*") for a in m.group(1).split("|")) + ")")
        else:
            out.append(r"\s*")
        pos = m.end()
    out.append(re.escape(syn[pos:]))
    return "".join(out)


def _syn_regex(syn: str) -> str:
    if syn.startswith("re:"):
        return syn[3:]
    norm = unicodedata.normalize("NFKC", syn).lower()
    if _LIGHT.search(norm):
        esc = _light_pattern(norm)
    else:
        esc = re.escape(norm)
    esc = esc.replace(r"\ ", r"\s*")
    if re.match(r"[a-z0-9_]", syn.lower()):
        esc = r"(?<![a-z0-9_])" + esc       # ASCII synonyms start a word; longer ones match prefixes ("coalesc")
        if len(syn) <= 4 and re.search(r"[a-z0-9_]$", syn.lower()):
            esc += r"(?![a-z0-9_])"          # short ones are whole words: "nan" must not hit "nano"
    return esc


def concept_regex(spec: Dict[str, Any]) -> re.Pattern:
    return re.compile("|".join(f"(?:{_syn_regex(s)})" for s in spec["any"]), re.I)


# ----------------------------------------------------------------------------- results

@dataclass
class RubricResult:
    points: float
    max_points: float
    concepts_hit: List[str] = field(default_factory=list)
    concepts_missed: List[str] = field(default_factory=list)
    chains_found: List[Dict[str, str]] = field(default_factory=list)
    chains_missed: List[str] = field(default_factory=list)
    term_only: bool = False
    keyword_stuffing: bool = False
    misconceptions: List[Dict[str, str]] = field(default_factory=list)
    nudge: str = ""
    message: str = ""

    def to_dict(self):
        return asdict(self)


def validate(spec: Dict[str, Any]) -> None:
    """Raise RubricSpecError (a ValueError) on a malformed rubric entry."""
    from .config import RubricError
    if not isinstance(spec, dict):
        raise RubricError("expected a mapping")
    allowed = {"concepts", "full", "partial", "chains", "misconceptions", "nudge"}
    extra = set(spec) - allowed
    if extra:
        raise RubricError(f"{sorted(extra)[0]}: unknown key (allowed: {', '.join(sorted(allowed))})")
    concepts = spec.get("concepts")
    if not isinstance(concepts, dict) or not concepts:
        raise RubricError("concepts: expected a non-empty mapping of concept groups")
    for cid, c in concepts.items():
        if not isinstance(c, dict) or not isinstance(c.get("any"), list) or not c["any"]:
            raise RubricError(f"concepts.{cid}.any: expected a non-empty list of synonyms")
        try:
            concept_regex(c)
        except re.error as exc:
            raise RubricError(f"concepts.{cid}.any: bad regex: {exc}") from None
    for i, ch in enumerate(spec.get("chains") or []):
        if not (isinstance(ch, list) and len(ch) == 2 and all(x in concepts for x in ch)):
            raise RubricError(f"chains[{i}]: expected [cause_concept, effect_concept] naming concepts")
    for i, m in enumerate(spec.get("misconceptions") or []):
        if not isinstance(m, dict) or "pattern" not in m:
            raise RubricError(f"misconceptions[{i}]: expected {{pattern, why}}")
        try:
            re.compile(m["pattern"])
        except re.error as exc:
            raise RubricError(f"misconceptions[{i}].pattern: bad regex: {exc}") from None
    for k in ("full", "partial"):
        v = spec.get(k) or {}
        if not isinstance(v, dict) or set(v) - {"concepts", "chains", "points"}:
            raise RubricError(f"{k}: expected {{concepts: N, chains: N}}")


_LEADING = re.compile(r"因为|由于|如果|若|一旦|当|\bif\b|\bbecause\b|\bsince\b|\bwhen\b|\bonce\b", re.I)


def _linked(sentence: str, cause: re.Pattern, effect: re.Pattern) -> bool:
    """A connective between a cause match and an effect match (either order: "A 导致 B", "B because A"),
    or a leading one ("因为/如果/if/when" before both: "因为 A，B")."""
    cs = [(m.start(), m.end()) for m in cause.finditer(sentence)]
    es = [(m.start(), m.end()) for m in effect.finditer(sentence)]
    conns = [m.start() for m in _CONNECTIVE_RE.finditer(sentence)]
    for c0, c1 in cs:
        for e0, e1 in es:
            lo, hi = min(c1, e1), max(c0, e0)
            if any(lo <= k <= hi for k in conns):
                return True
            first = min(c0, e0)
            if any(m.start() < first for m in _LEADING.finditer(sentence)):
                return True
    return False


def _negated(sentence: str, start: int, end: int, inside: bool = True) -> bool:
    """Negation in the same clause before the match, or inside it when ``inside``
    (a pattern that itself spells a negation, e.g. "不可能为负", only looks before)."""
    clause_start = 0
    for m in _CLAUSE_SPLIT.finditer(sentence, 0, start):
        clause_start = m.end()
    return bool(_NEG_RE.search(sentence[clause_start:end if inside else start]))


def find_misconceptions(text: str, misconceptions) -> List[Dict[str, str]]:
    out = []
    for sent in sentences(normalize(text)):
        for m in misconceptions or []:
            for hit in re.finditer(m["pattern"], sent, re.I):
                if _negated(sent, hit.start(), hit.end(), inside=not _NEG_RE.search(m["pattern"])):
                    continue
                out.append({"pattern": m["pattern"], "why": m.get("why", ""),
                            "evidence": sent if len(sent) <= 80 else sent[:77] + "…"})
                break
    return out


def is_blank(text: str) -> bool:
    return len(re.sub(r"\W", "", normalize(text))) < 2


# English function words a written sentence almost always has and a pasted keyword list lacks.
_FUNCTION = re.compile(r"(the|a|an|is|are|was|were|be|to|of|in|on|and|or|it|its|this|that|will|can|by|with|for|"
                       r"into|from|as|each|every|which|we|you|they|not|no|has|have|at|gets?|makes?|becomes?)", re.I)


def keyword_list(sentence: str) -> bool:
    """A "sentence" that is really a pasted list of terms (keyword stuffing).

    Chinese prose never puts a space between two Chinese words, so several
    "词 词" gaps between short Chinese runs mark a term list; an ASCII-only
    sentence is a term list when it has many words and (almost) no function words.
    """
    runs = _CJK_RUN.findall(sentence)
    if runs:
        gaps = len(_CJK_GAP.findall(sentence))
        return gaps >= 4 and sum(len(r) for r in runs) / len(runs) <= 4
    if len(re.findall(r"[=*/+<>]", sentence)) >= 2:      # code or a formula, not a term list
        return False
    words = [w for w in re.split(r"[\s,;:()]+", sentence) if re.fullmatch(r"[a-z][a-z0-9_'-]*", w, re.I)]
    if len(words) < 8:
        return False
    return sum(1 for w in words if _FUNCTION.fullmatch(w)) <= len(words) // 8


_CJK_RUN = re.compile(r"[\u4e00-\u9fff]+")
_CJK_GAP = re.compile(r"[\u4e00-\u9fff][ \t]+(?=[\u4e00-\u9fff])")


def _drop_copied(norm: str, prompt: str) -> tuple:
    """``norm`` without the sentences copied from the question text; ``(text, n_dropped)``."""
    pq = re.sub(r"\s+", "", normalize(prompt))
    kept, dropped = [], 0
    for s in sentences(norm):
        sq = re.sub(r"\s+", "", s)
        if len(re.sub(r"\W", "", sq)) >= 4 and sq in pq:
            dropped += 1
        else:
            kept.append(s)
    return "\n".join(kept), dropped


def score(text: str, spec: Dict[str, Any], points: float = 2, prompt: str = "") -> RubricResult:
    """Score one answer.  ``spec`` is an item's ``rubric`` mapping.  ``prompt``: the question
    text; sentences copied from it verbatim earn nothing."""
    concepts = spec["concepts"]
    labels = {cid: c.get("label", cid) for cid, c in concepts.items()}
    nudge = spec.get("nudge", "")
    norm = normalize(text)
    res = RubricResult(0, points, nudge=nudge)
    if len(re.sub(r"\W", "", norm)) < 2:
        res.concepts_missed = list(labels.values())
        res.message = "未作答"
        return res
    copied = 0
    if prompt:
        norm, copied = _drop_copied(norm, prompt)
        if len(re.sub(r"\W", "", norm)) < 2:
            res.concepts_missed = list(labels.values())
            res.message = "未作答：答案只是复制了题目原文（0 分），请用自己的话回答"
            return res
    sents = sentences(norm)
    stuffed = [keyword_list(s) for s in sents]
    regs = {cid: concept_regex(c) for cid, c in concepts.items()}
    in_sent = {cid: [i for i, s in enumerate(sents) if r.search(s)] for cid, r in regs.items()}
    hit = [cid for cid, idx in in_sent.items() if idx]
    res.concepts_hit = [labels[c] for c in hit]
    res.concepts_missed = [labels[c] for c in concepts if c not in hit]
    causal = [bool(_CONNECTIVE_RE.search(s)) and not stuffed[i] for i, s in enumerate(sents)]
    for cause, effect in spec.get("chains") or []:
        found = None
        for i in sorted(set(in_sent[cause]) & set(in_sent[effect])):
            if causal[i] and _linked(sents[i], regs[cause], regs[effect]):
                found = sents[i]
                break
        if found is not None:
            res.chains_found.append({"cause": labels[cause], "effect": labels[effect],
                                     "evidence": found if len(found) <= 80 else found[:77] + "…"})
        else:
            res.chains_missed.append(f"{labels[cause]} → {labels[effect]}")
    # term-only: no sentence that names a concept also uses causal language
    concept_sents = {i for idx in in_sent.values() for i in idx}
    res.term_only = bool(hit) and not any(causal[i] for i in concept_sents)
    full = spec.get("full") or {"concepts": len(concepts), "chains": 1 if spec.get("chains") else 0}
    partial = spec.get("partial") or {"concepts": max(1, (full.get("concepts", 1) + 1) // 2)}
    n_concepts, n_chains = len(hit), len(res.chains_found)

    def meets(level):
        return n_concepts >= level.get("concepts", 0) and n_chains >= level.get("chains", 0)

    if meets(full):
        res.points = float(full.get("points", points))
    elif meets(partial):
        res.points = float(partial.get("points", 1))
    if res.term_only:
        res.points = min(res.points, 1.0)
    concept_sents_n = len(concept_sents)
    res.keyword_stuffing = bool(concept_sents) and \
        sum(1 for i in concept_sents if stuffed[i]) * 2 >= concept_sents_n
    if res.keyword_stuffing:      # a pasted term list: at most half the points, whatever it names
        res.points = min(res.points, float(points) / 2)
    res.points = min(res.points, float(points))
    res.misconceptions = find_misconceptions(text, spec.get("misconceptions"))
    res.message = _message(res)
    if copied:
        res.message += f"；有 {copied} 句是照抄题目，不计分"
    return res


def _message(res: RubricResult) -> str:
    if res.points >= res.max_points and not res.misconceptions:
        return (f"{res.points:g}/{res.max_points:g} 分（命中 {len(res.concepts_hit)} 个概念，"
                f"{len(res.chains_found)} 条因果链）")
    parts = [f"{res.points:g}/{res.max_points:g} 分"]
    if res.concepts_hit:
        parts.append("命中概念：" + "、".join(res.concepts_hit))
    if res.concepts_missed:
        parts.append("缺少：" + "、".join(res.concepts_missed))
    if res.chains_found:
        parts.append("因果链：" + "；".join(f"{c['cause']} → {c['effect']}" for c in res.chains_found))
    if res.keyword_stuffing:
        parts.append("答案像是关键词堆砌（一串术语，没有成句的解释），最多得一半分")
    elif res.term_only:
        parts.append("只列出了术语，没有说明因果关系（最多 1 分）")
    if res.misconceptions:
        parts.append("概念错误：" + "；".join(m["why"] or m["evidence"] for m in res.misconceptions))
    if res.points < res.max_points and res.nudge:
        parts.append("提示：" + res.nudge)
    return "；".join(parts)
