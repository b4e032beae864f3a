"""The simulation engines a run chooses among (``--engine``): des, analytic and baseline.

``des`` is the contention-aware discrete-event fluid simulation (:mod:`p2sim.sim.engine`),
``analytic`` NCCL's tuning model per group with no contention, ``baseline`` the link-bottleneck
formulas (:mod:`p2sim.collectives.baseline`); :class:`~p2sim.sim.Simulator` says how each times a step.

Examples
--------
>>> check_engine("analytic")
'analytic'
>>> check_engine("fluid")
Traceback (most recent call last):
...
p2sim.util.errors.InputError: engine: 'fluid' is not one of des, analytic, baseline
"""

from __future__ import annotations

from ..util.errors import InputError

__all__ = ["ENGINES", "check_engine"]

ENGINES = ("des", "analytic", "baseline")


def check_engine(engine: str) -> str:
    """``engine`` if it is one of :data:`ENGINES`, else one InputError naming it."""
    if engine not in ENGINES:
        raise InputError(f"engine: {engine!r} is not one of {', '.join(ENGINES)}")
    return engine
