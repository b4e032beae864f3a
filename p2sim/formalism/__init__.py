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
"""
