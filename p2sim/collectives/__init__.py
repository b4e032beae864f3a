"""Collective expansion: a lowered step's collectives become NCCL-style channels and flows.

One concept per module: :mod:`.algorithms` (one object per NCCL algorithm behind one
interface, and their registry: whether it runs, its channels, latency, pipeline, caps and
baseline), :mod:`.channels` (how many, which NIC), :mod:`.hops` (the hops of each algorithm's
traffic: rings, trees, NVLS, CollNet, and the ring search inside a node), :mod:`.protocols` (LL, LL128, Simple), :mod:`.pipeline`
(chunks and windows), :mod:`.latency`, :mod:`.transports` and :mod:`.nccl_tables` (NCCL's
tuning model, its figures and the network step), :mod:`.pattern` (the flows),
:mod:`.volumes` (buffer sizes), :mod:`.expand` (the :class:`Expander`, composing four stages:
:mod:`.shapes`, :mod:`.structure`, :mod:`.choice` -- NCCL's automatic choice -- and :mod:`.flows`), :mod:`.caches` (what the
expanders of one topology keep, and how to drop it), :mod:`.baseline` (the
link-bottleneck reference).  Imports the formalism, the topology and the utilities.

Modules
-------
:mod:`.algorithms`
    NCCL's algorithms, one object each behind one interface (:class:`~.base.Algorithm`), and their registry.
:mod:`.baseline`
    The link-bottleneck baseline: NCCL's ring and tree bandwidth formulas on one ring or tree.
:mod:`.binding`
    What binds a collective: the link class, per-channel limit or latency that sets its time.
:mod:`.busbw`
    Bus bandwidth: nccl-tests' way of making a collective's rate comparable with its links' rate.
:mod:`.caches`
    What the collectives layer derives from one topology, kept by whoever runs the expansions.
:mod:`.channels`
    Channels: how many a collective runs, which NIC each uses, where it enters each node.
:mod:`.choice`
    NCCL's automatic choice: which algorithm and protocol a collective runs.
:mod:`.decisions`
    NCCL's choice for a group, kept across independent tasks with the order-dependent reads it made.
:mod:`.expand`
    From (algorithm, protocol, collective, group) to a :class:`~p2sim.collectives.pattern.Collective`.
:mod:`.flows`
    The flows stage: a collective's structure with its protocol -- link shares, caps, pipeline and latency.
:mod:`.hops`
    The hop builders: the hops each NCCL algorithm's channels take through a group's GPUs, NICs and switches.
:mod:`.latency`
    NCCL's latency model (``src/graph/tuning.cc``): the start-up time of one collective.
:mod:`.nccl_tables`
    NCCL's tuning constants, as ``src/graph/tuning.cc``, ``src/graph/search.cc`` and ``src/graph/topo.h`` state them.
:mod:`.ofi_tuner`
    aws-ofi-nccl's region tuner: the algorithm and protocol NCCL runs on AWS p5 from three nodes on.
:mod:`.p2p`
    AllToAll and send/recv as NCCL runs them: grouped point-to-point operations.
:mod:`.pattern`
    What one collective puts on the links: its channels' fluid flows.
:mod:`.pipeline`
    NCCL's pipeline: why a medium-size collective runs below its links' rate.
:mod:`.protocols`
    NCCL's protocols: the share of link bandwidth each achieves and its throughput caps.
:mod:`.rails`
    aws-ofi-nccl's rails: how the NICs it joins into one NCCL network device share a connection's messages.
:mod:`.shapes`
    Groups up to the topology's symmetries: what decides how a collective expands, not where it is.
:mod:`.structure`
    A collective's structure: the hops its channels take, before its protocol.
:mod:`.transports`
    The network step: how long one step of a collective takes to cross the network, by transport.
:mod:`.volumes`
    Buffer sizes of each step from the device states (formalism section 8).
"""

from __future__ import annotations

from .caches import CollectiveCaches
from .expand import ALGO_CHOICES, ALGORITHMS, Expander, check_algo, check_forced
from .pattern import Collective, Flow, Hop
from .protocols import PROTO_CHOICES, check_proto
from .volumes import step_fractions, step_volumes

__all__ = ["CollectiveCaches", "ALGORITHMS", "ALGO_CHOICES", "PROTO_CHOICES", "Expander", "Collective", "Flow", "Hop",
           "step_fractions", "step_volumes", "check_algo", "check_forced", "check_proto"]
