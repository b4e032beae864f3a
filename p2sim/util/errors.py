"""The one exception hierarchy of p2sim.

Every error caused by bad input derives from :class:`P2SimError`, so the CLI can
print its message as one line and exit non-zero instead of showing a traceback.
"""

from __future__ import annotations


class P2SimError(Exception):
    """Base class of every error p2sim raises on purpose."""


class InputError(P2SimError, ValueError):
    """A user-supplied value is malformed or inconsistent (names the field)."""


class PlacementError(InputError):
    """Axes, hierarchy or parallelism matrix do not fit together."""


class ProgramError(InputError):
    """A reduction program is malformed or does not fit its hierarchy."""


class TopologyError(InputError):
    """A system file is malformed, or a system is unknown (names file and field)."""


class MeasurementError(InputError):
    """A measurement file is malformed (names file, line and field)."""


class OutputError(InputError):
    """An output path cannot be written (names the option and the path)."""


class SemanticsError(P2SimError):
    """A collective's precondition does not hold (the step is semantically invalid)."""
