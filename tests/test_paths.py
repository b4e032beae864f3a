from __future__ import annotations

from dataclasses import replace


from p2sim.topology import load_system
from p2sim.topology.paths import path_type


def names(topo, edges):
    return [topo.edges[e][1] for e in edges]


def test_path_types():
    t = load_system("dgx-h100", 1)
    assert t.router.intra_type(0, 1) == "NVL"
    p = load_system("pcie-8gpu", 1)
    assert path_type(p.router.node_view, ["n0/gpu0", "n0/cpu0", "n0/gpu1"]) == "PHB"
    assert path_type(p.router.node_view, ["n0/gpu0", "n0/cpu0", "n0/cpu1", "n0/gpu4"]) == "SYS"


def test_gpus_farther_than_the_p2p_level_go_through_host_memory():
    p = load_system("pcie-8gpu", 1)
    r = p.router.route(0, 1)
    assert r.transport == "SHM"
    assert names(p, r.edges) == ["n0/cpu0", "n0/mem0", "n0/cpu0", "n0/gpu1"]
    # across sockets: the receiver's memory
    assert names(p, p.router.route(0, 4).edges) == ["n0/cpu0", "n0/cpu1", "n0/mem1", "n0/cpu1", "n0/gpu4"]
    # NCCL_P2P_LEVEL=SYS lets peer-to-peer through the CPUs
    spec = p.spec
    sys_level = load_system(replace(spec, nccl=replace(spec.nccl, p2p_level="SYS")), 1)
    assert sys_level.router.route(0, 1).transport == "P2P"
    assert names(sys_level, sys_level.router.route(0, 1).edges) == ["n0/cpu0", "n0/gpu1"]


def test_nvlink_neighbours_use_peer_to_peer_and_others_the_host():
    v = load_system("v100", 1)  # GPUs 0 and 1 are NVLink neighbours; 0 and 2 meet only at CPU 0
    assert v.router.route(0, 1).transport == "P2P"
    assert v.router.route(0, 2).transport == "SHM"  # PHB is past NCCL's default P2P level (PXB)
    assert names(v, v.router.route(0, 2).edges) == ["n0/pcie0", "n0/cpu0", "n0/pcie1", "n0/gpu2"]  # no memory modelled
    d = load_system("dgx1-v100", 1)
    assert d.router.intra_type(0, 1) == "NVL" and d.router.intra_type(0, 5) == "SYS"


def test_nic_paths_gdr_pxn_and_host():
    t = load_system("dgx-h100", 2)
    # GPU 0 sends through NIC 0 on its own PCIe switch: GPUDirect RDMA
    assert names(t, t.router.route_via(0, 8, "nic0", "nic0").edges)[:2] == ["n0/pcie0", "n0/nic0"]
    # GPU 2 sends through NIC 0 by PXN: over NVLink to GPU 0 (or 1), then its PCIe switch
    via = names(t, t.router.route_via(2, 8, "nic0", "nic0").edges)
    assert via[0] == "n0/nvswitch" and via[2] == "n0/pcie0"
    # without GPUDirect (the NIC hangs off the CPU): staged in host memory
    p = load_system("pcie-8gpu", 2)
    assert "n0/mem0" in names(p, p.router.route(0, 8).edges)
