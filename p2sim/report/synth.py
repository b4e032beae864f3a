"""Rendering of placement enumeration and synthesis results.

Their JSON is the results' own (:meth:`p2sim.studies.synth.SynthResult.to_json`, with
:func:`p2sim.studies.synth.program_json`): this module words them for people.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..formalism.hierarchy import Lowering
from ..util.parsing import default_axis_names
from ..formalism.placement import Matrix, format_matrix
from ..formalism.synthesis import Synthesis
from ..formalism.naming import axes_text, describe_placement, generic_levels, matrix_legend, reduce_text


def _level_names(lw: Lowering) -> list[str]:
    return ["root"] + [f"level{j}" for j in lw.synthesis.hardware_levels[1:]]


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
