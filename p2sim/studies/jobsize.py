"""How big a combinatorial job is, said before it starts, and the limits on it.

``placements``, ``synth``, ``rank``, ``plan``, ``whatif`` and ``validate`` multiply
matrices by programs by algorithms (by points, by reductions): a 12-level hierarchy
has 12! matrices and a four-axis rank on 512 GPUs 120,000 simulations.  Each command
counts first -- matrices without listing them (:func:`p2sim.formalism.placement.count_matrices`),
programs by synthesizing each distinct synthesis hierarchy once (the synthesis is
cached, and worker processes forked afterwards inherit it) -- prints the count on
stderr, flushed, and refuses a job above a limit unless ``--yes`` or a ``--max-*``
option raises it.

The default limits bound a job that starts unasked to about a minute.  Measured on the
2-core development machine (load average about 1): ``rank`` of a 512-GPU configuration
(``p2-16gpu`` with 64 servers, axes 8,4,4,4 reducing axes 0 and 1: 37 matrices, 11,677
simulations) took 12.3 s of CPU in one process, about 1 ms a simulation, so 50,000
simulations of such a system take about a minute (larger systems take longer per
simulation).  Synthesis of programs of up to 5 steps took 0.6 s for a synthesis hierarchy
of 4 levels, 5.2 s for 5 and 29 s for 6 (``[2, 2, 2, 2, 2, 2]``, paper profile, same
machine); deeper ones are refused unless ``--yes``.

Examples
--------
>>> limits = Limits()
>>> limits.check_matrices(3, "axes 4,16 over hierarchy 4,16")
>>> limits.check_matrices(479001600, "axes 2,..")
Traceback (most recent call last):
...
p2sim.util.errors.InputError: matrices: axes 2,.. have 479001600 parallelism matrices, more than the limit of 10000; --max-matrices N raises it, --yes lifts every limit
>>> synthesis_cardinalities(((1, 4), (2, 4)), (0,))
(1, 4)
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..util.errors import InputError
from ..formalism.hierarchy import SynthesisHierarchy
from ..formalism.placement import Matrix
from ..formalism.synthesis import Profile, synthesize

__all__ = ["Limits", "MAX_MATRICES", "MAX_SIMULATIONS", "MAX_SYNTHESIS_LEVELS", "synthesis_cardinalities",
           "program_counts", "announce", "plural"]

MAX_MATRICES = 10_000
MAX_SIMULATIONS = 50_000
MAX_SYNTHESIS_LEVELS = 6  # levels of (d) below its root

# the --bytes default in words (requests.default_bytes computes it)
DEFAULT_BYTES_HELP = ("P2's 2^29 x nodes float32, i.e. 2 GiB x nodes per GPU: 4 GiB on 2 nodes, 512 GiB on 256; "
                      "a buffer above the system's GPU memory is warned about")


def plural(n: int, word: str) -> str:
    """``1 matrix``, ``3 matrices``, ``2 simulations``.

    Examples
    --------
    >>> plural(1, "matrix"), plural(3, "matrix"), plural(2, "synthesis hierarchy")
    ('1 matrix', '3 matrices', '2 synthesis hierarchies')
    """
    if n == 1:
        return f"1 {word}"
    if word.endswith("ix"):
        return f"{n} {word[:-2]}ices"
    if word.endswith("y") and word[-2:-1] not in "aeiou":
        return f"{n} {word[:-1]}ies"
    return f"{n} {word}s"


@dataclass(frozen=True)
class Limits:
    """The largest job a command starts without ``--yes`` (``None``: no limit)."""

    matrices: int | None = MAX_MATRICES
    simulations: int | None = MAX_SIMULATIONS
    synthesis_levels: int | None = MAX_SYNTHESIS_LEVELS

    @classmethod
    def of(cls, yes: bool = False, max_matrices: int | None = None, max_simulations: int | None = None) -> Limits:
        """``--yes`` lifts every limit; ``--max-matrices`` / ``--max-simulations`` raise (or lower) one."""
        if yes:
            return cls(None, None, None)
        return cls(MAX_MATRICES if max_matrices is None else max_matrices,
                   MAX_SIMULATIONS if max_simulations is None else max_simulations)

    def check_matrices(self, count: int, what: str) -> None:
        if self.matrices is not None and count > self.matrices:
            raise InputError(f"matrices: {what} have {count} parallelism matrices, more than the limit of "
                             f"{self.matrices}; --max-matrices N raises it, --yes lifts every limit")

    def check_synthesis(self, cardinalities: Iterable[tuple[int, ...]], max_size: int) -> None:
        if self.synthesis_levels is None:
            return
        for c in cardinalities:
            if len(c) - 1 > self.synthesis_levels:
                raise InputError(f"synthesis: the synthesis hierarchy {list(c)} has {len(c) - 1} levels; "
                                 f"programs of up to {max_size} steps over more than {self.synthesis_levels} "
                                 "levels take minutes to hours to synthesize; --yes runs it anyway, a smaller "
                                 "--max-size or fewer reduction axes make it smaller")

    def check_simulations(self, count: int, what: str) -> None:
        if self.simulations is not None and count > self.simulations:
            raise InputError(f"simulations: {what} make {count} simulations, more than the limit of "
                             f"{self.simulations}; --max-simulations N raises it, --yes lifts every limit")


def synthesis_cardinalities(matrix: Matrix, reduce_axes: Sequence[int]) -> tuple[int, ...]:
    """The cardinalities of a matrix's synthesis hierarchy (d), without building its lowering."""
    per_level = [math.prod(matrix[i][j] for i in set(reduce_axes)) for j in range(len(matrix[0]))]
    return SynthesisHierarchy.of(per_level).cardinalities


def program_counts(matrices: Sequence[Matrix], reduce_axes: Sequence[int], profile: Profile | str,
                   max_size: int, limits: Limits) -> list[int]:
    """How many programs each matrix has: one synthesis per distinct (d), checked against the depth limit first."""
    cards = [synthesis_cardinalities(m, reduce_axes) for m in matrices]
    distinct = list(dict.fromkeys(cards))
    limits.check_synthesis(distinct, max_size)
    counts = {c: len(synthesize(SynthesisHierarchy(c, (None,) * len(c)), Profile.parse(profile), max_size))
              for c in distinct if math.prod(c) > 1}
    return [counts.get(c, 0) for c in cards]


def announce(command: str, text: str) -> None:
    """One line on stderr, flushed at once, so that it shows before a long job even when piped."""
    print(f"p2sim {command}: {text}", file=sys.stderr, flush=True)
