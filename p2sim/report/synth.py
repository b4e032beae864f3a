"""Rendering of placement enumeration and synthesis results."""

from __future__ import annotations

from typing import Any

from collections.abc import Sequence

from ..formalism.hierarchy import Lowering
from ..util.parsing import default_axis_names
from ..formalism.placement import Matrix, format_matrix
from ..formalism.program import Program
from ..formalism.synthesis import Synthesis
from ..formalism.naming import axes_text, describe_placement, generic_levels, matrix_legend, reduce_text


def _level_names(lw: Lowering) -> list[str]:
    return ["root"] + [f"level{j}" for j in lw.synthesis.hardware_levels[1:]]


def program_json(program: Program, lw: Lowering, lowered: bool = False) -> dict[str, Any]:
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


def synthesis_json(s: Synthesis, lowered: bool = False, names: Sequence[str] | None = None,
                   levels: Sequence[str] | None = None) -> dict[str, Any]:
    names = tuple(names) if names is not None else default_axis_names(len(s.axes))
    levels = tuple(levels) if levels is not None else generic_levels(len(s.hierarchy))
    return {
        "hierarchy": list(s.hierarchy),
        "axes": list(s.axes),
        "axis_names": list(names),
        "level_names": list(levels),
        "reduce_axes": list(s.reduce_axes),
        "profile": s.profile.value,
        "max_size": s.max_size,
        "order": s.order.value,
        "total_programs": s.total_programs,
        "matrices": [
            {
                "matrix": [list(r) for r in m.matrix],
                "placement": describe_placement(m.matrix, names, levels),
                "synthesis_hierarchy": list(m.synthesis.cardinalities),
                "hardware_levels": list(m.synthesis.hardware_levels),
                "reduction_groups": [list(g) for g in m.lowering.reduction_groups()] if lowered else None,
                "programs": [program_json(p, m.lowering, lowered) for p in m.programs],
            }
            for m in s.matrices
        ],
    }


def synthesis_text(s: Synthesis, limit: int | None = None, names: Sequence[str] | None = None,
                   levels: Sequence[str] | None = None, node_level: int | None = None) -> str:
    names = tuple(names) if names is not None else default_axis_names(len(s.axes))
    hw = tuple(levels) if levels is not None else generic_levels(len(s.hierarchy))
    lines = [
        f"hierarchy {list(s.hierarchy)}  axes {axes_text(s.axes, names)}  reduce {reduce_text(s.reduce_axes, names)}  "
        f"profile {s.profile.value}  max-size {s.max_size}",
        matrix_legend(names, hw),
    ]
    for m in s.matrices:
        sh = m.synthesis
        levels_text = ", ".join(f"{n}={c}" for n, c in zip(_level_names(m.lowering), sh.cardinalities))
        lines.append("")
        lines.append(f"matrix {format_matrix(m.matrix)}  synthesis hierarchy [{levels_text}]  {len(m.programs)} programs")
        lines.append(f"  placement: {describe_placement(m.matrix, names, hw, node_level)}")
        shown = m.programs if limit is None else m.programs[:limit]
        for i, p in enumerate(shown, 1):
            lines.append(f"  {i:4d}  {p.text}")
        if len(shown) < len(m.programs):
            lines.append(f"        ... {len(m.programs) - len(shown)} more (use --limit 0 to show all)")
    lines.append("")
    lines.append(f"total: {s.total_programs} programs over {len(s.matrices)} matrices")
    return "\n".join(lines)


def placements_header(hierarchy: tuple[int, ...], axes: tuple[int, ...], count: int, names: Sequence[str],
                      levels: Sequence[str]) -> str:
    return (f"hierarchy {list(hierarchy)}  axes {axes_text(axes, names)}: {count} parallelism matrices\n"
            f"{matrix_legend(names, levels)}")


def placements_text(matrices: list[Matrix], names: Sequence[str], levels: Sequence[str],
                    node_level: int | None = None) -> str:
    """One line per matrix: the matrix, then the placement in words."""
    width = max((len(format_matrix(m)) for m in matrices), default=0)
    return "\n".join(f"  {format_matrix(m):<{width}}  {describe_placement(m, names, levels, node_level)}"
                     for m in matrices)
