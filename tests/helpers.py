"""Small system files and drawn axis sizes for tests."""

from __future__ import annotations

import tomllib

from hypothesis import strategies as st

from p2sim.topology import Topology
from p2sim.topology.spec import SystemSpec, parse_spec


def draw_axes(data, devices: int) -> list[int]:
    """Up to three axis sizes whose product is ``devices``, drawn with hypothesis' ``data``."""
    axes, left = [], devices
    for _ in range(data.draw(st.integers(0, 2))):
        d = data.draw(st.sampled_from([x for x in range(1, left + 1) if left % x == 0]))
        axes.append(d)
        left //= d
    axes.append(left)
    return axes


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
link = {{ bandwidth = {bandwidth}, latency = {latency}, efficiency = 1.0 }}
pcie = {{ bandwidth = 1.0, latency = 5.0, efficiency = 1.0 }}
[gpu]
arch = "ampere"
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
nvswitch = {{ bandwidth = {local}, latency = 1.0, efficiency = 1.0 }}
pcie = {{ bandwidth = {local}, latency = 1.0, efficiency = 1.0 }}
nic = {{ bandwidth = {nic}, latency = 5.0, efficiency = 1.0 }}
[gpu]
arch = "ampere"
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
nvlink = { bandwidth = 10.0, latency = 1.0, efficiency = 1.0 }
[gpu]
arch = "ampere"
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
link = {{ bandwidth = {bandwidth}, latency = {latency}, efficiency = 1.0 }}
[gpu]
arch = "ampere"
[node]
gpus = "gpu[0-{n - 1}]"
components = [{{ name = "sw", kind = "nvswitch" }}]
links = [{{ class = "link", pairs = [["gpu[0-{n - 1}]", "sw"]] }}]
"""
    return Topology(spec_from(text))


def rail_nodes(gpus: int, nics: int, nic: float = 10.0, nvlink: float = 1000.0, nodes: int = 2,
               arch: str = "ampere", model: str = "", transport: str = "ib", extra: str = "") -> Topology:
    """Nodes of ``gpus`` GPUs on one NVSwitch and ``nics`` NICs, each NIC on a PCIe switch with
    ``gpus / nics`` GPUs, NIC ``i`` of every node on rail switch ``i``; no latencies.

    ``model`` is the text of a ``[model]`` table's body, ``extra`` more top-level tables.
    """
    per = gpus // nics
    sw = ", ".join(f'["gpu[{i * per}-{i * per + per - 1}]", "pcie{i}"]' for i in range(nics))
    text = f"""
name = "rails{gpus}x{nics}"
default_nodes = {nodes}
levels = [{{ name = "node", cardinality = "nodes" }}, {{ name = "gpu", cardinality = {gpus} }}]
[classes]
nvswitch = {{ bandwidth = {nvlink}, latency = 0.0, efficiency = 1.0 }}
pcie = {{ bandwidth = 1000.0, latency = 0.0, efficiency = 1.0 }}
nic = {{ bandwidth = {nic}, latency = 0.0, efficiency = 1.0 }}
[gpu]
arch = "{arch}"
[model]
{model}
{extra}
[node]
gpus = "gpu[0-{gpus - 1}]"
components = [{{ name = "sw", kind = "nvswitch" }}, {{ name = "pcie[0-{nics - 1}]", kind = "pcie_switch" }},
              {{ name = "nic[0-{nics - 1}]", kind = "nic" }}]
links = [
  {{ class = "nvswitch", pairs = [["gpu[0-{gpus - 1}]", "sw"]] }},
  {{ class = "pcie", pairs = [{sw}] }},
  {{ class = "pcie", pairs = [["nic[0-{nics - 1}]", "pcie[0-{nics - 1}]"]] }},
]
[network]
transport = "{transport}"
components = [{{ name = "rail[0-{nics - 1}]", kind = "network_switch" }}]
links = [{{ class = "nic", pairs = [["nic[0-{nics - 1}]", "rail[0-{nics - 1}]"]] }}]
"""
    return Topology(spec_from(text))


# the small dense model every --model test runs (the ``tiny`` fixture of conftest.py writes it to a file):
# 4 layers of hidden 1024, heads 8 (4 K/V groups), vocabulary 32768, embeddings tied
TINY = """name = "tiny"
hidden_size = 1024
num_layers = 4
num_attention_heads = 8
num_key_value_heads = 4
intermediate_size = 4096
vocab_size = 32768
tie_word_embeddings = true
"""

