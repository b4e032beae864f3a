"""What binds a step: hand-computable cases of a link, a per-channel rate, a protocol cap and latency."""

from __future__ import annotations

import pytest

from p2sim.collectives.binding import CAP_CHANNEL, CAP_LL, Binding, collective_binding
from p2sim.collectives.nccl_tables import per_channel_tree_bw
from p2sim.formalism.hierarchy import LoweredStep
from p2sim.formalism.semantics import Op
from p2sim.sim import SimSettings, Simulator
from p2sim.topology import load_system

GIB = 2**30


def _step(*groups):
    return LoweredStep(Op.ALL_REDUCE, tuple(tuple(g) for g in groups))


def test_a_ring_over_one_nic_per_node_is_nic_bound():
    # a100: one 100 Gb/s NIC per node; a ring over 2 nodes sends 2 x 31/32 of the buffer through it
    topo = load_system("a100", 2)
    sim = Simulator(topo, SimSettings("ring"))
    b = sim.binding(_step(range(32)), [float(GIB)])
    assert (b.resource, b.kind, b.groups) == ("nic", "link", 1) and b.text == "nic links"
    nic = min(topo.capacity[k] for k, cls in enumerate(topo.edge_class) if cls == "nic")
    c = sim.collectives("AllReduce", [tuple(range(32))], [GIB])[0]
    assert b.seconds == pytest.approx(c.latency + 2 * 31 / 32 * GIB / nic, rel=1e-9)
    assert b.seconds == pytest.approx(sim.step(_step(range(32)), [float(GIB)]).seconds, rel=1e-9)


def test_a_tree_on_hopper_is_bound_by_ncclls_per_channel_rate():
    # dgx-h100, 2 nodes, tree/Simple: 8 trees of NCCL's 41.4 GB/s per channel (tuning.cc, Hopper, 2 nodes),
    # bus factor 2: 8 x 41.4 / 2 = 165.6 GB/s of buffer
    topo = load_system("dgx-h100", 2)
    sim = Simulator(topo, SimSettings("tree", proto="Simple"))
    b = sim.binding(_step(range(16)), [float(2**28)])
    assert (b.resource, b.kind) == (CAP_CHANNEL, "cap")
    c = sim.collectives("AllReduce", [tuple(range(16))], [2**28])[0]
    assert per_channel_tree_bw("hopper", 2) == 41.4
    assert b.seconds == pytest.approx(c.latency + 2**28 / (8 * 41.4e9 / 2), rel=1e-9)


def test_ll_is_bound_by_its_protocol_cap_and_tiny_messages_by_latency():
    topo = load_system("dgx-h100", 1)
    assert Simulator(topo, SimSettings("ring", proto="LL")).binding(_step(range(8)), [float(2**28)]).resource == CAP_LL
    b = Simulator(topo).binding(_step(range(8)), [8.0])
    assert b.kind == "latency" and b.text == "latency"


def test_groups_sharing_one_nic_are_named_with_their_count():
    # 16 pairs across the two a100 nodes all cross the one NIC per node
    topo = load_system("a100", 2)
    b = Simulator(topo, SimSettings("ring")).binding(_step(*[(i, i + 16) for i in range(16)]), [float(2**28)] * 16)
    assert (b.resource, b.groups) == ("nic", 16) and b.text == "nic links shared by 16 groups"


def test_the_bound_of_a_lone_collective_needs_no_simulator():
    topo = load_system("a100", 2)
    c = Simulator(topo, SimSettings("ring")).collectives("AllReduce", [tuple(range(32))], [GIB])[0]
    assert collective_binding(c, topo.capacity, topo.edge_class, GIB).to_json()["resource"] == "nic"
    assert Binding("nvswitch", "link", 1.0, 2).to_json()["text"] == "nvswitch links shared by 2 groups"


def _sendrecv_across_nodes(topo):
    sim = Simulator(topo)
    step = LoweredStep(Op("SendRecv"), ((0, 8),))
    c = sim.expander.collective("p2p", "Simple", "SendRecv", (0, 8), 2**30)
    return sim, step, c


def test_cross_node_sends_on_dgx_h100_name_the_pcie_link_that_binds_them():
    """Issue 43 asked why sends across nodes are 'bound by pcie links': NCCL counts PCIe gen5 x16 at 48 GB/s
    (topo.cc), below the NDR NIC's 50, so the GPU's PCIe path to its NIC binds (they run at 48, not 50)."""
    topo = load_system("dgx-h100", 2)
    sim, step, c = _sendrecv_across_nodes(topo)
    b = collective_binding(c, topo.capacity, topo.edge_class, 2**30)
    assert b.text == "pcie links" and b.seconds == pytest.approx(c.latency + 2**30 / 48e9, rel=1e-9)
    assert sim.binding(step, (2**30,)).text == "pcie links"


def test_a_pcie_link_and_a_nic_at_one_rate_are_both_named(tmp_path):
    """At a tie neither alone binds (raising one gains nothing): the answer names both, not whichever link
    came first in the file (issue 43)."""
    from p2sim.topology import system_paths

    text = system_paths()["dgx-h100"].read_text()
    assert "nic      = { bandwidth = 50.0 }" in text
    path = tmp_path / "tied.toml"
    path.write_text(text.replace("nic      = { bandwidth = 50.0 }", "nic      = { bandwidth = 48.0 }"))
    topo = load_system(str(path), 2)
    sim, step, c = _sendrecv_across_nodes(topo)
    assert collective_binding(c, topo.capacity, topo.edge_class, 2**30).text == "pcie and nic links"
    assert sim.binding(step, (2**30,)).text == "pcie and nic links"
