"""Math a reader does not see: MathJax renders ``\\phantom``, white or transparent ``\\color`` /
``\\textcolor``, and ``\\style`` / ``\\bbox`` / ``\\class`` bodies styled invisible as nothing, so words hidden
there earn nothing (``visible.visible_text`` drops them before rendering the markdown).
"""
from __future__ import annotations

import re

__all__ = ["drop_invisible_math"]

# math as Jupyter renders it (MathJax): $$..$$, $..$, \[..\], \(..\), \begin{env}..\end{env}
_MATH = re.compile(r"\$\$.+?\$\$|\$[^$\n]+\$|\\\[.+?\\\]|\\\(.+?\\\)|\\begin\{([a-zA-Z*]+)\}.*?\\end\{\1\}", re.S)
_COMMAND = re.compile(r"\\(phantom|hphantom|vphantom|color|textcolor|mathcolor|style|bbox|class|cssId)(?![a-zA-Z])")
_HIDDEN_CSS = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden|opacity\s*:\s*0(?:\.0*)?(?![.\d])"
                         r"|font-size\s*:\s*0(?![.\d])|(?<![-\w])color\s*:\s*([^;]+)", re.I)
_HIDDEN_CLASS = re.compile(r"\b(hidden|invisible|d-none|sr-only|visually-hidden)\b", re.I)
_PALE = {"white", "transparent", "none", "snow", "ghostwhite", "whitesmoke", "ivory", "floralwhite", "mintcream",
         "azure", "aliceblue", "seashell", "honeydew", "lavenderblush"}


def _group(s: str, i: int):
    """``(content, end)`` of the brace group or bracket option starting at ``s[i]`` (after blanks), else a
    single token; ``None`` at the end of the text."""
    while i < len(s) and s[i] in " \t\n":
        i += 1
    if i >= len(s):
        return None
    close = {"{": "}", "[": "]"}.get(s[i])
    if close is None:                             # \phantom x, \color red: one token
        m = re.match(r"\\[a-zA-Z]+|.", s[i:], re.S)
        return m.group(0), i + len(m.group(0))
    depth, j = 0, i
    while j < len(s):
        if s[j] == "\\":
            j += 2
            continue
        if s[j] == s[i]:
            depth += 1
        elif s[j] == close:
            depth -= 1
            if depth == 0:
                return s[i + 1:j], j + 1
        j += 1
    return s[i + 1:], len(s)


def _pale(color: str, model: str = "") -> bool:
    """A colour a reader cannot see on the notebook's white page."""
    c = color.strip().lower().replace(" ", "")
    if c in _PALE or re.fullmatch(r"rgba\(.*,0(\.0*)?\)", c):
        return True
    nums = [float(x) for x in re.findall(r"\d+(?:\.\d+)?", c)] if model or c.startswith("rgb") else []
    if re.fullmatch(r"#?[0-9a-f]{3}|#?[0-9a-f]{6}", c) and (c.startswith("#") or model.lower() == "html"):
        h = c.lstrip("#")
        h = "".join(ch * 2 for ch in h) if len(h) == 3 else h
        nums, model = [int(h[k:k + 2], 16) for k in (0, 2, 4)], "RGB"
    if model.lower() == "gray" and len(nums) == 1:
        return nums[0] >= 0.94
    if len(nums) in (3, 4):
        top = 255 if (model == "RGB" or c.startswith("rgb") or max(nums[:3]) > 1) else 1
        return min(nums[:3]) >= 0.94 * top
    return False


def _hidden_css(css: str) -> bool:
    for m in _HIDDEN_CSS.finditer(css or ""):
        if m.group(1) is None or _pale(m.group(1)):
            return True
    return False


def _strip_math(m: str) -> str:
    """One math span with what MathJax would not show dropped: ``\\phantom`` and friends, text coloured
    white or transparent (``\\color`` to the end of its group, ``\\textcolor``), ``\\style`` / ``\\bbox`` /
    ``\\class`` bodies styled invisible."""
    out, i = [], 0
    while True:
        c = _COMMAND.search(m, i)
        if c is None:
            out.append(m[i:])
            return "".join(out)
        out.append(m[i:c.start()])
        cmd, j = c.group(1), c.end()
        if cmd in ("phantom", "hphantom", "vphantom"):
            g = _group(m, j)
            i = g[1] if g else len(m)
            out.append(" ")
            continue
        model = ""
        if cmd in ("color", "textcolor", "mathcolor", "bbox"):
            g = _group(m, j)
            if g and m[j:g[1]].lstrip().startswith("["):
                model, j = g[0], g[1]
        if cmd == "bbox":
            body = _group(m, j)
            if body and _hidden_css(model):
                i = body[1]
                continue
            i = j
            continue
        arg = _group(m, j)
        if arg is None:
            out.append(m[c.start():])
            return "".join(out)
        if cmd == "color":
            if _pale(arg[0], model):          # to the end of the enclosing group (or of the math)
                depth, k = 0, arg[1]
                while k < len(m):
                    if m[k] == "\\":
                        k += 2
                        continue
                    if m[k] == "{":
                        depth += 1
                    elif m[k] == "}":
                        if depth == 0:
                            break
                        depth -= 1
                    k += 1
                i = min(k, len(m))
                continue
            i = arg[1]
            continue
        body = _group(m, arg[1])
        hidden = (_pale(arg[0], model) if cmd in ("textcolor", "mathcolor") else
                  _hidden_css(arg[0]) if cmd == "style" else bool(_HIDDEN_CLASS.search(arg[0])))
        if body is not None and hidden:
            i = body[1]
            continue
        i = arg[1]                            # keep the body, drop the (visible) styling command


def drop_invisible_math(markdown: str) -> str:
    """``markdown`` with what its math would not show a reader removed (see ``_strip_math``)."""
    if not markdown or "\\" not in markdown:
        return markdown or ""

    def one(m):
        text = m.group(0)
        env = re.match(r"\\begin\{[a-zA-Z*]+\}", text)
        opener = env.group(0) if env else next(d for d in ("$$", "$", "\\[", "\\(") if text.startswith(d))
        closer = {"$$": "$$", "$": "$", "\\[": "\\]", "\\(": "\\)"}.get(opener) or text[text.rindex("\\end{"):]
        return opener + (_strip_math(text[len(opener):len(text) - len(closer)]) or " ") + closer
    return _MATH.sub(one, markdown)
