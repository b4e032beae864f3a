"""The algorithm registry (p2sim.collectives.algorithms): one object per NCCL algorithm, covering exactly
p2sim.util.algorithms' table, and no code outside the algorithms tests an algorithm's name."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import pytest

from p2sim.collectives.algorithms import (FALLBACK, REGISTRY, Algorithm, algorithm, baseline_algorithm,
                                          forced_algorithms)
from p2sim.collectives.choice import serves
from p2sim.topology import load_system
from p2sim.topology.settings import NcclSettings
from p2sim.util.algorithms import ALGORITHMS, COLLNET, TABLE

PACKAGE = Path(__file__).resolve().parents[1] / "p2sim"
# where an algorithm's name may be tested: its own module, the registry, the table of names
OWNERS = (PACKAGE / "collectives" / "algorithms", PACKAGE / "util" / "algorithms.py")


def test_the_registry_covers_exactly_the_table():
    assert tuple(REGISTRY) == ALGORITHMS
    for row in TABLE:
        a = algorithm(row.name)
        assert isinstance(a, Algorithm) and a.name == row.name and a.info == row


def test_settings_name_their_algorithms():
    assert forced_algorithms("auto") == ()
    assert [a.name for a in forced_algorithms("collnet")] == list(COLLNET)
    assert forced_algorithms("nvls") == (algorithm("nvls"),)
    assert baseline_algorithm("tree") is algorithm("tree")
    assert baseline_algorithm("auto") is baseline_algorithm("collnet") is FALLBACK
    assert FALLBACK.name == "ring" and all(serves(FALLBACK.name, op) for op in FALLBACK.info.collectives)


def test_each_algorithm_answers_the_whole_interface():
    """Every object builds its structure, latency, pipeline and caps for a group it can run."""
    topo = load_system("h100", nodes=2)
    nccl = NcclSettings()
    from p2sim.collectives.channels import segments

    for a in REGISTRY.values():
        members = tuple(range(16))
        segs = segments(topo, members)
        assert a.why_not_system(topo) is None or a.name.startswith("collnet")  # h100 has no SHARP fabric
        proto = "Simple"
        assert 0 < a.link_share(proto, "AllReduce", 2, 2**30, "hopper") <= 1
        assert 0 < a.tuning_share("AllReduce") <= 1
        assert a.channel_cap(proto, 2, "hopper", None) > 0
        assert a.latency(proto, "AllReduce", 16, 2, 1e-6, 1e-5, 2**30, 16, "hopper") > 0
        chunk = a.chunk_size(proto, "AllReduce", 2**24, 16, nccl, a.heads(topo, members), 2)
        flight, unit = a.in_flight(proto, "AllReduce", chunk)
        assert 0 < unit <= flight and chunk <= a.chunking(proto, "AllReduce", nccl, 2)
        seconds, used = a.baseline(topo, "AllReduce", members, 2**30)
        assert seconds > 0 and used in REGISTRY
        # whether a group can run it, as the choice asks and as a forced setting explains
        assert a.usable(topo, "AllReduce", segs) == (a.why_not_group(topo, "AllReduce", segs) is None)


def test_simple_only_algorithms_and_rate_families():
    assert {a.name for a in REGISTRY.values() if a.simple_only} == {"nvls", "nvls_tree", *COLLNET}
    assert {a.name for a in REGISTRY.values() if a.rate_family() == "tree"} == {"tree", "nvls_tree", "collnet_chain"}  # Chain runs the tree's kernel
    assert {a.rate_family() for a in REGISTRY.values()} == {"ring", "tree"}
    assert {a.name for a in REGISTRY.values() if a.any_group} == {"ring", "tree"}
    assert algorithm("tree").tuning_share("AllReduce") == 0.92 and algorithm("ring").tuning_share("AllReduce") == 1
    assert algorithm("nvls").channel_cap("Simple", 1, "hopper", 5.0) == math.inf


def _name_tests(path: Path, root: Path = PACKAGE) -> list[str]:
    """Comparisons of a value with an algorithm's name (``x == "ring"``, ``x in ("nvls", ...)``, ``x in COLLNET``)."""
    names = set(ALGORITHMS)

    def named(node: ast.AST) -> bool:
        if isinstance(node, ast.Constant):
            return node.value in names
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return any(named(e) for e in node.elts)
        if isinstance(node, ast.BinOp):  # ("nvls", "nvls_tree") + COLLNET
            return named(node.left) or named(node.right)
        return isinstance(node, ast.Name) and node.id == "COLLNET"

    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Compare) and any(named(x) for x in [node.left, *node.comparators]):
            out.append(f"{path.relative_to(root)}:{node.lineno}: {ast.unparse(node)}")
    return out


def test_no_code_outside_the_algorithms_tests_an_algorithm_name():
    """Knowledge of an algorithm lives in its object: the rest of p2sim asks it (attributes, methods)."""
    found = [hit for path in sorted(PACKAGE.rglob("*.py"))
             if not any(path == o or o in path.parents for o in OWNERS) for hit in _name_tests(path)]
    assert not found, "tests of an algorithm's name outside p2sim/collectives/algorithms/:\n" + "\n".join(found)


@pytest.mark.parametrize("text", ['algo == "ring"', 'a in ("nvls", "nvls_tree")', '"tree" != x', 'a in COLLNET',
                                  'a not in ("x",) + COLLNET'])
def test_the_name_check_sees_name_tests(tmp_path, text):
    f = tmp_path / "m.py"
    f.write_text(f"if {text}:\n    pass\n", encoding="utf-8")
    assert _name_tests(f, tmp_path)
    f.write_text('ALGO = {"ring": 1}["ring"]\nif a == b or a in ALGO:\n    pass\n', encoding="utf-8")
    assert not _name_tests(f, tmp_path)  # a lookup keyed by a name is no test of it


@pytest.mark.parametrize("system, nodes, channels", [
    ("gb200-nvl72-pod", 2, 32),   # ncclNvlsTreeSm100Tuning: 2 nodes, NIC >= 48 GB/s
    ("gb200-nvl72-pod", 4, 24),   # NIC from 48 to 96 GB/s
    ("gb200-nvl72-pod", 16, 24),
    ("dgx-h100", 2, 16),          # NVLS_NCHANNELS_SM90
    ("dgx-h100", 4, 16),
])
def test_nvls_tree_channels_per_generation_nodes_and_nic_speed(system, nodes, channels):
    topo = load_system(system, nodes)
    members = tuple(range(topo.gpus_per_node * nodes))
    assert algorithm("nvls_tree").channels_used(topo, "Simple", members, 1, 2**30) == channels


def test_nvls_in_one_nvl72_rack_runs_24_channels():
    topo = load_system("gb200-nvl72", 1)
    assert algorithm("nvls").channels_used(topo, "Simple", tuple(range(72)), 1, 2**30) == 24  # SM100_NVL


def test_nvls_serves_other_collectives_than_allreduce_up_to_32_gpus_per_domain():
    # enqueue.cc: NVLS / NVLS Tree are skipped for non-AllReduce collectives when localRanks > 32
    from p2sim.collectives.channels import segments

    topo = load_system("gb200-nvl72", 1)
    nvls = algorithm("nvls")
    for op in ("AllGather", "ReduceScatter"):
        assert not nvls.usable(topo, op, segments(topo, range(72)))
        assert "only up to 32 GPUs" in nvls.why_not_group(topo, op, segments(topo, range(72)))
        assert nvls.usable(topo, op, segments(topo, range(32)))
    assert nvls.usable(topo, "AllReduce", segments(topo, range(72)))


def test_fill_loops_nvls_two_nvls_tree_two_plus_twice_the_depth():
    from p2sim.collectives.algorithms.nvls_tree import tree_depth

    # double binary trees: 2 nodes one edge, 4 nodes two, 20 nodes five (ranks 0..19, btree from rank 0)
    assert [tree_depth(n) for n in (1, 2, 4, 20)] == [0, 1, 2, 5]
    assert algorithm("nvls").fill_loops("AllReduce", 1) == 2
    assert algorithm("nvls").fill_loops("AllGather", 1) == 0  # not read: left out
    assert algorithm("nvls_tree").fill_loops("AllReduce", 2) == 4
    assert algorithm("nvls_tree").fill_loops("AllReduce", 20) == 12
    assert algorithm("ring").fill_loops("AllReduce", 20) == 0 and algorithm("tree").fill_loops("AllReduce", 20) == 0


@pytest.mark.parametrize("system,nodes", [("dgx-h100", 1), ("dgx-h100", 2), ("a100", 2), ("superpod-h100", 2),
                                          ("gb200-nvl72-pod", 2), ("dgx-b200", 2)])
def test_an_algorithms_rules_are_stated_once_as_reasons(system, nodes):
    """usable is exactly 'serves the collective and no reason against it': a forced run is refused for the
    same rules NCCL's choice applies (the NVLS and CollNet rules were once written twice)."""
    from p2sim.collectives.algorithms import REGISTRY
    from p2sim.collectives.channels import segments

    topo = load_system(system, nodes)
    gpn = topo.gpus_per_node
    groups = [tuple(range(topo.devices)), tuple(range(gpn)), tuple(range(0, topo.devices, gpn))]
    for members in groups:
        if len(members) < 2:
            continue
        segs = segments(topo, members)
        for op in ("AllReduce", "AllGather", "ReduceScatter", "Broadcast"):
            for a in REGISTRY.values():
                why = a.why_not_system(topo) or a.why_not_group(topo, op, segs)
                assert a.usable(topo, op, segs) == (op in a.info.collectives and why is None), (a.name, op, members)


def test_the_parts_contracts_name_the_required_hooks():
    """The four required hooks are the abstract ones; every other hook has a default (base.py's table)."""
    from p2sim.collectives.algorithms.base import Algorithm
    assert Algorithm.__abstractmethods__ == {"bus_factor", "structure", "latency", "link_share"}
    for a in REGISTRY.values():
        assert a.rate_family() in ("ring", "tree")


def test_a_rate_family_reads_its_own_fields():
    from p2sim.topology.settings import ModelRates
    rates = ModelRates(ring_net_rate=1.0, tree_net_rate=2.0, ring_channel_rate=3.0, tree_channel_rate=4.0)
    assert (algorithm("ring").net_rate(rates), algorithm("ring").channel_rate(rates)) == (1.0, 3.0)
    assert (algorithm("tree").net_rate(rates), algorithm("tree").channel_rate(rates)) == (2.0, 4.0)
    assert algorithm("nvls_tree").net_rate(rates) == 2.0 and algorithm("collnet_chain").net_rate(rates) == 2.0
    assert algorithm("collnet_direct").net_rate(rates) == 1.0


def test_each_parts_contract_names_every_hook_it_defines():
    """A part's module docstring is its contract: every method and flag the part defines is named there, and its
    required hooks are exactly its abstract methods, listed under "Required"."""
    import inspect

    from p2sim.collectives.algorithms import availability, costs, layout, pipeline

    for module, part in ((availability, availability.Availability), (layout, layout.ChannelLayout),
                         (pipeline, pipeline.Pipeline), (costs, costs.Costs)):
        contract = module.__doc__
        own = [n for n in vars(part) if not n.startswith("_") and n != "name"]
        assert own, part
        for n in own:
            assert f"{part.__name__}.{n}`" in contract, f"{module.__name__}'s contract does not name {n}"
        required = contract[contract.index("Required"):contract.index("Hooks with defaults")]
        abstract = getattr(part, "__abstractmethods__", frozenset())
        assert {n for n in own if f"{part.__name__}.{n}`" in required} == set(abstract), part
        assert inspect.isabstract(part) == bool(abstract)
