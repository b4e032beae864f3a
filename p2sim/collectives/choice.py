"""NCCL's automatic choice: which algorithm and protocol a collective runs.

For every collective call NCCL estimates each enabled (algorithm, protocol)'s time with its
tuning model (``src/graph/tuning.cc``) and runs the least; :class:`Choice` does the same on
p2sim's expansion with NCCL's own figures (:attr:`Collective.tuning
<p2sim.collectives.pattern.Collective.tuning>`).  Which pairs a group may use follows NCCL's
rules: trees reduce only, NVLS needs a Hopper-or-later NVSwitch, CollNet a SHARP fabric, LL128
NVLink inside nodes, and ``NCCL_ALGO`` / ``NCCL_PROTO`` (``[nccl] algorithms``, ``protocols``)
restrict them.  A mixin of :class:`~p2sim.collectives.expand.Expander`.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..util.errors import InputError
from .channels import Segment, segments
from .collnet import collnet_possible
from .nccl_tables import ALGOS, COLLNET_MAX_LOCAL, PROTOS
from .nvls import nvls_switch
from .pattern import Collective

__all__ = ["Choice", "ALGORITHMS", "ALGO_CHOICES", "COLLNET", "check_algo"]

ALGORITHMS = ("ring", "tree", "nvls", "nvls_tree", "collnet_direct", "collnet_chain")
# "collnet" is NCCL_ALGO=CollNet: either CollNet algorithm, whichever NCCL's model prefers
ALGO_CHOICES = ("auto",) + ALGORITHMS + ("collnet",)
COLLNET = ("collnet_direct", "collnet_chain")


def check_algo(text: str, choices: Sequence[str] = ALGO_CHOICES) -> str:
    t = text.lower().replace("-", "_")
    if t not in choices:
        raise InputError(f"algo: {text!r} is not one of {', '.join(choices)}")
    return t


class Choice:
    """Choice methods of :class:`~p2sim.collectives.expand.Expander` (a mixin: it uses the
    expander's ``topo``, ``arch``, ``collective`` and caches)."""

    def available(self, op: str, members: Sequence[int]) -> list[tuple[str, str]]:
        """The (algorithm, protocol) pairs NCCL may use for this collective, in NCCL's order."""
        return self._memo("available", members, (op,), lambda: self._available(op, members))

    def _available(self, op: str, members: Sequence[int]) -> list[tuple[str, str]]:
        segs = segments(self.topo, members)
        nvls = self._nvls_switches(segs)
        collnet = self._collnet(op, segs)
        out = []
        for a in ALGOS:
            if a not in self.topo.spec.nccl.algorithms:
                continue  # NCCL_ALGO (a cloud's NCCL profile may set it: GCP's TCPXO)
            if a == "tree" and op != "AllReduce":
                continue
            if a in COLLNET and a not in collnet:
                continue
            if a == "nvls" and (nvls is None or len(segs) > 1 or op not in ("AllReduce", "ReduceScatter", "AllGather")):
                continue
            if a == "nvls_tree" and (nvls is None or len(segs) == 1 or op != "AllReduce"):
                continue
            for p in PROTOS:
                if p not in self.topo.spec.nccl.protocols:
                    continue  # NCCL_PROTO (a network plugin may set it: aws-ofi-nccl on p4d)
                if a in ("nvls", "nvls_tree") + COLLNET and p != "Simple":
                    continue
                if p == "LL128" and not self._nvlink_only(segs):
                    continue  # NCCL enables LL128 by default only over NVLink
                out.append((a, p))
        return out

    def _collnet(self, op: str, segs: Sequence[Segment]) -> tuple[str, ...]:
        """The CollNet algorithms this AllReduce may use: CollNet enabled (``[nccl] collnet``, by default
        where the fabric reduces), two nodes or more, at most eight GPUs on each, a SHARP tree over the
        nodes; Direct also needs an NVSwitch (``tuning.cc``, ``enqueue.cc``)."""
        enabled = self.topo.spec.nccl.collnet
        fabric = self.topo.fabric
        if enabled is None:
            enabled = fabric is not None and all(t.sharp for t in fabric.spec.tiers)
        if (not enabled or op != "AllReduce" or len(segs) < 2
                or max(len(s.members) for s in segs) > COLLNET_MAX_LOCAL or not collnet_possible(self.topo, segs)):
            return ()
        switch = any(k == "nvswitch" for _, k in self.topo.spec.components)
        return COLLNET if switch else ("collnet_chain",)

    def _nvls_switches(self, segs: Sequence[Segment]) -> list[str] | None:
        if self.arch not in ("hopper", "blackwell") or not self.topo.spec.nccl.nvls:
            return None
        sw = [nvls_switch(self.topo, s) for s in segs]
        return None if any(x is None for x in sw) or any(len(s.members) < 2 for s in segs) else sw

    def estimate(self, algo: str, proto: str, op: str, members: Sequence[int], nbytes: float) -> float:
        """:meth:`analytic_seconds` of the collective, computed once per group shape."""
        members = tuple(members)
        settings = self._settings(algo, proto, op, members, nbytes)
        lat, bw = self._memo("estimate", members, (algo, proto, op) + settings, lambda: self._estimate(
            algo, proto, op, members, nbytes))
        return lat + nbytes / bw

    def _estimate(self, algo: str, proto: str, op: str, members: tuple[int, ...], nbytes: float) -> tuple:
        return self.tuning(algo, proto, op, members, nbytes)

    def analytic_seconds(self, coll: Collective, nbytes: float) -> float:
        """Uncontended time: latency plus bytes over the collective's algorithm bandwidth."""
        return coll.latency + nbytes / coll.algbw(self.topo.capacity)

    def choose(self, op: str, members: Sequence[int], nbytes: float, algo: str = "auto",
               proto: str = "auto") -> tuple[str, str]:
        """The (algorithm, protocol) NCCL would run (``algo``/``proto`` force one, like NCCL_ALGO/NCCL_PROTO)."""
        direct = (op, members if isinstance(members, tuple) else tuple(members), nbytes, algo, proto)
        hit = self._chosen.get(direct)
        if hit is not None:
            return hit
        key = (op, self.shape(members), nbytes, algo, proto)  # groups of one shape choose alike
        hit = self._choice.get(key)
        if hit is not None:
            self._chosen[direct] = hit
            return hit
        avail = self.available(op, members)
        cands = [(a, p) for a, p in avail if (algo == "auto" or a == algo or (algo == "collnet" and a in COLLNET))
                 and (proto == "auto" or p == proto)]
        if not cands:  # the forced algorithm cannot run this collective here: NCCL runs it as a ring
            cands = [(a, p) for a, p in avail if a == "ring" and (proto == "auto" or p == proto)]
        if not cands:
            cands = [("ring", "Simple")]
        best = min(cands, key=lambda ap: self.estimate(*ap, op, members, nbytes))
        self._choice[key] = self._chosen[direct] = best
        return best


