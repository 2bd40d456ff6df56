"""Hint buttons (ipywidgets): one per hint item; a click shows the next level.

Running the cell (Run All included) only draws the buttons and the levels already seen;
only a click consumes a level, and level 4 (完整答案) asks for confirmation first. Every
level shown is recorded the way the grader reads it (``hints.record``: sidecar
``.hints/<notebook>.json``; and an ``application/vnd.autograder.hint+json`` output
appended to this cell by the course's JupyterLab extension, so the saved notebook
carries it too). Running the cell again re-emits the records of the levels seen.
"""
from __future__ import annotations

import html
from pathlib import Path
from typing import Any, Dict, List, Optional

from . import frontend, hints
from .notebook import HINT_MIME

_BOX = ("font-family: var(--jp-ui-font-family), 'Noto Sans CJK SC', 'WenQuanYi Zen Hei', sans-serif;"
        "border-left: 4px solid #bf8700; background: #fff8c5; padding: 4px 10px; margin: 3px 0; border-radius: 3px")


def record_output(lesson_id: str, item: str, level: int) -> Dict[str, Any]:
    """The nbformat display output that records one hint level (what ``hints.usage_from_notebook`` reads)."""
    name = hints.LEVEL_NAMES[level - 1] if level <= len(hints.LEVEL_NAMES) else f"第 {level} 级"
    return {"output_type": "display_data", "metadata": {},
            "data": {HINT_MIME: {"lesson": lesson_id, "item": item, "level": level},
                     "text/plain": f"（已记录：提示 {item} 第 {level} 级 · {name}）"}}


def _level_html(item: str, level: int, text: str) -> str:
    name = hints.LEVEL_NAMES[level - 1] if level <= len(hints.LEVEL_NAMES) else f"第 {level} 级"
    return (f'<div style="{_BOX}"><b>提示 {html.escape(item)} · 第 {level} 级 · {name}</b><br>'
            f'{html.escape(text)}</div>')


class HintItem:
    """The button, the levels seen and the level-4 confirmation for one hint item."""

    def __init__(self, lesson, item: str, path: Optional[Path], cell_id: Optional[str], used: int):
        import ipywidgets as w
        self.lesson, self.item, self.path, self.cell_id = lesson, item, path, cell_id
        self.steps: List[str] = list(hints.ladder(lesson.cfg, item))
        self.used = min(int(used), len(self.steps))
        self.seen = w.HTML()
        self.button = w.Button(layout=w.Layout(width="auto"))
        self.button.on_click(lambda _b: self.ask())
        self.yes = w.Button(description="确定，看完整答案", button_style="danger", layout=w.Layout(width="auto"))
        self.no = w.Button(description="先不看", layout=w.Layout(width="auto"))
        self.yes.on_click(lambda _b: self.show_next(confirmed=True))
        self.no.on_click(lambda _b: self._confirming(False))
        self.question = w.HTML()
        self.confirm = w.HBox([self.question, self.yes, self.no])
        self.box = w.VBox([self.seen, self.button, self.confirm])
        self._confirming(False)
        self._redraw()

    def _redraw(self) -> None:
        self.seen.value = "".join(_level_html(self.item, k + 1, self.steps[k]) for k in range(self.used))
        total = len(self.steps)
        if self.used >= total:
            self.button.description = f"提示 {self.item}：{total} 级都已看过"
            self.button.disabled = True
        else:
            nxt = self.used + 1
            name = hints.LEVEL_NAMES[nxt - 1] if nxt <= len(hints.LEVEL_NAMES) else ""
            self.button.description = f"提示 {self.item}：看第 {nxt} 级（{name}）"
            self.button.disabled = False

    def _confirming(self, on: bool) -> None:
        self.confirm.layout.display = "flex" if on else "none"
        self.button.layout.display = "none" if on else "flex"

    def ask(self) -> None:
        if self.used + 1 >= len(self.steps) and len(self.steps) >= 4:
            penalty = self.lesson.cfg.get("settings", {}).get("hint_penalty") or []
            rule = (f"按本课规则会扣 {penalty[-1]:g} 分" if penalty and float(penalty[-1]) > 0
                    else "使用情况会记录在提交里")
            self.question.value = (f'<span style="color:#cf222e;font-weight:600">第 {len(self.steps)} 级是完整答案'
                                   f'（{rule}）。确定要看吗？</span>')
            self._confirming(True)
            return
        self.show_next()

    def show_next(self, confirmed: bool = False) -> None:
        self._confirming(False)
        if self.used >= len(self.steps):
            return
        level = self.used + 1
        if self.path:
            hints.record(self.path, self.lesson.id, self.item, level)
        frontend.append_output(self.cell_id, record_output(self.lesson.id, self.item, level))
        self.used = level
        self.lesson.last_hint_level = level
        self._redraw()


def show(lesson, items: Optional[List[str]] = None, notebook: Optional[str] = None) -> None:
    """Draw the hint buttons for ``items`` (default: every hint item of the lesson)."""
    from IPython.display import display
    from .lesson import notebook_path
    path = notebook_path(notebook, lesson.cfg)
    ladder_items = list((lesson.cfg.get("hints") or {}).keys())
    items = list(items or ladder_items)
    for it in items:
        hints.ladder(lesson.cfg, it)          # KeyError with the Chinese list of items
    used = hints.read_sidecar(path) if path else {}
    cell_id = frontend.current_cell_id()
    # the levels seen so far are recorded again in this run's outputs (a re-run clears the old ones)
    for it in items:
        for level in range(1, int(used.get(it, 0)) + 1):
            out = record_output(lesson.id, it, level)
            display(out["data"], raw=True)
    try:
        import ipywidgets as w
    except ImportError:  # pragma: no cover - ipywidgets is a dependency
        print("（没有安装 ipywidgets：用 L.hint(\"code\") 逐级查看提示）")
        return
    boxes = [HintItem(lesson, it, path, cell_id, used.get(it, 0)).box for it in items]
    display(w.VBox(boxes))
