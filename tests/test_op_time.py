"""Operation times from their shapes: the roofline's two sides and the bounded efficiencies."""

import pytest

from p2sim.util.errors import InputError
from p2sim.workload.compute import Op
from p2sim.workload.op_time import BOUNDS, DEFAULT, EfficiencyParams, OpTimer

P = EfficiencyParams(matmul=0.8, fp8=0.5, attention=0.5, memory=0.8, launch=0.0)
G = OpTimer(1000.0, 2000.0, 4.0, P, sms=128)  # 8192 x 8192 outputs: 2048 tiles, 16 full waves


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


def test_the_shape_costs_waves_and_a_short_k():
    # 96 tiles on 148 SMs: one wave, 96/148 of it busy; k = 256 with k_half 256: half the mainloop's rate
    g = OpTimer(1000.0, 2000.0, 4.0, EfficiencyParams(0.8, 0.5, 0.5, 0.8, 0.0, k_half=256.0), sms=148)
    op = Op("mm", "matmul", 2.0 * 2048 * 1536 * 256, 0.0, 2048, 1536, 256)
    assert g.shape_fraction(op) == pytest.approx(96 / 148 * 0.5)
    grouped = Op("experts up", "matmul", 16 * op.flops, 0.0, 2048, 1536, 256, 16)
    assert g.shape_fraction(grouped) == pytest.approx(16 * 96 / (11 * 148) * 0.5)  # the experts share waves


def test_host_bound_kernels():
    assert G.kernels(Op("experts up", "matmul", 1.0, 1.0, 1, 1, 1, 16), fp8=True) == 32
    assert G.kernels(Op("norm", "memory", 0.0, 1.0)) == 1


def test_a_chain_of_small_kernels_pays_each_launch_and_each_dispatch():
    from p2sim.workload.op_time import EfficiencyParams, OpTimer
    g = OpTimer(bf16_tflops=1000.0, fp8_tflops=2000.0, hbm_tb_per_s=1.0,
                params=EfficiencyParams(0.8, 0.5, 0.6, 0.5, 2e-6, host=1e-5))
    chain = Op("dispatch metadata", "memory", 0.0, 1e6, kernels=14, backward=False)
    # 1 MB at half of 1 TB/s, and 14 launches of 2 us
    assert g.seconds(chain) == pytest.approx(2e-6 + 14 * 2e-6)
    assert g.kernels(chain) == 14 and g.kernels(chain, fp8=True) == 14
