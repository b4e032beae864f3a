from __future__ import annotations

import pytest

from p2sim.topology import find_spec
from p2sim.topology.efficiency import MEMORY_SHARE, PCIE_SHARE, link_kind, nvlink_share


def test_nvlink_figures_are_nccls_per_link_over_the_data_sheets():
    # topo.h: 18 of 20 (6.x), 20 of 25 (7.x, 8.x), 12 of 14.0625 (8.6), 20.6 of 25 (9.x), 40.1 of 50 (10.x)
    assert nvlink_share(60) == pytest.approx(0.9) and nvlink_share(70) == nvlink_share(80) == pytest.approx(0.8)
    assert nvlink_share(86) == pytest.approx(12 / 14.0625) and nvlink_share(90) == pytest.approx(0.824)
    assert nvlink_share(100) == nvlink_share(120) == pytest.approx(0.802)
    assert PCIE_SHARE == 0.75 and MEMORY_SHARE == 0.8


def test_link_kinds():
    assert link_kind("gpu", "gpu") == link_kind("gpu", "nvswitch") == "nvlink"
    assert link_kind("gpu", "pcie_switch") == link_kind("nic", "cpu") == "pcie"
    assert link_kind("cpu", "cpu") == "host" and link_kind("cpu", "memory") == "memory"
    assert link_kind("nic", "network_switch") == "network" and link_kind("gpu", "network_switch") is None


def test_shipped_files_state_data_sheet_speeds_and_get_nccls_figures():
    spec = find_spec("dgx-h100")
    c = spec.classes
    assert c["nvswitch"].bandwidth == 450.0 and c["nvswitch"].efficiency == pytest.approx(0.824)
    assert c["pcie"].efficiency == 0.75 and c["nic"].efficiency == 1.0 and c["memory"].efficiency == 0.8
    assert any("nvswitch links at 0.824" in a for a in spec.assumed)
    # P2's files carry effective rates and say so
    assert find_spec("a100").classes["nvswitch"].efficiency == 1.0
