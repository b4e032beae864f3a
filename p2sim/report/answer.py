"""The answer a report page opens with: one or two sentences, then the code that applies it.

Every page (rank, plan, what-if, sweep, validation) puts its conclusion first so that a
reader who stops after the first paragraph still has it; the tables and plots below are
the evidence.  Sentences mark code (programs, matrices) with backticks: the Markdown page
keeps them, the HTML page turns them into ``<code>`` (the ``codespans`` filter of
:mod:`.files`).

Examples
--------
>>> placement_words(((1, 4), (2, 4)), ("data", "tensor"), ("node", "gpu"), 0)
'data (4) inside each node; tensor (8) across 2 nodes, 4 GPUs in each'
>>> placement_words(((1, 1, 8), (1, 9, 1)), ("data", "tensor"), ("rack", "tray", "gpu"), 0)
'data (8) over 8 GPUs inside each rack; tensor (9) over 9 trays inside each rack'
>>> placement_words(((2, 1, 1, 4), (1, 1, 2, 2)), ("data", "tensor"), ("rack", "server", "cpu", "gpu"), 1)
'data (8) across 2 racks, 4 GPUs in each; tensor (4) over 2 CPUs x 2 GPUs inside each server'
>>> [ratio_text(a, b) for a, b in ((0.02, 4.3), (1.0, 1.0001), (2.0, 1.0))]
['215x faster than', 'as fast as', '2x slower than']
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Answer", "CodeBlock", "placement_words", "ratio_text", "level_count", "algo_text", "and_list"]

_ACRONYMS = {"gpu": "GPU", "cpu": "CPU", "nic": "NIC", "su": "SU"}


@dataclass(frozen=True)
class CodeBlock:
    """Code a reader copies: its label (the framework) and its text."""

    label: str
    text: str
    language: str = "python"


@dataclass(frozen=True)
class Answer:
    """What a page opens with: the answer in one or two sentences, caveats, and the code that applies it."""

    text: str  # sentences; `backticks` mark code
    notes: tuple[str, ...] = ()  # what limits the answer (scope, warnings), shown right under it
    code: tuple[CodeBlock, ...] = ()


def level_count(level: str, count: int) -> str:
    """``2 nodes``, ``4 GPUs``, ``1 rack``: a count of a hierarchy level's instances."""
    word = _ACRONYMS.get(level.lower(), level)
    return f"{count} {word}s" if count > 1 else f"1 {word}"


def placement_words(matrix: Sequence[Sequence[int]], names: Sequence[str], levels: Sequence[str],
                    node_level: int) -> str:
    """Where each axis goes, by name and size: inside each node or across which levels.

    An axis of size 1 is left out (it goes nowhere); the node level is the system's, so that
    "inside each node" means what the system calls a node (a server, a rack).
    """
    parts = []
    node = levels[node_level]
    for name, row in zip(names, matrix):
        size = math.prod(row)
        if size == 1:
            continue
        outer = [level_count(levels[j], f) for j, f in enumerate(row) if f > 1 and j <= node_level]
        inner = [level_count(levels[j], f) for j, f in enumerate(row) if f > 1 and j > node_level]
        if outer:
            where = "across " + " x ".join(outer) + (f", {' x '.join(inner)} in each" if inner else "")
        elif len(levels) - node_level == 2:  # the node's only inner level: "inside" says it all
            where = f"inside each {node}"
        else:  # several levels below the node (trays, CPUs): say which it spans
            where = "over " + " x ".join(inner) + f" inside each {node}"
        parts.append(f"{name} ({size}) {where}")
    return "; ".join(parts) or "a single GPU"


def ratio_text(seconds: float, other: float) -> str:
    """How ``seconds`` compares with ``other``: ``215x faster than``, ``as fast as`` (within 0.5%), ``2x slower
    than``."""
    if other <= 0 or seconds <= 0 or abs(other / seconds - 1) < 0.005:
        return "as fast as"
    if other > seconds:
        return f"{other / seconds:.3g}x faster than"
    return f"{seconds / other:.3g}x slower than"


def algo_text(algo: str) -> str:
    """The NCCL algorithm a result ran with, for a sentence (``auto``: NCCL chose per collective)."""
    return "NCCL's own algorithm choice" if algo == "auto" else f"NCCL {algo}"


def and_list(words: Sequence[str]) -> str:
    """``data``, ``data and pipeline``, ``data, pipeline and expert``."""
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]
