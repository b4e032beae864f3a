"""How fast a node's GPUs reach host memory at once (p2sim.topology.host_memory): hand-computed on shipped files."""

from __future__ import annotations

import pytest

from p2sim.topology import load_system
from p2sim.topology.host_memory import host_memory_rate


def test_dgx_h100_gpus_share_their_host_switchs_uplink():
    # each host PCIe switch holds two GPUs (and NICs); its x16 gen5 link to the CPU, 64 GB/s x NCCL's 0.75,
    # is shared by the two GPUs' copies: 24 GB/s each
    assert host_memory_rate(load_system("dgx-h100", 1)) == pytest.approx(24e9)


def test_a_grace_gpu_copies_over_its_own_nvlink_c2c():
    # GB200: each GPU's 450 GB/s NVLink-C2C link to its Grace, not shared (the file models no Grace memory link)
    assert host_memory_rate(load_system("gb200-nvl72", 1)) == pytest.approx(450e9)


def test_the_rate_never_exceeds_a_gpus_first_link():
    for name in ("dgx-h100", "dgx-b200", "p5", "gb300-nvl72"):
        topo = load_system(name, 1)
        g = topo.template
        gpu = topo.gpu_names[0]
        first = max(d["bandwidth"] for _, x, d in g.out_edges(gpu, data=True) if g.nodes[x]["kind"] in ("cpu", "pcie_switch"))
        assert 0 < host_memory_rate(topo) <= first
