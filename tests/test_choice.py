"""NCCL's choice (p2sim/collectives/choice.py): pruned by bounds, exactly the choice of every estimate."""

from __future__ import annotations

import functools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from p2sim.collectives import structure
from p2sim.collectives.algorithms import algorithm
from p2sim.collectives.choice import MARGIN, Choice
from p2sim.collectives.expand import Expander
from p2sim.topology import load_system

# (system, nodes): every shipped kind of node and fabric, small enough to build every candidate
SYSTEMS = (("a100", 4), ("h100", 4), ("dgx-h100", 4), ("superpod-h100", 8), ("gb200-nvl72-pod", 2),
           ("roce-h100", 8))
OPS = ("AllReduce", "AllGather", "ReduceScatter", "Broadcast", "Reduce")
SIZES = (8, 4096, 2**16, 2**20, 2**24, 2**28, 2**32)


@functools.lru_cache(maxsize=None)
def _topo(name: str, nodes: int):
    return load_system(name, nodes=nodes)


def _group(data, name: str, nodes: int) -> tuple[int, ...]:
    """A group: some nodes (a stride and a count) and the same GPUs of each (a stride and a count)."""
    gpn = _topo(name, nodes).gpus_per_node
    n_stride = data.draw(st.integers(1, nodes), "node stride")
    n_count = data.draw(st.integers(1, max(1, (nodes - 1) // n_stride + 1)), "nodes")
    first = data.draw(st.integers(0, nodes - 1 - (n_count - 1) * n_stride), "first node")
    g_stride = data.draw(st.sampled_from([s for s in (1, 2, 4, 8) if s <= gpn]), "gpu stride")
    g_count = data.draw(st.integers(1, gpn // g_stride), "gpus a node")
    members = tuple((first + i * n_stride) * gpn + j * g_stride for i in range(n_count) for j in range(g_count))
    if len(members) < 2:
        members = (0, 1)
    return members


def _unpruned(ex: Expander, op: str, members: tuple[int, ...], nbytes: float) -> tuple[str, str]:
    """Today's choice: the least estimate of all, the first among equals (min)."""
    cands = ex.available(op, members)
    return min(cands, key=lambda ap: ex.estimate(*ap, op, members, nbytes))


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_pruned_choice_is_every_estimates_choice(data) -> None:
    name, nodes = data.draw(st.sampled_from(SYSTEMS), "system")
    members = _group(data, name, nodes)
    op = data.draw(st.sampled_from(OPS), "op")
    nbytes = float(data.draw(st.sampled_from(SIZES), "bytes"))
    pruned = Expander(_topo(name, nodes)).choose(op, members, nbytes)
    ex = Expander(_topo(name, nodes))
    assert pruned == _unpruned(ex, op, members, nbytes)
    for ap in ex.available(op, members):  # the bound is below every candidate's estimate, winner or not
        assert ex.estimate_bound(*ap, op, members, nbytes) <= ex.estimate(*ap, op, members, nbytes) * (1 + MARGIN)


def test_ties_go_to_the_first_candidate(monkeypatch: pytest.MonkeyPatch) -> None:
    """Equal estimates: the first in NCCL's order wins, whatever the bounds' order (min's rule)."""
    ex = Expander(_topo("h100", 4))
    members = tuple(range(8))
    cands = ex.available("AllReduce", members)
    monkeypatch.setattr(Choice, "estimate", lambda self, *a: 1.0)
    # the last candidate's bound is the least: it is estimated first, and still loses the tie
    monkeypatch.setattr(Choice, "estimate_bound", lambda self, a, p, *r: 0.5 if (a, p) == cands[-1] else 0.9)
    assert ex.choice.least(cands, "AllReduce", members, 2.0**20) == cands[0]


def test_candidates_that_cannot_win_are_not_built(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 64 MiB AllReduce over 8 nodes of a SuperPOD: CollNet's chain wins, and the trees' LL and LL128 (their
    channel and LL caps) are not built; the choice is the same as with every candidate built."""
    built: list[str] = []
    real = structure.Structures.build

    def counted(self, algo, *args):
        built.append(algo)
        return real(self, algo, *args)

    monkeypatch.setattr(structure.Structures, "build", counted)
    topo = _topo("superpod-h100", 8)
    members = tuple(range(0, 64, 8))
    args = ("AllReduce", members, 2.0**26)
    pruned = Expander(topo).choose(*args)
    pruned_builds = len(built)
    built.clear()
    ex = Expander(topo)
    ex.choice.prune = False
    assert ex.choose(*args) == pruned == ("collnet_chain", "Simple")
    assert pruned_builds < len(built)


def test_bus_factor_is_the_structures() -> None:
    """The bound's bus factor is the one each algorithm's structure returns."""
    topo = _topo("superpod-h100", 8)
    for members in (tuple(range(8)), tuple(range(0, 64, 8)), tuple(range(0, 64, 4))):
        ex = Expander(topo)
        for op in OPS:
            for a, p in ex.available(op, members):
                c = ex.collective(a, p, op, members, 2.0**24)
                assert algorithm(a).bus_factor(op, len(members)) == c.bus_factor


def _versioned(name: str, nodes: int, version: str):
    from dataclasses import replace

    from p2sim.topology import find_spec
    spec = find_spec(name)
    return load_system(replace(spec, nccl=replace(spec.nccl, version=version)), nodes=nodes)


def test_ll128_across_nodes_needs_a_nic_near_the_gpus() -> None:
    """tuning.cc enables LL128 by default only where the graph's GPU-NIC path (typeInter) is at most PXB, or on
    Hopper and later at most PXN -- and from 2.27.3 P2C, a NIC behind the GPU's own Grace.  A GB200 rack's NICs
    hang off its Grace CPUs: NCCL 2.26.2 (the 20-rack rows') ran no LL128 between racks, 2.27.3 and later do;
    inside one rack (no network) LL128 stays.  A DGX H100's NICs share PCIe switches with the GPUs (PIX): LL128
    on; P2's A100 VMs reach their NIC through the CPU (PHB): off across nodes, on inside one."""
    members = tuple(range(144))
    old = Expander(_versioned("gb200-nvl72-pod", 2, "2.26.2")).available("AllReduce", members)
    assert ("tree", "LL128") not in old and ("ring", "LL128") not in old and ("tree", "Simple") in old
    new = Expander(_versioned("gb200-nvl72-pod", 2, "2.27.3")).available("AllReduce", members)
    assert ("tree", "LL128") in new and ("ring", "LL128") in new
    assert ("ring", "LL128") in Expander(_topo("gb200-nvl72-pod", 2)).available("AllReduce", members)  # newest
    assert ("ring", "LL128") in Expander(_versioned("gb200-nvl72-pod", 2, "2.26.2")).available(
        "AllReduce", tuple(range(72)))  # one rack: NVLink only
    assert ("ring", "LL128") in Expander(_topo("dgx-h100", 4)).available("AllReduce", tuple(range(16)))
    assert ("ring", "LL128") not in Expander(_topo("a100", 4)).available("AllReduce", tuple(range(32)))
    assert ("ring", "LL128") in Expander(_topo("a100", 4)).available("AllReduce", tuple(range(16)))
    # forced, NCCL enables it anyway (NCCL_PROTO=LL128 sets the protocol on, not "on by default")
    assert ("ring", "LL128") in Expander(_topo("a100", 4)).available("AllReduce", tuple(range(32)), "LL128")
