from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from p2sim.formalism.placement import enumerate_matrices
from p2sim.formalism.naming import describe_placement, generic_levels


def test_the_issue_example():
    # 8 GPUs per node, 4 nodes: data over 4 nodes x 2 GPUs, tensor over 4 GPUs of a node
    words = describe_placement(((4, 2), (1, 4)), ("data", "tensor"), ("node", "gpu"), node_level=0)
    assert words == "data: 4 nodes x 2 GPUs; tensor: 4 GPUs inside a node"


def test_deeper_systems_and_unsplit_axes():
    words = describe_placement(((1, 1, 2, 4), (1, 4, 1, 1), (1, 1, 1, 1)), ("a", "b", "c"),
                               ("rack", "server", "cpu", "gpu"), node_level=1)
    assert words == "a: 2 CPUs x 4 GPUs inside a server; b: 4 servers; c: 1 (not split)"


@settings(max_examples=40, deadline=None)
@given(st.sampled_from([((4, 16), (4, 16)), ((2, 8), (4, 4)), ((2, 2, 4), (4, 2, 2)), ((8, 8), (2, 4, 8))]))
def test_every_factor_is_named_once(case):
    h, p = case
    names = tuple(f"x{i}" for i in range(len(p)))
    for m in enumerate_matrices(h, p):
        words = describe_placement(m, names, generic_levels(len(h)))
        parts = words.split("; ")
        assert [w.split(":")[0] for w in parts] == list(names)
        for row, part in zip(m, parts):
            factors = [int(t.split(" x ")[0]) for t in part.split(": ")[1].split(", ")] if max(row) > 1 else []
            assert factors == [f for f in row if f > 1]
