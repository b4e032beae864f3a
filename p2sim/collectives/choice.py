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

from ..util.algorithms import ALGO_CHOICES, ALGORITHMS, COLLNET, algorithm, forced
from ..util.errors import InputError
from .channels import Segment, segments
from .collnet import collnet_possible
from .nccl_tables import ALGOS, COLLNET_MAX_LOCAL, PROTOS
from .nvls import nvls_switch
from .pattern import Collective

__all__ = ["Choice", "ALGORITHMS", "ALGO_CHOICES", "COLLNET", "check_algo", "serves"]

_SIMPLE_ONLY = ("nvls", "nvls_tree") + COLLNET  # NCCL runs them with Simple only (tuning.cc: busBw = 0 otherwise)


def check_algo(text: str, choices: Sequence[str] = ALGO_CHOICES) -> str:
    t = text.lower().replace("-", "_")
    if t not in choices:
        raise InputError(f"algo: {text!r} is not one of {', '.join(choices)}")
    return t


def serves(algo: str, op: str) -> bool:
    """Whether the forced setting ``algo`` (``auto``, an algorithm, ``collnet``) runs collective ``op`` at all."""
    return algo == "auto" or op in algorithm(forced(algo)[0]).collectives


class Choice:
    """Choice methods of :class:`~p2sim.collectives.expand.Expander` (a mixin: it uses the
    expander's ``topo``, ``arch``, ``collective`` and caches)."""

    def available(self, op: str, members: Sequence[int], proto: str = "auto") -> list[tuple[str, str]]:
        """The (algorithm, protocol) pairs NCCL may use for this collective, in NCCL's order.

        A forced ``proto`` (``NCCL_PROTO``) is enabled as NCCL enables a protocol the user names: in
        place of the system's ``[nccl] protocols`` (a plugin's default, which it sets only where the
        user set none: aws-ofi-nccl's platform-aws), and LL128 also where NCCL would not enable it by
        default (tuning.cc applies the NVLink-only rule to a default-enabled LL128 alone).
        """
        return self._memo("available", members, (op, proto), lambda: self._available(op, members, proto))

    def _available(self, op: str, members: Sequence[int], proto: str = "auto") -> list[tuple[str, str]]:
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
                if proto != "auto" and p != proto:
                    continue  # NCCL_PROTO names one protocol
                if proto == "auto" and p not in self.topo.spec.nccl.protocols:
                    continue  # NCCL_PROTO (a network plugin may set it: aws-ofi-nccl on p4d)
                if a in ("nvls", "nvls_tree") + COLLNET and p != "Simple":
                    continue
                if p == "LL128" and proto == "auto" and not self._nvlink_only(segs):
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

    def why_not(self, algo: str, op: str | None = None, members: Sequence[int] | None = None,
                proto: str = "auto") -> str | None:
        """Why NCCL cannot run ``op`` over ``members`` when ``algo`` (and ``proto``) are forced on this topology,
        or None when it can: the same rules as :meth:`available`, as a reason.  Without ``op`` and ``members``,
        only what holds of every collective and group (the system's NCCL settings, GPUs, NVSwitch, fabric
        and node count).  A group of one GPU runs anything (NCCL runs nothing for one rank: enqueue.cc)."""
        if algo == "auto":
            return None
        names = forced(algo)
        why = self._system_why_not(names)
        if why is None and proto not in ("auto", "Simple") and all(a in _SIMPLE_ONLY for a in names):
            why = f"it runs the Simple protocol only (NCCL's tuning.cc), not {proto}"
        if why is None and op is not None and not serves(algo, op):
            why = f"it runs {', '.join(algorithm(names[0]).collectives)} only (NCCL's tuning.cc), not {op}"
        if why is None and op is not None and members is not None and len(set(members)) > 1:
            why = self._group_why_not(names, op, segments(self.topo, members))
        return why

    def _system_why_not(self, names: tuple[str, ...]) -> str | None:
        topo, spec = self.topo, self.topo.spec
        nccl, system = spec.nccl, spec.name
        if not any(a in nccl.algorithms for a in names):
            return f"{system}'s [nccl] algorithms ({', '.join(nccl.algorithms)}: its NCCL_ALGO) leave it out"
        if names[0] in ("nvls", "nvls_tree"):
            if self.arch not in ("hopper", "blackwell"):
                return (f"NVLS needs NVLink SHARP, in the NVSwitches of Hopper GPUs and later (NCCL's nvls.cc), and "
                        f"{system}'s GPUs are {self.arch}")
            if not nccl.nvls:
                return f"{system} turns NVLS off ([nccl] nvls = false: NCCL_NVLS_ENABLE=0)"
            if not spec.nvls_switches:
                return f"{system}'s NVSwitches have no NVLink SHARP (no node component with nvls = true)"
            if names[0] == "nvls_tree" and topo.node_count < 2:
                return f"NVLS Tree runs across nodes (NCCL disables it on one node: tuning.cc), and {system} has 1 node here"
        if names[0] in COLLNET:
            fabric = topo.fabric
            if nccl.collnet is False:
                return f"{system} turns CollNet off ([nccl] collnet = false: NCCL_COLLNET_ENABLE=0)"
            if fabric is None:
                return (f"{system} has no SHARP tier: CollNet needs a network that reduces (a [fabric] whose "
                        f"tiers all have sharp = true)")
            flat = [t.name for t in fabric.spec.tiers if not t.sharp]
            if nccl.collnet is None and flat:
                return (f"{system}'s fabric tier(s) {', '.join(flat)} have no SHARP (sharp = true), and CollNet "
                        f"needs the whole SHARP tree")
            if topo.node_count < 2:
                return f"CollNet runs across nodes (NCCL's CollNet plugin), and {system} has 1 node here"
            if names == ("collnet_direct",) and not any(k == "nvswitch" for _, k in spec.components):
                return f"CollNet Direct needs an NVSwitch in the node (NCCL's tuning.cc), and {system}'s nodes have none"
        return None

    def _group_why_not(self, names: tuple[str, ...], op: str, segs: Sequence[Segment]) -> str | None:
        """Why a group (on a system where the algorithm exists) cannot run it: the rules of :meth:`_available`."""
        if names[0] in ("nvls", "nvls_tree"):
            if names[0] == "nvls" and len(segs) > 1:
                return (f"its group spans {len(segs)} nodes, and NVLS stays inside one NVLink domain (NCCL crosses "
                        f"nodes with it only over CollNet, which p2sim does not model)")
            if names[0] == "nvls_tree" and len(segs) == 1:
                return "its group lies in one node, and NVLS Tree runs across nodes (NCCL disables it on one node)"
            if self._nvls_switches(segs) is None:
                return "NVLS needs at least 2 GPUs of the group on one NVLink SHARP switch in every node"
        if names[0] in COLLNET and not set(names) & set(self._collnet(op, segs)):
            if len(segs) < 2:
                return "its group lies in one node, and CollNet runs across nodes"
            most = max(len(s.members) for s in segs)
            if most > COLLNET_MAX_LOCAL:
                return (f"its group has {most} GPUs in a node, and CollNet takes at most {COLLNET_MAX_LOCAL} "
                        f"(NCCL_MAX_DIRECT_ARITY + 1: enqueue.cc)")
            return "its nodes' NICs reach no common SHARP tree"
        return None

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
        avail = self.available(op, members, proto)
        cands = [(a, p) for a, p in avail if (algo == "auto" or a == algo or (algo == "collnet" and a in COLLNET))]
        if not cands and algo != "auto" and serves(algo, op) and len(set(members)) > 1:
            why = self.why_not(algo, op, members, proto)
            if why is not None:  # NCCL refuses it (enqueue.cc: "no algorithm/protocol available")
                raise InputError(f"algo: {algo} cannot run this {op} of {len(set(members))} GPUs: {why}")
        if not cands:  # a collective the forced algorithm does not serve runs as a ring (see expand.py)
            cands = [(a, p) for a, p in avail if a == "ring"]
        if not cands:
            cands = [("ring", "Simple")]
        best = min(cands, key=lambda ap: self.estimate(*ap, op, members, nbytes))
        self._choice[key] = self._chosen[direct] = best
        return best


