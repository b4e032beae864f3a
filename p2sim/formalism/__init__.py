"""P2's formalism: placements, device states and the five collectives' rules, programs, hierarchies, synthesis.

The bottom layer: pure, deterministic, no hardware.  :mod:`.placement` enumerates
parallelism matrices; :mod:`.semantics` holds the compact device states and the rules of
AllReduce, ReduceScatter, AllGather, Reduce and Broadcast (:mod:`.reference_semantics`
keeps the literal ``k x k`` form the property tests compare with); :mod:`.program` is the
reduction language and its text form; :mod:`.hierarchy` builds synthesis hierarchies and
lowers programs to device groups in either device order; :mod:`.synthesis` enumerates
every valid program; :mod:`.execute` is the numeric oracle that runs lowered programs on
numbers; :mod:`.mesh` maps a placement onto a framework's device mesh.  It imports only
:mod:`p2sim.util`.

Modules
-------
:mod:`.execute`
    The numeric oracle: run lowered programs on real numbers (formalism section 7).
:mod:`.hierarchy`
    Synthesis hierarchies, device groups of instructions, collapse and lowering.
:mod:`.level_mesh`
    The per-level mesh: one mesh dimension per (axis, hardware level) pair, and each program step on it.
:mod:`.mesh`
    A placement as the device mesh a training framework builds.
:mod:`.naming`
    Axis and level names in answers: headers, matrix legends, and a placement described in words.
:mod:`.placement`
    Parallelism matrices: how parallelism axes are laid over a hardware hierarchy.
:mod:`.program`
    The reduction language (formalism section 4) and its one-line text form.
:mod:`.reference_semantics`
    The ``k x k`` bit-matrix semantics, kept as the reference for :mod:`p2sim.formalism.semantics`.
:mod:`.rules`
    The five collectives' pre- and postconditions on compact states (formalism section 3).
:mod:`.semantics`
    Device states of one reduction group and the steps that change them (formalism section 3).
:mod:`.space`
    The state space of one reduction group: devices as a product of cyclic levels, and interned local states.
:mod:`.synthesis`
    Enumerative synthesis of reduction programs (formalism section 6).
"""
