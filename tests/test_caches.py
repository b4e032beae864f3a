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
    # a flat network: NIC rates change no structure either (test_flat_nic_rates_...)
    assert structure_key(load_system("h100", 4)) == structure_key(load_system("h100", 4))


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
    assert not CollectiveCaches(load_system("h100", 2)).adopt(CollectiveCaches(load_system("h100", 4)))


def _with_class(system: str, nodes: int, cls: str, bandwidth: float):
    spec = load_system(system, nodes).spec
    return load_system(spec.with_class(cls, bandwidth=bandwidth), nodes)


def test_nic_rates_leave_the_structure_key_and_node_links_do_not():
    # issue 34 item 2: what each builder reads (structure_key's docstring). A NIC's cable is read only through a
    # channel count (NVLS Tree's) that the structure's own key holds, and as a tie-break of the flat network's
    # routes, which the key holds themselves; so a what-if of NIC rates shares, on flat and fabric systems alike
    for system in ("h100", "superpod-h100"):
        first, *rest = (structure_key(_with_class(system, 4, "nic", v)) for v in (25.0, 50.0, 100.0))
        assert all(k == first for k in rest)
    h100 = structure_key(load_system("h100", 4))
    # what the ring search reads (the node's PCIe and NVSwitch links), a spine (the flat network's routes between
    # switches), the node count: other keys
    for cls, rate in (("pcie", 16.0), ("nvswitch", 100.0), ("spine", 12.5)):
        assert structure_key(_with_class("h100", 4, cls, rate)) != h100, cls
    assert structure_key(load_system("h100", 8)) != h100


def test_a_node_link_rate_the_ring_search_reads_shares_nothing():
    # a node link's rate (PCIe: the GPUs' paths to their NICs, and the rings of a system without NVSwitch) is
    # part of the key: the caches of another PCIe rate are not taken
    base, fast = load_system("h100", 2), _with_class("h100", 2, "pcie", 16.0)
    first = CollectiveCaches(base)
    Expander(base, caches=first).collective("ring", "Simple", "AllReduce", tuple(range(16)), 2.0**30)
    other = CollectiveCaches(fast)
    assert first.rings and not other.adopt(first)
    assert not other.rings and not other.expansions(Expander(fast).rates).structures


def _same(a, b, capacity) -> bool:
    return (a.latency == b.latency and a.algbw(capacity) == b.algbw(capacity) and a.channels == b.channels
            and a.tuning == b.tuning and len(a.flows) == len(b.flows)
            and all(f.share == g.share and f.channels == g.channels and f.edges.tolist() == g.edges.tolist()
                    and f.coef.tolist() == g.coef.tolist() and f.caps == g.caps and f.cap_kinds == g.cap_kinds
                    for f, g in zip(a.flows, b.flows)))


def test_collectives_on_structures_of_another_nic_rate_equal_those_built_alone():
    # every algorithm across nodes on a flat h100 at 50 GB/s NICs, its structures then taken by 12.5 GB/s NICs
    # (where NVLS Tree runs fewer channels: nvls_tree_channels): each collective equals the one built alone
    base, slow = load_system("h100", 4), _with_class("h100", 4, "nic", 12.5)
    first = CollectiveCaches(base)
    group = tuple(range(32))
    cases = [(a, p) for a in ("ring", "tree", "nvls_tree") for p in ("Simple", "LL", "LL128")]
    for algo, proto in cases:
        for nbytes in (2.0**20, 2.0**30):
            Expander(base, caches=first).collective(algo, proto, "AllReduce", group, nbytes)
    adopted = CollectiveCaches(slow)
    assert adopted.adopt(first)
    rates = Expander(slow).rates
    assert adopted.expansions(rates).structures and not adopted.expansions(rates).cache  # no collective taken
    for algo, proto in cases:
        for nbytes in (2.0**20, 2.0**30):
            shared = Expander(slow, caches=adopted).collective(algo, proto, "AllReduce", group, nbytes)
            alone = Expander(slow).collective(algo, proto, "AllReduce", group, nbytes)
            assert _same(shared, alone, slow.capacity), (algo, proto, nbytes)


def test_clear_drops_what_the_hop_builders_keep():
    """A cleared topology's caches keep nothing of it: the hop builders' ring tables, CollNet heads and double
    trees live in them, not in module-level maps (a done what-if point keeps its topology, and so them, to the
    end of the run otherwise)."""
    from p2sim.collectives import Expander
    from p2sim.collectives.caches import CollectiveCaches
    from p2sim.topology import load_system

    topo = load_system("gb200-nvl72-pod", 16)
    caches = CollectiveCaches(topo)
    ex = Expander(topo, caches=caches)
    members = (5, 77, 149, 221, 293)
    ex.collective("ring", "Simple", "AllReduce", members, 2.0**30)
    ex.collective("tree", "Simple", "AllReduce", members, 2.0**30)
    assert caches.cyclic and caches.cyclic_bytes[0] > 0 and caches.double_trees
    caches.clear()
    assert not caches.cyclic and caches.cyclic_bytes[0] == 0 and not caches.double_trees
    assert not caches.collnet_heads



def test_shared_caches_build_each_structure_once_into_one_ledger_and_answer_as_alone():
    # what-if points searched together (whatif._shared_groups): the second builds into the first's structures
    base, two = load_system("superpod-h100", 16), _oversubscribed("superpod-h100", 16, 2.0)
    group = tuple(range(0, 16 * 8, 8))
    first, second = CollectiveCaches(base), CollectiveCaches(two)
    assert second.share(first) and not second.share(second)
    assert not CollectiveCaches(load_system("superpod-h100", 8)).share(first)  # another structure key
    Expander(base, caches=first).collective("ring", "Simple", "AllReduce", group, 2.0**30)
    mine, theirs = (c.expansions(Expander(t).rates) for c, t in ((second, two), (first, base)))
    held = len(theirs.structures)
    b = Expander(two, caches=second).collective("ring", "Simple", "AllReduce", group, 2.0**30)
    assert mine.structures is theirs.structures and len(theirs.structures) == held > 0  # found, not built
    assert mine.held is theirs.held and mine.held_bytes is theirs.held_bytes
    alone = Expander(two).collective("ring", "Simple", "AllReduce", group, 2.0**30)
    assert b.latency == alone.latency and b.algbw(two.capacity) == alone.algbw(two.capacity)
    assert [f.edges.tolist() for f in b.flows] == [f.edges.tolist() for f in alone.flows]
    # the rings' routed hops across nodes are one store too, under one byte count
    assert second.cyclic is first.cyclic and second.cyclic_bytes is first.cyclic_bytes and first.cyclic
    tables = len(first.cyclic)
    Expander(two, caches=second).collective("ring", "LL", "AllReduce", group, 2.0**20)
    assert len(first.cyclic) == tables
    # one's clear drops its own entries from the shared ledger and leaves the other's counted
    second.clear()
    assert theirs.held_bytes[0] == sum(size for _, size in theirs.held.values()) > 0
    assert all(owner is not mine.cache for owner, _ in theirs.held.values())
