"""aws-ofi-nccl's region tuner (p2sim.collectives.ofi_tuner) and NCCL's choice under it."""

from __future__ import annotations

import math
from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from p2sim.collectives import Expander
from p2sim.collectives.ofi_tuner import MAX_RANKS, MAX_SIZE, Region, extend, inside, pick, regions
from p2sim.topology import Topology, find_spec

P5 = {("tree", "LL128"), ("tree", "LL"), ("ring", "LL128"), ("ring", "Simple"), ("nvls_tree", "Simple"),
      ("tree", "Simple")}


def test_extend_carries_a_line_to_the_maps_edge():
    assert extend((2**20, 4), (2**20, 64)) == (2.0**20, MAX_RANKS)            # vertical: to the most ranks
    x, y = extend((2**20, 4), (2**30, 4))                                     # horizontal: to the largest size
    assert math.isclose(x, MAX_SIZE) and y == 4.0  # through log2 and back, as the plugin's pow(2, log2(...))
    # slope 1 in the log2 plane through (2^20, 2) and (2^21, 4): y = x - 19, which reaches 2^20 ranks (y = 20)
    # at x = 39, beyond the largest size (log2 100 GiB = 36.64): it stops at the size, at 2^(36.64 - 19) ranks
    x, y = extend((2**20, 2), (2**21, 4))
    assert math.isclose(x, MAX_SIZE) and math.isclose(math.log2(y), math.log2(MAX_SIZE) - 19)


def test_inside_counts_the_edges_and_works_in_the_log2_plane():
    square = Region("ring", "Simple", ((4, 2), (64, 2), (64, 8), (4, 8)))
    assert inside(16, 4, square) and inside(64, 5, square) and inside(4, 2, square)  # inside, edge, corner
    assert not inside(65, 4, square) and not inside(16, 9, square)
    # a triangle whose hypotenuse runs from (2^2, 2^1) to (2^6, 2^3) in log2: (2^4, 2^2) lies on it
    tri = Region("tree", "LL128", ((4, 2), (64, 2), (64, 8)))
    assert inside(16, 4, tri) and inside(32, 4, tri) and not inside(8, 4, tri)
    # a degenerate region (a line, as the plugin closes some) holds its own points only
    line = Region("tree", "Simple", ((2**20, 4), (MAX_SIZE, 4), (2**20, 4)))
    assert inside(2**25, 4, line) and not inside(2**25, 5, line)


def test_the_p5_maps_as_the_plugin_lists_them():
    # 8 GPUs a node: five regions for AllReduce, tree/LL128 first; none for AllGather; 2 and 1 a node too
    r8 = regions("p5", 8, "AllReduce")
    assert [(r.algorithm, r.protocol) for r in r8] == [("tree", "LL128"), ("nvls_tree", "Simple"), ("ring", "LL128"),
                                                      ("nvls_tree", "Simple"), ("ring", "Simple")]
    assert r8[0].vertices[1] == (31457280, 16) and len(r8[3].vertices) == 17
    assert regions("p5", 8, "AllGather") == () and regions("none", 8, "AllReduce") == ()
    assert len(regions("p5", 2, "AllReduce")) == 8 and len(regions("p5", 1, "ReduceScatter")) == 1


def test_pick_steps_aside_where_the_plugin_does():
    assert pick("p5", "AllReduce", 16, 2, 2**20, P5) is None    # two nodes: "the regions are not well defined"
    assert pick("none", "AllReduce", 128, 16, 2**20, P5) is None
    assert pick("p5", "AllReduce", 12, 3, 2**20, P5) is None    # 4 GPUs a node: no map
    assert pick("p5", "Broadcast", 128, 16, 2**20, P5) is None  # no map for the collective


def test_pick_reads_the_p5_map():
    # 16 nodes x 8 (128 ranks): up to 288 MiB tree/LL128 (its vertex (301989888, 128)), then ring/LL128 to the
    # vertex (2147483648, 128), then ring/Simple
    assert pick("p5", "AllReduce", 128, 16, 2**28, P5) == ("tree", "LL128")
    assert pick("p5", "AllReduce", 128, 16, 2**30, P5) == ("ring", "LL128")
    assert pick("p5", "AllReduce", 128, 16, 2**34, P5) == ("ring", "Simple")
    # 64 nodes x 8 at 1 GiB: the NVLS-Tree region; without NVLS (NCCL's table ignores it) no later region holds
    # the point, and NCCL's own model chooses
    assert pick("p5", "AllReduce", 512, 64, 2**30, P5) == ("nvls_tree", "Simple")
    assert pick("p5", "AllReduce", 512, 64, 2**30, P5 - {("nvls_tree", "Simple")}) is None
    # one GPU a node: ring/Simple from 4,736,000 bytes at 2 ranks... and above 8 MiB ReduceScatter is a ring
    assert pick("p5", "ReduceScatter", 4, 4, 2**24, P5) == ("ring", "Simple")
    assert pick("p5", "ReduceScatter", 4, 4, 2**20, P5) is None


@given(st.sampled_from(["AllReduce", "AllGather", "ReduceScatter"]), st.sampled_from([1, 2, 8]),
       st.integers(3, 512), st.floats(1, 2**36), st.sets(st.sampled_from(sorted(P5))))
def test_pick_is_one_of_the_pairs_nccl_can_run(op, per_node, nodes, nbytes, available):
    got = pick("p5", op, per_node * nodes, nodes, nbytes, available)
    assert got is None or got in available


def _p5(**nccl) -> Topology:
    spec = find_spec("p5")
    return Topology(replace(spec, nccl=replace(spec.nccl, **nccl)), 16)


def test_nccl_runs_what_the_tuner_sets_on_16_p5_nodes():
    """p5 (ofi_tuner = "p5"): 1 GiB over 16 x 8 GPUs runs ring/LL128 as the plugin's map says; NCCL's own model
    (no tuner, or NCCL before 2.21.5, whose tuner interface the plugin's v2 needs) picks otherwise; 2 nodes
    are NCCL's own."""
    assert find_spec("p5").nccl.ofi_tuner == "p5"
    tuned, own, old = _p5(), _p5(ofi_tuner="none"), _p5(version="2.21.4")
    everyone = tuple(range(128))
    assert Expander(tuned).choose("AllReduce", everyone, 2**30) == ("ring", "LL128")
    assert Expander(own).choose("AllReduce", everyone, 2**30) != ("ring", "LL128")
    assert Expander(old).choose("AllReduce", everyone, 2**30) == Expander(own).choose("AllReduce", everyone, 2**30)
    pair = tuple(range(16))  # two nodes
    assert Expander(tuned).choose("AllReduce", pair, 2**30) == Expander(own).choose("AllReduce", pair, 2**30)
    # a forced protocol leaves the tuner only the pairs NCCL may run: with Simple alone no Simple region holds
    # 1 GiB x 128 ranks, so NCCL's model picks among the Simple pairs
    simple = _p5(protocols=("Simple",))
    assert Expander(simple).choose("AllReduce", everyone, 2**30)[1] == "Simple"


def test_before_tuner_v3_a_forced_algorithm_or_protocol_turns_the_tuner_off():
    """The plugin's tuner v2 (NCCL 2.21.5 to 2.22.2) steps aside when NCCL_ALGO or NCCL_PROTO is set
    (nccl_ofi_tuner.cpp, nccl_ofi_tuner_init_v2); v3 (2.22.3 on) reads NCCL's table of what may run instead."""
    everyone = tuple(range(128))
    v2, v3 = _p5(version="2.22.2", protocols=("LL128", "Simple")), _p5(version="2.22.3", protocols=("LL128", "Simple"))
    own = _p5(ofi_tuner="none", version="2.22.2", protocols=("LL128", "Simple"))
    assert Expander(v3).choose("AllReduce", everyone, 2**30) == ("ring", "LL128")
    assert Expander(v2).choose("AllReduce", everyone, 2**30) == Expander(own).choose("AllReduce", everyone, 2**30) != (
        "ring", "LL128")
    assert Expander(_p5(version="2.22.2")).choose("AllReduce", everyone, 2**30) == ("ring", "LL128")
