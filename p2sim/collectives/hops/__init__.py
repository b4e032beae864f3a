"""The hop builders: the hops each NCCL algorithm's channels take through a group's GPUs, NICs and switches.

One module per family of hops, each a few functions of the topology, the group's node segments and
its channel count that return :class:`~p2sim.collectives.pattern.HopTable` s (per byte of a flow's
share): :mod:`.ring` (rings and chains, and the ring orders chained across nodes), :mod:`.tree`
(NCCL's double binary tree and the chains through each node, shared with CollNet Chain),
:mod:`.nvls` (NVLink SHARP, and NVLS Tree's heads), :mod:`.collnet` (SHARP in the network) and
:mod:`.ringsearch` (NCCL's search for the ring orders inside a node).  The algorithms
(:mod:`p2sim.collectives.algorithms`) call them from their ``structure``; what they keep lives in
the topology's :class:`~p2sim.collectives.caches.CollectiveCaches`, passed as ``caches``.

Modules
-------
:mod:`.collnet`
    NCCL's CollNet: AllReduce reduced in the network's switches (InfiniBand SHARP).
:mod:`.nvls`
    NVLink SHARP (NVLS): the NVSwitch reduces and multicasts.
:mod:`.ring`
    NCCL ring expansion of the five collectives, channel by channel.
:mod:`.ringsearch`
    Ring orders inside a node: NCCL's topology search, as a search for the best rings.
:mod:`.tree`
    NCCL tree AllReduce expansion, one tree channel at a time.
"""
