"""Writing report directories: everything is rendered in memory first, then written.

A failure while rendering leaves ``--out`` untouched; the files then land through
a temporary directory and renames, so a reader never sees half a report.
"""

from __future__ import annotations

import base64
import html
import os
import shutil
import tempfile
from pathlib import Path

__all__ = ["write_report", "markdown_to_html", "figure_png"]


def figure_png(fig) -> bytes:
    import io

    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def write_report(out: str | Path, files: dict[str, bytes]) -> list[Path]:
    """Write ``files`` (name -> content) into directory ``out``."""
    target = Path(out)
    target.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".p2sim-", dir=target))
    try:
        for name, data in files.items():
            (tmp / name).write_bytes(data)
        written = []
        for name in files:
            os.replace(tmp / name, target / name)
            written.append(target / name)
        return written
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def markdown_to_html(title: str, markdown: str, images: dict[str, bytes]) -> bytes:
    """A self-contained HTML page from our simple Markdown (headings, tables, images, text)."""
    body: list[str] = []
    lines = markdown.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("#"):
            level = len(line) - len(line.lstrip("#"))
            body.append(f"<h{level}>{html.escape(line[level:].strip())}</h{level}>")
        elif line.startswith("|"):
            rows = []
            while i < len(lines) and lines[i].startswith("|"):
                cells = [c.strip() for c in lines[i].strip().strip("|").split("|")]
                if not all(set(c) <= set("-: ") for c in cells):
                    rows.append(cells)
                i += 1
            head, *rest = rows
            body.append("<table><tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in head) + "</tr>")
            body += ["<tr>" + "".join(f"<td>{html.escape(c.strip('`'))}</td>" for c in r) + "</tr>" for r in rest]
            body.append("</table>")
            continue
        elif line.startswith("![") and "](" in line:
            name = line[line.index("](") + 2 : line.rindex(")")]
            data = base64.b64encode(images[name]).decode()
            body.append(f'<p><img alt="{html.escape(name)}" src="data:image/png;base64,{data}"></p>')
        elif line.startswith("```"):
            i += 1
            block = []
            while i < len(lines) and not lines[i].startswith("```"):
                block.append(lines[i])
                i += 1
            body.append("<pre>" + html.escape("\n".join(block)) + "</pre>")
        elif line.strip():
            body.append(f"<p>{html.escape(line)}</p>")
        i += 1
    style = ("body{font-family:sans-serif;max-width:1100px;margin:2em auto}table{border-collapse:collapse}"
             "td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px}img{max-width:100%}")
    page = (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{style}</style></head><body>{''.join(body)}</body></html>")
    return page.encode()
