"""p2sim topo's answer is computed in the API (studies.topology_summary); the report only words it."""

from __future__ import annotations

import pytest

import p2sim
from p2sim.report.simulate import topology_json, topology_text
from p2sim.studies.topology_summary import TopologySummary, summarise
from p2sim.topology import load_system
from p2sim.util.errors import InputError


def test_the_summary_counts_what_the_graph_holds():
    topo = load_system("a100", nodes=2)
    s = summarise(topo)
    assert isinstance(s, TopologySummary) and s.topology is topo
    assert s.devices == 32 and s.nodes == 2 and dict(s.hierarchy) == {"node": 2, "gpu": 16}
    assert dict(s.components)["gpu"] == 32
    assert sum(c.directed_edges for c in s.links) == len(topo.edges)  # every directed link in one class
    assert all(list(c.bandwidth_gbps) == sorted(set(c.bandwidth_gbps)) for c in s.links)
    assert [p.algo for p in s.nccl][:2] == ["ring", "tree"]


def test_the_api_answers_and_the_report_words_the_same_value():
    s = p2sim.topo(system="dgx-h100", nodes=2)
    d = topology_json(s)
    assert d["devices"] == s.devices and d["nodes"] == 2 and d["bisection_GBps"] == s.bisection_gbps
    assert set(d["links"]) == {c.name for c in s.links}
    text = topology_text(s)
    assert text.startswith(f"{s.system}: {s.description}") and f"({s.devices} GPUs on 2 nodes)" in text


def test_a_bad_system_is_one_input_error():
    with pytest.raises(InputError, match="system"):
        p2sim.topo(system=None)
