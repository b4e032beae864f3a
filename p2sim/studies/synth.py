"""Placements and synthesis as requests: every matrix of axes over a hierarchy, and every program of each.

The count comes first (a 12-level hierarchy has 12! matrices): a request counts its
matrices when it is built and refuses a job above the limits, so the command line can say
how many before listing them.

Examples
--------
>>> req = PlacementsRequest.build(hierarchy="4,16", axes="data=4,tensor=16")
>>> req.count, [m for m in run_placements(req).matrices][:1]
(3, [((1, 4), (4, 4))])
>>> s = run_synth(SynthRequest.build(hierarchy="4,16", axes="4,16", reduce="0", matrix="[[2 2] [2 8]]"))
>>> s.synthesis.total_programs
47
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..formalism.hierarchy import Lowering, Order
from ..formalism.naming import describe_placement
from ..formalism.placement import (Matrix, Placement, count_matrices, enumerate_matrices, format_matrix,
                                   parse_matrix)
from ..formalism.program import Program
from ..formalism.synthesis import Synthesis, synthesize_placements
from ..topology.spec import SystemSpec
from ..util.log import announce
from ..util.parsing import as_text, axis_indices
from ..util.table import HEAD_ROWS, Result
from .jobsize import Limits, plural, synthesis_cardinalities
from .demand import DEFAULT_REDUCE
from .requests import DEFAULT_SETTINGS, Rules, axis_names_of, layout_of, limits_of, reduces_something

__all__ = ["PlacementsRequest", "PlacementsResult", "run_placements", "SynthRequest", "SynthResult", "run_synth",
           "program_json"]


def _what(h: tuple[int, ...], p: tuple[int, ...]) -> str:
    return f"axes {','.join(map(str, p))} over hierarchy {','.join(map(str, h))}"


@dataclass(frozen=True)
class PlacementsRequest:
    hierarchy: tuple[int, ...]
    axes: tuple[int, ...]
    axis_names: tuple[str, ...]
    level_names: tuple[str, ...]
    node_level: int | None  # the system's node level (None for a bare hierarchy)
    count: int  # how many matrices there are (checked against the limit)

    @classmethod
    def build(cls, hierarchy: Any = None, system: str | SystemSpec | None = None, nodes: Any = None,
              axes: Any = None, max_matrices: Any = None, yes: bool = False) -> PlacementsRequest:
        h, p, levels, node_level = layout_of(hierarchy, system, nodes, axes)
        names = axis_names_of(axes, len(p))
        count = count_matrices(h, p)
        limits_of(yes, max_matrices).check_matrices(count, _what(h, p))
        return cls(h, p, names, levels, node_level, count)

    def placement(self, matrix: Matrix) -> str:
        return describe_placement(matrix, self.axis_names, self.level_names, self.node_level)


@dataclass(frozen=True, repr=False)
class PlacementsResult(Result):
    request: PlacementsRequest
    matrices: tuple[Matrix, ...]

    def summary(self) -> str:
        req = self.request
        return (f"placements of axes {','.join(map(str, req.axes))} over hierarchy "
                f"{','.join(map(str, req.hierarchy))}: {len(self.matrices)} matrices")

    def head_records(self) -> tuple[list[dict[str, Any]], int]:
        return ([{"matrix": format_matrix(m), "placement": self.request.placement(m)}
                 for m in self.matrices[:HEAD_ROWS]], len(self.matrices))

    def to_json(self) -> dict[str, Any]:
        req = self.request
        return {"hierarchy": list(req.hierarchy), "axes": list(req.axes), "axis_names": list(req.axis_names),
                "level_names": list(req.level_names), "count": len(self.matrices),
                "matrices": [[list(r) for r in m] for m in self.matrices],
                "placements": [req.placement(m) for m in self.matrices]}


def run_placements(req: PlacementsRequest) -> PlacementsResult:
    return PlacementsResult(req, tuple(enumerate_matrices(req.hierarchy, req.axes)))


@dataclass(frozen=True)
class SynthRequest:
    hierarchy: tuple[int, ...]
    axes: tuple[int, ...]
    axis_names: tuple[str, ...]
    level_names: tuple[str, ...]
    node_level: int | None
    reduce_axes: tuple[int, ...]
    matrices: tuple[Matrix, ...]
    rules: Rules
    order: Order
    limits: Limits

    @classmethod
    def build(cls, hierarchy: Any = None, system: str | SystemSpec | None = None, nodes: Any = None,
              axes: Any = None, reduce: Any = DEFAULT_REDUCE, matrix: Any = None, profile: Any = DEFAULT_SETTINGS.rules.profile.value,
              max_size: Any = DEFAULT_SETTINGS.rules.max_size, order: Any = DEFAULT_SETTINGS.order.value, max_matrices: Any = None, yes: bool = False
              ) -> SynthRequest:
        h, p, levels, node_level = layout_of(hierarchy, system, nodes, axes)
        names = axis_names_of(axes, len(p))
        red = axis_indices(as_text(reduce, "reduce"), names, "reduce")
        rules = Rules.of(profile, max_size)
        limits = limits_of(yes, max_matrices)
        if matrix is None:
            limits.check_matrices(count_matrices(h, p), _what(h, p))
            mats = tuple(enumerate_matrices(h, p))
        else:
            mats = (parse_matrix(matrix) if isinstance(matrix, str) else tuple(tuple(r) for r in matrix),)
            Placement.of(h, p, mats[0])
        red = reduces_something(p, red)
        return cls(h, p, names, levels, node_level, red, mats, rules, Order.parse(order), limits)


@dataclass(frozen=True, repr=False)
class SynthResult(Result):
    request: SynthRequest
    synthesis: Synthesis

    def summary(self) -> str:
        s = self.synthesis
        return (f"synthesis over hierarchy {','.join(map(str, s.hierarchy))}, axes {','.join(map(str, s.axes))}: "
                f"{s.total_programs} programs for {len(s.matrices)} matrices")

    def head_records(self) -> tuple[list[dict[str, Any]], int]:
        rows = [{"matrix": format_matrix(m.matrix), "programs": len(m.programs),
                 "shortest": str(m.programs[0]) if m.programs else None} for m in self.synthesis.matrices]
        return rows[:HEAD_ROWS], len(rows)

    def to_json(self, lower: bool = False) -> dict[str, Any]:
        """The programs of every matrix; ``lower`` adds each step's global device groups."""
        s, req = self.synthesis, self.request
        return {
            "hierarchy": list(s.hierarchy), "axes": list(s.axes), "axis_names": list(req.axis_names),
            "level_names": list(req.level_names), "reduce_axes": list(s.reduce_axes), "profile": s.profile.value,
            "max_size": s.max_size, "order": s.order.value, "total_programs": s.total_programs,
            "matrices": [
                {"matrix": [list(r) for r in m.matrix],
                 "placement": describe_placement(m.matrix, req.axis_names, req.level_names),
                 "synthesis_hierarchy": list(m.synthesis.cardinalities),
                 "hardware_levels": list(m.synthesis.hardware_levels),
                 "reduction_groups": [list(g) for g in m.lowering.reduction_groups()] if lower else None,
                 "programs": [program_json(p, m.lowering, lower) for p in m.programs]}
                for m in s.matrices
            ],
        }


def program_json(program: Program, lw: Lowering, lowered: bool = False) -> dict[str, Any]:
    """A program's JSON: its text and each step's instruction, group size and groups per reduction group;
    ``lowered`` adds each step's global device groups (the one place a program is written as JSON)."""
    steps = []
    for ins, low in zip(program.instructions, lw.lower(program)):
        local = lw.synthesis.groups(ins)
        step: dict[str, Any] = ins.to_json()
        step["group_size"] = len(local[0])
        step["groups_per_reduction_group"] = len(local)
        if lowered:
            step["devices"] = [list(g) for g in low.groups]
        steps.append(step)
    return {"text": program.text, "steps": steps}


def run_synth(req: SynthRequest) -> SynthResult:
    cards: Sequence[tuple[int, ...]] = list(dict.fromkeys(synthesis_cardinalities(m, req.reduce_axes)
                                                          for m in req.matrices))
    req.limits.check_synthesis(cards, req.rules.max_size)
    announce(f"{plural(len(req.matrices), 'matrix')}, {plural(len(cards), 'synthesis hierarchy')} to synthesize")
    s = synthesize_placements(req.hierarchy, req.axes, req.reduce_axes, req.rules.profile, req.rules.max_size,
                              list(req.matrices), req.order)
    return SynthResult(req, s)
