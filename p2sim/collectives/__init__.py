"""Collective expansion: a lowered step's collectives become NCCL-style channels and flows.

One concept per module: :mod:`.algorithms` (one object per NCCL algorithm behind one
interface, and their registry: whether it runs, its channels, latency, pipeline, caps and
baseline), :mod:`.channels` (how many, which NIC), :mod:`.ringsearch` (ring orders inside a
node), :mod:`.ring`, :mod:`.tree`, :mod:`.nvls` and :mod:`.collnet` (the hops of each
algorithm's traffic), :mod:`.protocols` (LL, LL128, Simple), :mod:`.pipeline`
(chunks and windows), :mod:`.latency`, :mod:`.transports` and :mod:`.nccl_tables` (NCCL's
tuning model, its figures and the network step), :mod:`.pattern` (the flows),
:mod:`.volumes` (buffer sizes), :mod:`.shapes`, :mod:`.structure`, :mod:`.choice` and
:mod:`.expand` (putting them together, and NCCL's automatic choice), :mod:`.caches` (what the
expanders of one topology keep, and how to drop it), :mod:`.baseline` (the
link-bottleneck reference).  Imports the formalism, the topology and the utilities.
"""

from __future__ import annotations

from .caches import CollectiveCaches
from .expand import ALGO_CHOICES, ALGORITHMS, Expander, check_algo, check_forced
from .pattern import Collective, Flow, Hop
from .protocols import PROTO_CHOICES, check_proto
from .volumes import step_fractions, step_volumes

__all__ = ["CollectiveCaches", "ALGORITHMS", "ALGO_CHOICES", "PROTO_CHOICES", "Expander", "Collective", "Flow", "Hop",
           "step_fractions", "step_volumes", "check_algo", "check_forced", "check_proto"]
