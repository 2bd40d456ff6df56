"""Per-student HTML summary page, read from the one verdict: score per item with the failing families,
vetoes with evidence, hints used, seed and status, and a link to nbgrader's feedback notebook.

Everything a learner wrote or a sandbox returned is escaped (``html.escape``); the page has no script.
"""
from __future__ import annotations

import html
from pathlib import Path
from typing import Optional

_CSS = """
body{font-family:system-ui,"Noto Sans CJK SC",sans-serif;max-width:920px;margin:2em auto;color:#222}
table{border-collapse:collapse;width:100%}td,th{border:1px solid #ccc;padding:.35em .6em;text-align:left;vertical-align:top}
.pass{color:#176f2c;font-weight:bold}.fail{color:#b3261e;font-weight:bold}
pre{background:#f6f6f6;padding:.6em;overflow:auto;white-space:pre-wrap}
"""
STATUS_LABEL = {"timeout": "评分超时", "crashed": "评分进程崩溃", "error": "评分出错", "invalid": "无法评分",
                "cancelled": "评分被中止"}


def _e(x) -> str:
    return html.escape(str(x), quote=True)


def render(row, lesson_cfg: dict, notebook_html: Optional[str] = None) -> str:
    """``row``: an ``autograder.batch.report.Row``."""
    title = lesson_cfg.get("title", lesson_cfg.get("id", ""))
    status = '<span class="pass">通过</span>' if row.passed else '<span class="fail">未通过</span>'
    out = ["<!doctype html><html lang='zh-CN'><head><meta charset='utf-8'>"
           "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; style-src 'unsafe-inline'\">"
           f"<title>{_e(row.student)} · {_e(title)}</title><style>{_CSS}</style></head><body>",
           f"<h1>{_e(title)}</h1>",
           f"<p>学生：<b>{_e(row.student)}</b> · 总分 <b>{row.total:g}/{row.max_score:g}</b> · {status}"
           f" · 随机种子 {_e(row.seed if row.seed is not None else '-')}</p>"]
    if row.status != "graded":
        out.append(f"<p class='fail'>{_e(STATUS_LABEL.get(row.status, row.status))}：{_e(row.reason)}</p>")
    v = row.verdict
    items = {i.item: i for i in v.items} if v is not None else {}
    out.append("<h2>各项得分</h2><table><tr><th>项目</th><th>得分</th><th>说明</th></tr>")
    for item_id, cfg in lesson_cfg.get("items", {}).items():
        it = items.get(item_id)
        note = it.message if it is not None else ""
        if item_id in row.overridden:
            note = f"（教师已改分）{note}"
        elif it is not None and it.needs_review:
            note = f"（待老师复核，当前为建议分）{note}"
        fams = "".join(f"<li>{'✔' if f.get('passed') else '✘'} {_e(f.get('family', ''))}"
                       f"{(' — ' + _e(f.get('reason'))) if f.get('reason') else ''}</li>"
                       for f in (it.families if it is not None else ()))
        out.append(f"<tr><td>{_e(item_id)}</td><td>{row.scores.get(item_id, 0.0):g}/{float(cfg.get('points', 0)):g}</td>"
                   f"<td><pre>{_e(note)}</pre>{'<ul>' + fams + '</ul>' if fams else ''}</td></tr>")
    out.append("</table>")
    out.append("<h2>一票否决</h2>")
    if v is not None and v.vetoes:
        for x in v.vetoes:
            out.append(f"<p><b>{_e(x.id)}</b>：{_e(x.message)}</p>")
            if x.evidence:
                out.append(f"<pre>{_e(x.evidence)}</pre>")
    else:
        out.append("<p>无。</p>")
    if v is not None and v.notes:
        out.append("<h2>说明</h2>" + "".join(f"<p>{_e(n)}</p>" for n in v.notes))
    out.append("<h2>使用过的提示</h2><p>" + (_e("，".join(row.hints)) if row.hints else "无") + "</p>")
    if notebook_html:
        out.append(f"<p><a href='{_e(notebook_html)}'>查看批改后的完整笔记本（nbgrader 反馈）</a></p>")
    out.append("</body></html>")
    return "\n".join(out)


def write_page(path: Path, row, lesson_cfg: dict, notebook_html: Optional[str] = None) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(row, lesson_cfg, notebook_html), encoding="utf-8")
    return path
