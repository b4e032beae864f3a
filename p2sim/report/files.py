"""Rendering and writing report directories.

Reports are rendered from their data with the jinja2 templates in
``p2sim/report/templates`` (Markdown and self-contained HTML from the same data).
Everything is rendered in memory first: a failure while rendering leaves ``--out``
untouched; the files then land through a temporary directory beside ``--out`` and renames
made with Ctrl-C and ``SIGTERM`` held back, so a reader never sees half a report and an
interrupted run leaves nothing in ``--out``.
"""

from __future__ import annotations

import base64
import functools
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup, escape

from ..formalism.program import SEPARATOR
from ..util.fileio import writing
from ..util.signals import deferred_signals

__all__ = ["write_report", "render", "data_uris", "figure_png", "codespans", "steps"]


def figure_png(fig) -> bytes:
    import io

    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def write_report(out: str | Path, files: dict[str, bytes]) -> list[Path]:
    """Write ``files`` (name -> content) into directory ``out``.

    A failure to write (a full disk, a directory removed meanwhile) is one
    :class:`~p2sim.util.errors.OutputError` naming ``out``; commands check ``out`` with
    :func:`p2sim.util.fileio.check_output_dir` before their work and call this after printing
    their results, so a late failure loses no answer.
    """
    target = Path(out)
    with writing("out", target):
        target.mkdir(parents=True, exist_ok=True)
        parent = target.absolute().parent
        # beside --out when its parent may be written (same file system: renames), else inside it
        where = parent if os.access(parent, os.W_OK | os.X_OK) else target
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.absolute().name}.", suffix=".p2sim-tmp", dir=where))
        try:
            for name, data in files.items():
                (tmp / name).write_bytes(data)
            written = []
            with deferred_signals():  # the whole report or none of it
                for name in files:
                    os.replace(tmp / name, target / name)
                    written.append(target / name)
            return written
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


@functools.cache
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("p2sim.report", "templates"),
        # HTML templates escape every value; Markdown ones escape table cells with |mdcell
        autoescape=jinja2.select_autoescape(enabled_extensions=("html",), default_for_string=False),
        undefined=jinja2.StrictUndefined,  # a missing value is an error, never an empty cell
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.globals["zip"] = zip
    env.filters["mdcell"] = lambda v: str(v).replace("|", "\\|").replace("\n", " ")
    env.filters["codespans"] = codespans
    env.filters["steps"] = steps
    return env


def steps(text: str) -> Markup:
    """A program's text for an HTML cell: each step kept on one line, lines broken only between steps.

    A cell wrapped at every space squeezes a program to a word per line in a wide table; the
    text stays the same (the spans add none), so copying the cell gives the program.

    >>> str(steps("ReduceScatter(slice=1, Inside) ; AllGather(slice=1, Inside)"))
    '<span class="step">ReduceScatter(slice=1, Inside)</span> ; <span class="step">AllGather(slice=1, Inside)</span>'
    """
    return Markup(SEPARATOR.join(f'<span class="step">{escape(p)}</span>' for p in str(text).split(SEPARATOR)))


def codespans(text: str) -> Markup:
    """A sentence whose `backticked` parts are code, as HTML: those parts in ``<code>``, everything escaped.

    The answers of :mod:`.answer` mark programs with backticks, which Markdown shows as code
    already; this gives the HTML page the same.

    >>> str(codespans("run `AllReduce(slice=0, Inside)` on <4> GPUs"))
    'run <code>AllReduce(slice=0, Inside)</code> on &lt;4&gt; GPUs'
    """
    parts = str(text).split("`")
    return Markup("".join(f"<code>{escape(p)}</code>" if i % 2 else str(escape(p)) for i, p in enumerate(parts)))


def render(template: str, **data: Any) -> bytes:
    """Render a template of ``p2sim/report/templates`` with ``data``."""
    return _environment().get_template(template).render(**data).encode()


def data_uris(images: dict[str, bytes]) -> dict[str, str]:
    """PNG images as ``data:`` URIs, so that an HTML page is self-contained."""
    return {name: "data:image/png;base64," + base64.b64encode(data).decode() for name, data in images.items()}
