"""Rendering of placement enumeration and synthesis results."""

from __future__ import annotations

from typing import Any

from ..hierarchy import Lowering
from ..placement import Matrix, format_matrix
from ..program import Program
from ..synthesis import Synthesis


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


def synthesis_json(s: Synthesis, lowered: bool = False) -> dict[str, Any]:
    return {
        "hierarchy": list(s.hierarchy),
        "axes": list(s.axes),
        "reduce_axes": list(s.reduce_axes),
        "profile": s.profile.value,
        "max_size": s.max_size,
        "order": s.order.value,
        "total_programs": s.total_programs,
        "matrices": [
            {
                "matrix": [list(r) for r in m.matrix],
                "synthesis_hierarchy": list(m.synthesis.cardinalities),
                "hardware_levels": list(m.synthesis.hardware_levels),
                "reduction_groups": [list(g) for g in m.lowering.reduction_groups()] if lowered else None,
                "programs": [program_json(p, m.lowering, lowered) for p in m.programs],
            }
            for m in s.matrices
        ],
    }


def synthesis_text(s: Synthesis, limit: int | None = None) -> str:
    lines = [
        f"hierarchy {list(s.hierarchy)}  axes {list(s.axes)}  reduce {list(s.reduce_axes)}  "
        f"profile {s.profile.value}  max-size {s.max_size}",
    ]
    for m in s.matrices:
        sh = m.synthesis
        levels = ", ".join(f"{n}={c}" for n, c in zip(_level_names(m.lowering), sh.cardinalities))
        lines.append("")
        lines.append(f"matrix {format_matrix(m.matrix)}  synthesis hierarchy [{levels}]  {len(m.programs)} programs")
        shown = m.programs if limit is None else m.programs[:limit]
        for i, p in enumerate(shown, 1):
            lines.append(f"  {i:4d}  {p.text}")
        if len(shown) < len(m.programs):
            lines.append(f"        ... {len(m.programs) - len(shown)} more (use --limit 0 to show all)")
    lines.append("")
    lines.append(f"total: {s.total_programs} programs over {len(s.matrices)} matrices")
    return "\n".join(lines)


def placements_text(hierarchy: tuple[int, ...], axes: tuple[int, ...], matrices: list[Matrix]) -> str:
    lines = [f"hierarchy {list(hierarchy)}  axes {list(axes)}: {len(matrices)} parallelism matrices"]
    lines += [f"  {format_matrix(m)}" for m in matrices]
    return "\n".join(lines)
