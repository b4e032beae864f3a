"""NCCL's automatic choice: which algorithm and protocol a collective runs.

For every collective call NCCL estimates each enabled (algorithm, protocol)'s time with its
tuning model (``src/graph/tuning.cc``) and runs the least; :class:`Choice` does the same on
p2sim's expansion with NCCL's own figures (:attr:`Collective.tuning
<p2sim.collectives.pattern.Collective.tuning>`).  Which pairs a group may use follows NCCL's
rules, each algorithm's own (:mod:`p2sim.collectives.algorithms`: trees reduce only, NVLS needs a
Hopper-or-later NVSwitch, CollNet a SHARP fabric), LL128 NVLink inside nodes, and ``NCCL_ALGO`` /
``NCCL_PROTO`` (``[nccl] algorithms``, ``protocols``) restrict them.  A stage of
:class:`~p2sim.collectives.expand.Expander`: it holds the choices of its
:class:`~p2sim.collectives.caches.Expansions` (per group shape, and per group), and asks the expander's
settings and NCCL's figures through the callables it is given.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

from ..util.algorithms import ALGO_CHOICES, ALGORITHMS, COLLNET, algorithm as info_of, forced
from ..util.errors import InputError
from ..topology import Topology
from ..topology.settings import NcclSettings
from .algorithms import FALLBACK, Algorithm, algorithm, forced_algorithms
from .caches import CollectiveCaches, Expansions
from .channels import segments
from .decisions import MISSING
from .nccl_tables import ALGOS, PROTOS, ll128_over_network
from .ofi_tuner import pick
from .p2p import P2P_ALGO, P2P_OPS, P2P_PROTO
from .pattern import Collective
from .shapes import Shapes
from .structure import Structures

__all__ = ["Choice", "ALGORITHMS", "ALGO_CHOICES", "COLLNET", "check_algo", "serves"]


def check_algo(text: str, choices: Sequence[str] = ALGO_CHOICES) -> str:
    t = text.lower().replace("-", "_")
    if t not in choices:
        raise InputError(f"algo: {text!r} is not one of {', '.join(choices)}")
    return t


def serves(algo: str, op: str) -> bool:
    """Whether the forced setting ``algo`` (``auto``, an algorithm, ``collnet``) runs collective ``op`` at all."""
    return algo == "auto" or op in info_of(forced(algo)[0]).collectives


def _first(reasons: Sequence[str | None]) -> str | None:
    """A setting of several algorithms (``collnet``) can run where any of them can; else the first's reason."""
    return None if any(r is None for r in reasons) else reasons[0]


_DEFAULT_NCCL = NcclSettings()  # NCCL_ALGO and NCCL_PROTO unset: what the tuner's v2 runs under

# the relative slack a bound on an estimate keeps (a design figure, not a model one): the estimate sums its
# flows' shares and loads in floating point, the bound takes their exact sums; far above their rounding (1e-16
# relative per operation, a few hundred of them), far below any difference between algorithms
MARGIN = 1e-9


# what the choice asks of the expander: (algo, proto, op, members, nbytes) -> its settings, NCCL's
# (latency, bandwidth), and a bound on them
Figures = Callable[[str, str, str, tuple, float], tuple]


class Choice:
    """The choice stage of an :class:`~p2sim.collectives.expand.Expander`; what each algorithm allows is the
    algorithm's (:mod:`p2sim.collectives.algorithms`).  ``settings``, ``tuning`` and ``tuning_bound`` are the
    expander's (:meth:`~p2sim.collectives.expand.Expander.tuning`, ``tuning_bound``)."""

    #: :meth:`choose` leaves unbuilt the candidates whose bound shows they cannot win (:meth:`least`)
    prune: bool = True
    #: :meth:`choose` replays a choice an earlier task made for the group where its reads still hold
    #: (:mod:`.decisions`); ``replay = False`` works every choice out (the tests compare the two)
    replay: bool = True

    def __init__(self, topo: Topology, caches: CollectiveCaches, shared: Expansions, shapes: Shapes,
                 structures: Structures, settings: Figures, tuning: Figures, tuning_bound: Figures) -> None:
        self.topo = topo
        self.caches = caches
        self.shapes = shapes
        self.structures = structures
        self._choice = shared.choice
        self._chosen = shared.chosen
        self._decisions = shared.decisions
        self._settings = settings
        self.tuning = tuning
        self.tuning_bound = tuning_bound

    def available(self, op: str, members: Sequence[int], proto: str = "auto") -> list[tuple[str, str]]:
        """The (algorithm, protocol) pairs NCCL may use for this collective, in NCCL's order.

        A forced ``proto`` (``NCCL_PROTO``) is enabled as NCCL enables a protocol the user names: in
        place of the system's ``[nccl] protocols`` (a plugin's default, which it sets only where the
        user set none: aws-ofi-nccl's platform-aws), and LL128 also where NCCL would not enable it by
        default (tuning.cc applies the NVLink-only rule to a default-enabled LL128 alone).
        """
        return self.shapes.memo("available", members, (op, proto), lambda: self._available(op, members, proto))

    def _available(self, op: str, members: Sequence[int], proto: str = "auto") -> list[tuple[str, str]]:
        segs = segments(self.topo, members)
        out = []
        for name in ALGOS:
            if name not in self.topo.spec.nccl.algorithms:
                continue  # NCCL_ALGO (a cloud's NCCL profile may set it: GCP's TCPXO)
            a = algorithm(name)
            if not a.usable(self.topo, op, segs, self.caches):
                continue
            for p in PROTOS:
                if proto != "auto" and p != proto:
                    continue  # NCCL_PROTO names one protocol
                if proto == "auto" and p not in self.topo.spec.nccl.protocols:
                    continue  # NCCL_PROTO (a network plugin may set it: aws-ofi-nccl on p4d)
                if a.simple_only and p != "Simple":
                    continue
                if p == "LL128" and proto == "auto" and not self.structures.nvlink_only(segs):
                    continue  # NCCL enables LL128 by default only over NVLink
                if p == "LL128" and proto == "auto" and len(segs) > 1 and not ll128_over_network(
                        self.topo.router.net_path_type, self.topo.spec.nccl.arch, self.topo.spec.nccl.version_at_least(2, 27, 3)):
                    continue  # ... and only through NICs near the GPUs (tuning.cc's typeInter rule)
                out.append((name, p))
        return out

    def why_not(self, algo: str, op: str | None = None, members: Sequence[int] | None = None,
                proto: str = "auto") -> str | None:
        """Why NCCL cannot run ``op`` over ``members`` when ``algo`` (and ``proto``) are forced on this topology,
        or None when it can: the same rules as :meth:`available`, as a reason.  Without ``op`` and ``members``,
        only what holds of every collective and group (the system's NCCL settings, GPUs, NVSwitch, fabric
        and node count).  A group of one GPU runs anything (NCCL runs nothing for one rank: enqueue.cc)."""
        if algo == "auto":
            return None
        algos = forced_algorithms(algo)
        why = self._system_why_not(algos)
        if why is None and proto not in ("auto", "Simple") and all(a.simple_only for a in algos):
            why = f"it runs the Simple protocol only (NCCL's tuning.cc), not {proto}"
        if why is None and op is not None and not serves(algo, op):
            why = f"it runs {', '.join(algos[0].info.collectives)} only (NCCL's tuning.cc), not {op}"
        if why is None and op is not None and members is not None and len(set(members)) > 1:
            segs = segments(self.topo, members)
            why = _first([a.why_not_group(self.topo, op, segs, self.caches) for a in algos])
        return why

    def _system_why_not(self, algos: Sequence[Algorithm]) -> str | None:
        nccl, system = self.topo.spec.nccl, self.topo.spec.name
        if not any(a.name in nccl.algorithms for a in algos):
            return f"{system}'s [nccl] algorithms ({', '.join(nccl.algorithms)}: its NCCL_ALGO) leave it out"
        return _first([a.why_not_system(self.topo) for a in algos])

    def estimate(self, algo: str, proto: str, op: str, members: Sequence[int], nbytes: float) -> float:
        """:meth:`analytic_seconds` of the collective, computed once per group shape."""
        members = tuple(members)
        # NCCL's model reads the channels, share, plateau and chunk of the settings; the loop (fill), the threads
        # (the CTA cap) and whether the chunks fit in flight (the window) shape p2sim's time only, so they do
        # not split the estimate's memo
        settings = self._settings(algo, proto, op, members, nbytes)[:4]
        lat, bw = self.shapes.memo("estimate", members, (algo, proto, op) + settings, lambda: self._estimate(
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
        if op in P2P_OPS:  # grouped sends and receives: NCCL_ALGO / NCCL_PROTO do not apply (p2p.py)
            return P2P_ALGO, P2P_PROTO
        direct = (op, members if isinstance(members, tuple) else tuple(members), nbytes, algo, proto)
        log = self._decisions
        hit = log.read(self._chosen, direct)
        if hit is not MISSING:
            return hit
        key = (op, self.shapes.shape(members), nbytes, algo, proto)  # groups of one shape choose alike
        hit = log.read(self._choice, key)
        if hit is not MISSING:
            return log.write(self._chosen, direct, hit)
        if log.recording or not self.replay:  # (a choice inside one being recorded: its reads are that one's)
            return self._choose(op, members, nbytes, algo, proto, key, direct)
        # this task decides for the shape: as an earlier task did for this group, where its reads still hold
        hit = log.replay(direct)
        if hit is not MISSING:
            return hit
        return log.record(direct, lambda: self._choose(op, members, nbytes, algo, proto, key, direct))

    def _choose(self, op: str, members: Sequence[int], nbytes: float, algo: str, proto: str, key: tuple,
                direct: tuple) -> tuple[str, str]:
        """:meth:`choose` worked out, for the shape (``key``) and the group (``direct``)."""
        avail = self.available(op, members, proto)
        allowed = ALGORITHMS if algo == "auto" else forced(algo)
        cands = [(a, p) for a, p in avail if a in allowed]
        if not cands and algo != "auto" and serves(algo, op) and len(set(members)) > 1:
            why = self.why_not(algo, op, members, proto)
            if why is not None:  # NCCL refuses it (enqueue.cc: "no algorithm/protocol available")
                raise InputError(f"algo: {algo} cannot run this {op} of {len(set(members))} GPUs: {why}")
        if not cands:  # a collective the forced algorithm does not serve runs as a ring (see expand.py)
            cands = [(a, p) for a, p in avail if a == FALLBACK.name]
        if not cands:
            cands = [(FALLBACK.name, "Simple")]
        best = self.tuned(op, members, nbytes, cands) or self.least(cands, op, members, nbytes)
        self._decisions.write(self._choice, key, best)
        return self._decisions.write(self._chosen, direct, best)

    def tuned(self, op: str, members: Sequence[int], nbytes: float, cands: Sequence[tuple[str, str]]
              ) -> tuple[str, str] | None:
        """The pair the network plugin's tuner sets for this call (:func:`~p2sim.collectives.ofi_tuner.pick`:
        aws-ofi-nccl's region maps, ``[nccl] ofi_tuner``, which NCCL loads from the plugin from 2.21.5 on, its tuner
        v2, which the plugin turns off where NCCL_ALGO or NCCL_PROTO is set, until v3 from 2.22.3:
        ``nccl_ofi_tuner.cpp``), where it sets one among the ``cands`` NCCL can run; ``None``: NCCL's own model
        chooses."""
        nccl = self.topo.spec.nccl
        if nccl.ofi_tuner == "none" or not nccl.version_at_least(2, 21, 5):  # the plugin's tuner v2: NCCL 2.21.5
            return None
        if not nccl.version_at_least(2, 22, 3) and (nccl.algorithms != _DEFAULT_NCCL.algorithms
                                                    or nccl.protocols != _DEFAULT_NCCL.protocols):
            return None  # before v3 (2.22.3) the plugin turns its tuner off under NCCL_ALGO / NCCL_PROTO
        gpn = self.topo.gpus_per_node
        per_node = Counter(m // gpn for m in set(members))
        if len(set(per_node.values())) != 1:  # the maps are for the same GPUs on every node
            return None
        return pick(nccl.ofi_tuner, op, sum(per_node.values()), len(per_node), nbytes, set(cands))

    def least(self, cands: Sequence[tuple[str, str]], op: str, members: Sequence[int], nbytes: float
              ) -> tuple[str, str]:
        """``min(cands, key=estimate)``, without estimating the candidates that cannot win.

        Each candidate's :meth:`estimate_bound` is at most its estimate (see
        :meth:`~p2sim.collectives.expand.Expander.tuning_bound`) and needs no structure; the candidates are
        estimated in the order of their bounds, and one whose bound is above the least estimate so far (by
        more than :data:`MARGIN`, for the bound's sums rounded otherwise than the estimate's) is left
        unbuilt: its estimate would be larger still.  Every candidate that can tie the least is estimated,
        and ties go to the first in ``cands``' order, as :func:`min` gives them: the same choice, exactly.
        ``prune = False`` estimates them all (the tests compare the two)."""
        if not self.prune or len(cands) == 1:
            return min(cands, key=lambda ap: self.estimate(*ap, op, members, nbytes))
        bounds = [self.estimate_bound(*ap, op, members, nbytes) for ap in cands]
        best: tuple[float, int] | None = None
        for i in sorted(range(len(cands)), key=lambda j: (bounds[j], j)):
            if best is not None and bounds[i] > best[0] * (1 + MARGIN):
                break  # sorted: every later bound is larger still
            t = (self.estimate(*cands[i], op, members, nbytes), i)
            if best is None or t < best:
                best = t
        return cands[best[1]]

    def estimate_bound(self, algo: str, proto: str, op: str, members: Sequence[int], nbytes: float) -> float:
        """At most :meth:`estimate`, without the collective's structure
        (:meth:`~p2sim.collectives.expand.Expander.tuning_bound`; its bandwidth taken :data:`MARGIN` larger)."""
        lat, bw = self.tuning_bound(algo, proto, op, tuple(members), nbytes)
        return lat + nbytes / (bw * (1 + MARGIN)) if bw > 0 else lat


