"""What a reader of a markdown answer cell sees: the only text a written answer is scored on.

Rendered with markdown-it (CommonMark + tables, raw HTML allowed, as Jupyter renders it), then
HTML comments, <script>/<style>/<template>, elements with the ``hidden`` attribute and elements
styled invisible (display:none, visibility:hidden, opacity:0, font-size:0, transparent or white
text) are dropped, so keywords hidden from the reader earn nothing.  Math stays as its source
text ($\\epsilon$), code spans and blocks as their code.
"""
from __future__ import annotations

import functools
import re

from bs4 import BeautifulSoup, Comment

from .hidden_math import drop_invisible_math

_INVISIBLE_STYLE = re.compile(
    r"display\s*:\s*none|visibility\s*:\s*hidden|opacity\s*:\s*0(?:\.0+)?\s*(?:;|$)|font-size\s*:\s*0(?:px|em|rem|pt|%)?"
    r"\s*(?:;|$)|(?<![-\w])color\s*:\s*(?:transparent|white|#fff(?:fff)?\b|rgba\([^)]*,\s*0\s*\))", re.I)
_DROP_TAGS = ("script", "style", "template", "noscript", "head", "title", "meta", "link")
_BLOCK_TAGS = ("p", "div", "li", "br", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "blockquote", "table",
               "ul", "ol", "details", "summary", "hr", "section")
_ZERO_WIDTH = re.compile(r"[\u200b-\u200f\u2060-\u2064\ufeff\u00ad]")


@functools.lru_cache(maxsize=1)
def _md():
    from markdown_it import MarkdownIt
    return MarkdownIt("commonmark", {"html": True}).enable("table")


def _hidden(tag) -> bool:
    if tag.has_attr("hidden"):
        return True
    style = tag.get("style") or ""
    color = (tag.get("color") or "").strip().lower()        # <font color="white">
    return bool(_INVISIBLE_STYLE.search(style)) or color in ("white", "#fff", "#ffffff", "transparent")


def visible_text(markdown: str) -> str:
    """The text a reader sees in a rendered markdown cell (block elements end a line)."""
    if not markdown or not markdown.strip():
        return ""
    src = drop_invisible_math(_ZERO_WIDTH.sub("", markdown))
    # $...$ math is not CommonMark: protect it from emphasis parsing (a_1 * b_2 stays as written)
    maths = []

    def keep(m):
        maths.append(m.group(0))
        return f"\ue000{len(maths) - 1}\ue001"
    src = re.sub(r"\$\$.+?\$\$|\$[^$\n]+\$", keep, src, flags=re.S)
    # an asterisk between two ASCII operands is multiplication, not emphasis: "blockIdx.x*blockDim.x + threadIdx.x"
    # (CommonMark would render "a*b + c*d" as "a<em>b + c</em>d"); emphasis opens after a space or punctuation
    src = re.sub(r"(?<=[A-Za-z0-9_.)\]])\*{1,2}(?=[A-Za-z0-9_(])", lambda m: "\ue002" * len(m.group(0)), src)
    soup = BeautifulSoup(_md().render(src), "html.parser")
    for c in soup.find_all(string=lambda s: isinstance(s, Comment)):
        c.extract()
    for tag in soup.find_all(_DROP_TAGS):
        tag.decompose()
    for tag in soup.find_all(True):
        if tag.decomposed:
            continue
        if _hidden(tag):
            tag.decompose()
    for tag in soup.find_all(_BLOCK_TAGS):
        tag.insert_after("\n")
    text = soup.get_text()
    text = re.sub(r"\ue000(\d+)\ue001", lambda m: maths[int(m.group(1))], text)
    text = text.replace("\ue002", "*")
    text = re.sub(r"[ \t]+\n", "\n", text)
    return re.sub(r"\n{3,}", "\n\n", text).strip()
