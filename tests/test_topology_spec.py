from __future__ import annotations

import math

import pytest

from p2sim.util.errors import TopologyError
from p2sim.topology import find_spec, load_system, system_paths
from p2sim.topology.spec import expand_names, load_spec

from .helpers import spec_from

BASE = """
name = "t"
levels = [{ name = "node", cardinality = "nodes" }, { name = "gpu", cardinality = 2 }]
[classes]
pcie = { bandwidth = 10.0, latency = 1.0 }
[gpu]
arch = "ampere"
[node]
gpus = "gpu[0-1]"
components = [{ name = "host", kind = "cpu" }]
links = [{ class = "pcie", pairs = [["gpu[0-1]", "host"]] }]
"""


def test_shipped_systems_load_for_several_node_counts():
    assert {"a100", "v100", "h100", "p2-16gpu"} <= set(system_paths())
    for name in ("a100", "v100", "h100", "p2-16gpu"):
        for nodes in (1, 2, 3, 4):
            t = load_system(name, nodes)
            assert t.devices == math.prod(t.hierarchy)
    assert load_system("p2-16gpu").hierarchy == (1, 2, 2, 4)
    assert load_system("a100", 4).hierarchy == (4, 16)


def test_expand_names():
    assert expand_names("gpu[0-1,5]") == ["gpu0", "gpu1", "gpu5"]
    assert expand_names("rail[3]x") == ["rail3x"]
    with pytest.raises(ValueError):
        expand_names("gpu[3-1]")
    with pytest.raises(ValueError):
        expand_names("gpu[0-1")


def test_minimal_spec_parses():
    s = spec_from(BASE)
    assert s.gpus == ("gpu0", "gpu1")
    assert s.hierarchy(3) == (3, 2)
    assert s.node_links[0].pairs == (("gpu0", "host"), ("gpu1", "host"))


@pytest.mark.parametrize(
    ("old", "new", "msg"),
    [
        ("pcie = { bandwidth = 10.0, latency = 1.0 }", "pcie = { latency = 1.0 }", "classes.pcie.bandwidth: missing"),
        ("bandwidth = 10.0", "bandwidth = 0.0", "classes.pcie.bandwidth: 0.0 must be positive"),
        ("bandwidth = 10.0", "bandwidth = -5", "classes.pcie.bandwidth: -5 must be positive"),
        ("bandwidth = 10.0", 'bandwidth = "fast"', "classes.pcie.bandwidth: 'fast' is not a number"),
        ("latency = 1.0", "latency = -1.0", "classes.pcie.latency"),
        ('class = "pcie"', 'class = "nvlink"', "node.links[0].class: 'nvlink' is not a declared class"),
        ('gpus = "gpu[0-1]"', 'gpus = "gpu[0-2]"', "node.gpus: 3 GPUs"),
        ('["gpu[0-1]", "host"]', '["gpu[0-1]", "cpu9"]', "'cpu9' is not a GPU or component"),
        ('kind = "cpu"', 'kind = "toaster"', "node.components[0].kind"),
        ('cardinality = "nodes"', 'cardinality = "many"', "levels[0].cardinality"),
        ('name = "t"\n', "", "name: missing"),
        # words, not a number (topo printed "t: 5" as the system's description)
        ('name = "t"\n', 'name = "t"\ndescription = 5\n', "description: 5 should be text"),
        ('name = "t"\n', 'name = "t"\nnotes = [1]\n', "notes: [1] should be text"),
    ],
)
def test_bad_spec_names_field(old, new, msg):
    assert old in BASE
    with pytest.raises(TopologyError, match=msg.replace("[", r"\[").replace("]", r"\]")) as e:
        spec_from(BASE.replace(old, new, 1))
    assert str(e.value).startswith("test.toml: ")


def test_file_errors(tmp_path):
    with pytest.raises(TopologyError, match="no such system file"):
        load_spec(tmp_path / "none.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("name = [")
    with pytest.raises(TopologyError, match="not valid TOML"):
        load_spec(bad)
    with pytest.raises(TopologyError, match="unknown system 'z100'"):
        find_spec("z100")


def test_env_directory_adds_systems(tmp_path, monkeypatch):
    (tmp_path / "mine.toml").write_text(BASE)
    monkeypatch.setenv("P2SIM_TOPOLOGIES", str(tmp_path))
    assert find_spec("mine").name == "t"


def test_with_class_changes_a_whole_class():
    s = find_spec("a100")
    t = s.with_class("nic", bandwidth=25.0)
    assert t.classes["nic"].bandwidth == 25.0 and s.classes["nic"].bandwidth == 8.0
    assert load_system(t).capacity.max() >= 25e9
    with pytest.raises(TopologyError, match="no link class 'wifi'"):
        s.with_class("wifi", bandwidth=1.0)
    with pytest.raises(TopologyError, match="must be positive"):
        s.with_class("nic", bandwidth=0.0)


def test_new_fields_efficiency_nvls_and_unknown_keys():
    from p2sim.topology import find_spec

    h = find_spec("dgx-h100")
    assert h.classes["nvswitch"].capacity == pytest.approx(450 * 0.824)
    assert h.nvls_switches == frozenset({"nvswitch"}) and h.nccl.arch == "hopper"
    base = find_spec("a100")
    import tomllib

    from p2sim.topology.spec import parse_spec
    from p2sim.topology.toml_out import spec_to_toml

    text = spec_to_toml(base)
    for bad, field in (
        (text.replace('name = "a100"', 'name = "a100"\nnodse = 4'), "nodse"),
        (text.replace("latency = 7.0, efficiency = 1.0", "latency = 7.0, efficency = 0.9"), "classes.nic.efficency"),
        (text.replace("latency = 7.0, efficiency = 1.0", "latency = 7.0, efficiency = 1.5"), "classes.nic.efficiency"),
        (text.replace("bandwidth = 8.0", "bandwidth = 1e300"), "classes.nic.bandwidth"),
        (text.replace("latency = 7.0", "latency = 1e20"), "classes.nic.latency"),
        (text.replace('nvls = false', 'nvls = 1'), "nvls"),
        (text.replace('kind = "cpu"', 'kind = "cpu", nvls = true'), "nvls"),
        (text.replace("default_nodes = 2", "default_nodes = 1000000"), "default_nodes"),
    ):
        with pytest.raises(TopologyError, match=field):
            parse_spec(tomllib.loads(bad), "x.toml")


def test_too_many_nodes_is_refused():
    from p2sim.topology import load_system

    with pytest.raises(TopologyError, match="nodes"):
        load_system("a100", 100_000_001)


def test_two_levels_of_one_name_are_refused_naming_both():
    text = BASE.replace('{ name = "gpu", cardinality = 2 }', '{ name = "node", cardinality = 2 }')
    with pytest.raises(TopologyError, match=r"^test.toml: levels\[0\] and levels\[1\] are both named 'node'"):
        spec_from(text)
    with pytest.raises(TopologyError, match=r"levels\[1\].name: ' ' is not a name"):
        spec_from(BASE.replace('{ name = "gpu"', '{ name = " "'))


def test_components_of_one_name_are_refused_naming_it():
    text = BASE.replace('components = [{ name = "host", kind = "cpu" }]',
                        'components = [{ name = "host", kind = "cpu" }, { name = "host", kind = "nic" }]')
    with pytest.raises(TopologyError, match="node: component names are not unique \\('host' names two\\)"):
        spec_from(text)
    net = BASE + '[network]\ncomponents = [{ name = "tor", kind = "network_switch" }, ' \
                 '{ name = "tor", kind = "network_switch" }]\n'
    with pytest.raises(TopologyError, match="network.components: component names are not unique \\('tor'"):
        spec_from(net)


def test_every_shipped_system_loads():
    for name in system_paths():
        assert find_spec(name).name == name


def test_an_ecmp_fabric_states_its_assumed_queue_pairs():
    from .helpers import spec_from
    from .test_fabric import fabric_text

    ecmp = fabric_text(routing="ecmp")
    assert any("1 queue pair per connection" in a for a in spec_from(ecmp).assumed)
    stated = ecmp.replace("[network]", "[nccl]\nib_qps_per_connection = 4\n[network]")
    assert spec_from(stated).nccl.ib_qps_per_connection == 4
    assert not any("queue pair" in a for a in spec_from(stated).assumed)
    assert not any("queue pair" in a for a in spec_from(fabric_text(routing="adaptive")).assumed)


def test_a_written_system_keeps_the_latency_its_plugin_reports():
    """[network] net_latency changes NCCL's choice: a file p2sim writes (calibrate's) keeps it."""
    import dataclasses
    import tomllib

    from p2sim.topology import find_spec
    from p2sim.topology.spec import parse_spec
    from p2sim.topology.toml_out import spec_to_toml

    base = find_spec("p4d")
    spec = dataclasses.replace(base, nccl=dataclasses.replace(base.nccl, net_latency=30.0))
    again = parse_spec(tomllib.loads(spec_to_toml(spec)), "x.toml")
    assert again.nccl.net_latency == 30.0


def test_a_written_system_keeps_its_plugins_protocol():
    """[nccl] ofi_protocol moves p2sim's time (aws-ofi-nccl's control message under RDMA): a file p2sim writes
    (calibrate's) keeps p5's RDMA."""
    import tomllib

    from p2sim.topology import find_spec
    from p2sim.topology.spec import parse_spec
    from p2sim.topology.toml_out import spec_to_toml

    again = parse_spec(tomllib.loads(spec_to_toml(find_spec("p5"))), "x.toml")
    assert again.nccl.ofi_protocol == "RDMA"
    assert again.nccl.ofi_rails == 4 and again.nccl.ofi_tuner == "p5"  # its rails and its tuner
