"""Operation times from their shapes: the roofline's two sides and the bounded efficiencies."""

import pytest

from p2sim.util.errors import InputError
from p2sim.workload.compute import Op
from p2sim.workload.op_time import BOUNDS, DEFAULT, EfficiencyParams, OpTimer

P = EfficiencyParams(matmul=0.8, fp8=0.5, attention=0.5, memory=0.8, launch=0.0)
G = OpTimer(1000.0, 2000.0, 4.0, P)


def test_a_large_matmul_is_compute_bound():
    op = Op("mm", "matmul", 2.0 * 8192**3, 2.0 * 3 * 8192**2, 8192, 8192, 8192)
    assert G.seconds(op) == pytest.approx(op.flops / 800e12)


def test_a_skinny_matmul_is_bandwidth_bound():
    op = Op("mm", "matmul", 2.0 * 1 * 8192 * 8192, 2.0 * (8192 + 8192 * 8192 + 8192), 1, 8192, 8192)
    assert G.seconds(op) == pytest.approx(op.bytes / 3.2e12)


def test_memory_ops_at_hbm_bandwidth_and_attention_at_its_fraction():
    assert G.seconds(Op("norm", "memory", 0.0, 3.2e9)) == pytest.approx(1e-3)
    assert G.seconds(Op("attention", "attention", 5e11, 1.0)) == pytest.approx(1e-3)


def test_parameters_outside_their_physical_range_are_refused():
    with pytest.raises(InputError, match=r"efficiency: matmul: 1.2 should be in \[0.4, 0.92\]"):
        EfficiencyParams(matmul=1.2, fp8=0.5, attention=0.5, memory=0.8, launch=0.0)
    for name, (low, high) in BOUNDS.items():
        assert low <= getattr(DEFAULT, name) <= high
