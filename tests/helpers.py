"""Small system files for tests."""

from __future__ import annotations

import tomllib

from p2sim.topology import Topology
from p2sim.topology.spec import SystemSpec, parse_spec


def spec_from(text: str, source: str = "test.toml") -> SystemSpec:
    return parse_spec(tomllib.loads(text), source)


def ring_node(n: int, bandwidth: float = 100.0, latency: float = 2.0) -> Topology:
    """One node of ``n`` GPUs joined in a ring of identical links."""
    ring = f'[["gpu[0-{n - 1}]", "gpu[1-{n - 1},0]"]]' if n > 2 else '[["gpu0", "gpu1"]]'
    text = f"""
name = "ring{n}"
levels = [{{ name = "node", cardinality = "nodes" }}, {{ name = "gpu", cardinality = {n} }}]
default_nodes = 1
[classes]
link = {{ bandwidth = {bandwidth}, latency = {latency} }}
pcie = {{ bandwidth = 1.0, latency = 5.0 }}
[node]
gpus = "gpu[0-{n - 1}]"
components = [{{ name = "host", kind = "cpu" }}]
links = [
  {{ class = "link", pairs = {ring} }},
  {{ class = "pcie", pairs = [["gpu[0-{n - 1}]", "host"]] }},
]
"""
    return Topology(spec_from(text))


def two_nodes_one_nic(gpus: int, nic: float = 10.0, local: float = 1000.0) -> Topology:
    """Two nodes of ``gpus`` GPUs on a switch, one NIC each, joined by a network switch."""
    text = f"""
name = "pairs"
levels = [{{ name = "node", cardinality = "nodes" }}, {{ name = "gpu", cardinality = {gpus} }}]
[classes]
nvswitch = {{ bandwidth = {local}, latency = 1.0 }}
pcie = {{ bandwidth = {local}, latency = 1.0 }}
nic = {{ bandwidth = {nic}, latency = 5.0 }}
[node]
gpus = "gpu[0-{gpus - 1}]"
components = [{{ name = "sw", kind = "nvswitch" }}, {{ name = "host", kind = "cpu" }}, {{ name = "nic0", kind = "nic" }}]
links = [
  {{ class = "nvswitch", pairs = [["gpu[0-{gpus - 1}]", "sw"]] }},
  {{ class = "pcie", pairs = [["gpu[0-{gpus - 1}]", "host"], ["nic0", "host"]] }},
]
[network]
components = [{{ name = "dc", kind = "network_switch" }}]
links = [{{ class = "nic", pairs = [["nic0", "dc"]] }}]
"""
    return Topology(spec_from(text))


BASE_DISCONNECTED = """
name = "broken"
levels = [{ name = "node", cardinality = "nodes" }, { name = "gpu", cardinality = 3 }]
[classes]
nvlink = { bandwidth = 10.0, latency = 1.0 }
[node]
gpus = "gpu[0-2]"
links = [{ class = "nvlink", pairs = [["gpu0", "gpu1"]] }]
"""


def switch_node(n: int, bandwidth: float = 100.0, latency: float = 1.0) -> Topology:
    """One node of ``n`` GPUs, each with one identical link to a switch."""
    text = f"""
name = "star{n}"
levels = [{{ name = "node", cardinality = "nodes" }}, {{ name = "gpu", cardinality = {n} }}]
default_nodes = 1
[classes]
link = {{ bandwidth = {bandwidth}, latency = {latency} }}
[node]
gpus = "gpu[0-{n - 1}]"
components = [{{ name = "sw", kind = "nvswitch" }}]
links = [{{ class = "link", pairs = [["gpu[0-{n - 1}]", "sw"]] }}]
"""
    return Topology(spec_from(text))
