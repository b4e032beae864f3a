from __future__ import annotations

import math

import pytest

from p2sim.util.errors import TopologyError
from p2sim.topology.settings import NcclSettings, parse_nccl, parse_rates


def test_defaults_are_nccls():
    s = parse_nccl({}, {}, {"arch": "ampere"}, "x.toml")
    assert s == NcclSettings()
    assert (s.channels_per_nic, s.max_channels, s.p2p_level, s.transport) == (2, 64, "PXB", "ib")
    # NCCL_IB_QPS_PER_CONNECTION 1 (net_ib/connect.cc), NCCL_IB_SPLIT_DATA_ON_QPS 0 (net_ib/common.cc)
    assert (s.ib_qps_per_connection, s.ib_split_data_on_qps) == (1, False)
    s = parse_nccl({"ib_qps_per_connection": 4, "ib_split_data_on_qps": True}, {}, {"arch": "ampere"}, "x.toml")
    assert (s.ib_qps_per_connection, s.ib_split_data_on_qps) == (4, True)


def test_no_silent_gpu_generation():
    """A file that names neither the GPU generation nor a known model is refused; a known model is enough."""
    with pytest.raises(TopologyError, match="x.toml: gpu: no \\[gpu\\] arch or model"):
        parse_nccl({}, {}, {}, "x.toml")
    with pytest.raises(TopologyError, match="x.toml: gpu: \\[gpu\\] model 'MI300X' is not one p2sim knows"):
        parse_nccl({}, {}, {"model": "MI300X"}, "x.toml")
    with pytest.raises(TopologyError, match="x.toml: gpu.arch: 'hopper', but the A100 SXM4"):
        parse_nccl({}, {}, {"model": "A100-SXM4-80GB", "arch": "hopper"}, "x.toml")
    assumed: list[str] = []
    s = parse_nccl({}, {}, {"model": "NVIDIA H100 80GB HBM3"}, "x.toml", assumed)
    assert (s.arch, s.cc, round(s.memory_gib, 1)) == ("hopper", 90, 74.5)
    assert any("hopper" in a for a in assumed) and any("80 GB" in a for a in assumed)


@pytest.mark.parametrize("nccl,network,gpu,field", [
    ({"channels_per_nic": 0}, {}, {}, "nccl.channels_per_nic"),
    ({"max_channels": 65}, {}, {}, "nccl.max_channels"),
    ({"min_channels": 8, "max_channels": 4}, {}, {}, "nccl.min_channels"),
    ({"p2p_level": "NODE"}, {}, {}, "nccl.p2p_level"),
    ({"hca": "nic0"}, {}, {}, "nccl.hca"),
    ({"nvls": "yes"}, {}, {}, "nccl.nvls"),
    ({"ib_qps_per_connection": 0}, {}, {}, "nccl.ib_qps_per_connection"),
    ({"ib_qps_per_connection": 129}, {}, {}, "nccl.ib_qps_per_connection"),
    ({"ib_qps_per_connection": 2.0}, {}, {}, "nccl.ib_qps_per_connection"),
    ({"ib_split_data_on_qps": 1}, {}, {}, "nccl.ib_split_data_on_qps"),
    ({"ofi_protocol": "rdma-write"}, {}, {}, "nccl.ofi_protocol"),
    ({"ofi_rails": 0}, {}, {}, "nccl.ofi_rails"),
    ({"ofi_rails": 4.0}, {}, {}, "nccl.ofi_rails"),
    ({"ofi_min_stripe_size": 0}, {}, {}, "nccl.ofi_min_stripe_size"),
    ({"chanels_per_nic": 2}, {}, {}, "nccl.chanels_per_nic"),
    ({}, {"transport": "carrier-pigeon"}, {}, "network.transport"),
    ({}, {}, {"arch": "kepler"}, "gpu.arch"),
    ({}, {}, {"name": "A100"}, "gpu.name"),
])
def test_bad_settings_name_the_field(nccl, network, gpu, field):
    with pytest.raises(TopologyError, match=f"x.toml: {field.replace('.', '[.]')}"):
        parse_nccl(nccl, network, gpu or {"arch": "ampere"}, "x.toml")


def test_rates():
    r = parse_rates({"ring_net_rate": 2, "tree_channel_rate": math.inf}, "x.toml")
    assert r.to_dict() == {"ring_net_rate": 2.0, "tree_channel_rate": math.inf}
    for bad, field in (({"ring_net_rate": 0}, "ring_net_rate"), ({"tree_net_rate": 2e6}, "tree_net_rate"),
                       ({"ring_max_rate": 40}, "ring_max_rate"), ({"speed": 1}, "speed")):
        with pytest.raises(TopologyError, match=f"model.{field}"):
            parse_rates(bad, "x.toml")


def test_net_latency_is_what_the_plugin_reports():
    """[network] net_latency: the latency the network plugin reports to NCCL (OFI_NCCL_NET_LATENCY); refused
    out of range with the field's name."""
    s = parse_nccl({}, {"transport": "efa", "net_latency": 35}, {"arch": "hopper"}, "x.toml")
    assert s.net_latency == 35.0 and NcclSettings().net_latency is None
    with pytest.raises(TopologyError, match="x.toml: network.net_latency: -1 must be a number of microseconds"):
        parse_nccl({}, {"net_latency": -1}, {"arch": "hopper"}, "x.toml")


def test_ofi_rails_and_stripe_default_to_one_rail_and_the_plugins_128_kib():
    d = parse_nccl({}, {}, {"arch": "hopper"}, "x.toml")
    assert (d.ofi_rails, d.ofi_min_stripe_size) == (1, 131072)
    got = parse_nccl({"ofi_rails": 4, "ofi_min_stripe_size": 65536}, {}, {"arch": "hopper"}, "x.toml")
    assert (got.ofi_rails, got.ofi_min_stripe_size) == (4, 65536)


def test_ofi_protocol_is_the_plugins_setting():
    """OFI_NCCL_PROTOCOL: SENDRECV by default (aws-ofi-nccl's nccl_ofi_param.h), RDMA where a file says so."""
    assert parse_nccl({}, {}, {"arch": "hopper"}, "x.toml").ofi_protocol == "SENDRECV"
    assert parse_nccl({"ofi_protocol": "RDMA"}, {}, {"arch": "hopper"}, "x.toml").ofi_protocol == "RDMA"
    with pytest.raises(TopologyError, match="x.toml: nccl[.]ofi_protocol: 'rdma' is not one of SENDRECV, RDMA"):
        parse_nccl({"ofi_protocol": "rdma"}, {}, {"arch": "hopper"}, "x.toml")


def test_nccl_version() -> None:
    """[nccl] version: the NCCL release the job ran ("" the newest p2sim follows); anything else refused."""
    assert parse_nccl({"version": "2.26.2"}, {}, {"arch": "blackwell"}, "x.toml").version == "2.26.2"
    assert parse_nccl({}, {}, {"arch": "blackwell"}, "x.toml").version == ""
    for bad in ("2.26", "v2.26.2", 2.26):
        with pytest.raises(TopologyError, match=r"x.toml: nccl.version: .* must be an NCCL release"):
            parse_nccl({"version": bad}, {}, {"arch": "blackwell"}, "x.toml")


def test_nvls_efficiency_is_a_share():
    """[model] nvls_efficiency: NVLS's share of NVLink, in (0, 1] (a system's stated assumption)."""
    assert parse_rates({"nvls_efficiency": 0.62}, "x.toml").nvls_efficiency == 0.62
    assert parse_rates({}, "x.toml").nvls_efficiency is None
    for bad in (0, 1.5, "0.6", True):
        with pytest.raises(TopologyError, match=r"x.toml: model.nvls_efficiency: .* must be a share"):
            parse_rates({"nvls_efficiency": bad}, "x.toml")
