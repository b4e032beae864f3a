"""p2sim: synthesize and simulate parallelism placements and reduction programs.

The public API (:mod:`p2sim.api`): :func:`rank`, :func:`plan`, :func:`whatif`,
:func:`simulate`, :func:`sweep`, :func:`validate`, :func:`calibrate`, :func:`synthesize`,
:func:`placements`, :func:`load_system`, :func:`topo`, :func:`systems` and :func:`step_table`, each taking keyword arguments and returning a
typed result with ``to_json()``.  They are imported on first use, so ``import p2sim`` (and
the command line's start) stays light.

The layers, each a folder importing only those before it: :mod:`p2sim.util` (errors,
files, parsing, units, logging), :mod:`p2sim.formalism`, :mod:`p2sim.workload`, :mod:`p2sim.topology`,
:mod:`p2sim.collectives`, :mod:`p2sim.sim` (the only SimPy importer),
:mod:`p2sim.studies`, :mod:`p2sim.measurements`, :mod:`p2sim.report`, :mod:`p2sim.api`
and :mod:`p2sim.cli`.

Modules
-------
:mod:`.__main__`
    ``python -m p2sim``: the command line, as the ``p2sim`` script runs it.
:mod:`.api`
    p2sim's public Python API: one function per command, keyword arguments in, a typed result out.
:mod:`.boundary`
    The public API's boundary: every keyword argument checked once, before a request is built.
:mod:`.cli`
    The ``p2sim`` command line: a thin shell over :mod:`p2sim.api`.
:mod:`.collectives`
    Collective expansion: a lowered step's collectives become NCCL-style channels and flows.
:mod:`.formalism`
    P2's formalism: placements, device states and the five collectives' rules, programs, hierarchies, synthesis.
:mod:`.measurements`
    Measurements: reading every log and table of GPU runs, predicting them, scoring and calibrating.
:mod:`.options`
    Each option's default, written once, for the command line and the Python API alike.
:mod:`.report`
    Human-readable renderings of p2sim results: text tables, HTML pages, plots, traces, ``--emit``.
:mod:`.sim`
    The simulator: a SimPy fluid engine and an analytic baseline behind one interface.
:mod:`.studies`
    Studies: the questions a user asks of the simulator, answered over many simulations.
:mod:`.topology`
    Systems: data files under ``topologies/`` that become networkx graphs, with NCCL's routes.
:mod:`.util`
    Small utilities every layer may use: errors, file reading and writing, parsing of command-line values, units.
:mod:`.workload`
    A training step's workload: a model's description and its training settings in, every collective of one step out.
"""

from __future__ import annotations

# nothing else imported here (not even typing): a Ctrl-C in the command line's first milliseconds, before its
# entry (p2sim.cli.main) answers signals, should find as little as possible to interrupt (util.version is one line)
from .util.version import __version__

_API = ("rank", "plan", "whatif", "simulate", "sweep", "validate", "calibrate", "check", "synthesize", "placements",
        "emit", "load_system", "topo", "systems", "step_table", "step", "Settings")
_ERRORS = ("P2SimError", "InputError")
__all__ = [*_API, *_ERRORS, "__version__"]


def __getattr__(name: str) -> object:
    if name in _API:
        from . import api

        return getattr(api, name)
    if name in _ERRORS:
        from .util import errors

        return getattr(errors, name)
    raise AttributeError(f"module 'p2sim' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
