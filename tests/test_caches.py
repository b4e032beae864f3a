from __future__ import annotations

from dataclasses import replace

from p2sim.collectives import Expander
from p2sim.collectives.caches import CollectiveCaches, structure_key
from p2sim.topology import load_system


def _oversubscribed(system: str, nodes: int, ratio: float):
    spec = load_system(system, nodes).spec
    first, *rest = spec.fabric.tiers
    return load_system(replace(spec, fabric=replace(spec.fabric, tiers=(replace(first, oversubscription=ratio),
                                                                        *rest))), nodes)


def test_topologies_that_differ_only_in_uplink_rates_have_one_structure_key():
    # issue 34: what-if points of leaf oversubscription 1, 2, 4 under adaptive routing build the same structures
    base, two = load_system("superpod-h100", 64), _oversubscribed("superpod-h100", 64, 2.0)
    assert (base.capacity != two.capacity).any()  # the uplinks' trunks differ
    assert structure_key(base) is not None and structure_key(base) == structure_key(two)
    # a node's own link (what the ring search reads) or the node count: another key
    spec = base.spec
    nvl = replace(spec, classes={**spec.classes, "nvswitch": replace(spec.classes["nvswitch"], bandwidth=100.0)})
    assert structure_key(load_system(nvl, 64)) != structure_key(base)
    assert structure_key(load_system("superpod-h100", 32)) != structure_key(base)
    # ECMP: a tier's oversubscription changes its port count, so its link numbering
    assert structure_key(load_system("roce-h100", 16)) != structure_key(_oversubscribed("roce-h100", 16, 1.0))
    assert structure_key(load_system("h100", 4)) is None  # no fabric: nothing shared


def test_adopted_structures_are_the_ones_built_and_results_are_unchanged():
    base, two = load_system("superpod-h100", 16), _oversubscribed("superpod-h100", 16, 2.0)
    group = tuple(range(0, 16 * 8, 8))  # one GPU a node: a ring across the fabric
    first = CollectiveCaches(base)
    Expander(base, caches=first).collective("ring", "Simple", "AllReduce", group, 2.0**30)
    adopted = CollectiveCaches(two)
    assert adopted.adopt(first)
    mine, theirs = (c.expansions(Expander(t).rates).structures for c, t in ((adopted, two), (first, base)))
    assert mine and mine.keys() == theirs.keys() and all(mine[k] is theirs[k] for k in mine)
    alone = Expander(two).collective("ring", "Simple", "AllReduce", group, 2.0**30)
    shared = Expander(two, caches=adopted).collective("ring", "Simple", "AllReduce", group, 2.0**30)
    assert shared.latency == alone.latency and shared.algbw(two.capacity) == alone.algbw(two.capacity)
    assert [f.edges.tolist() for f in shared.flows] == [f.edges.tolist() for f in alone.flows]
    assert not CollectiveCaches(load_system("h100", 2)).adopt(CollectiveCaches(load_system("h100", 2)))
