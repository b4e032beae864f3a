"""What NCCL would build on a system, as p2sim derives it (p2sim.sim.nccl_plan)."""

from p2sim.sim.nccl_plan import AlgorithmPlan, nccl_plan
from p2sim.topology import load_system


def _by_algo(system: str, nodes: int) -> dict[str, AlgorithmPlan]:
    return {p.algo: p for p in nccl_plan(load_system(system, nodes=nodes))}


def test_every_registered_algorithm_is_listed_once_in_registry_order():
    from p2sim.collectives.algorithms import REGISTRY

    assert [p.algo for p in nccl_plan(load_system("dgx-h100", nodes=2))] == list(REGISTRY)


def test_nvls_tree_has_a_head_per_nic_on_a_dgx_h100_and_nvls_stays_in_a_node():
    plan = _by_algo("dgx-h100", 2)
    assert plan["nvls_tree"].runs and plan["nvls_tree"].heads == 8  # one head per NIC (NCCL's NVLS search)
    assert plan["nvls_tree"].channels == 16  # Hopper's 16 NVLS channels (nvls.cc)
    assert not plan["nvls"].runs and "2 nodes" in plan["nvls"].why
    assert plan["ring"].runs and plan["ring"].heads == 0  # a ring has no heads


def test_an_nvl72_rack_has_32_nvls_heads_not_72():
    plan = _by_algo("gb200-nvl72-pod", 2)
    assert plan["nvls_tree"].heads == 32  # NCCL_MAX_NVLS_ARITY


def test_algorithms_a_system_cannot_run_say_why():
    plan = _by_algo("a100", 1)
    assert not plan["nvls"].runs and "ampere" in plan["nvls"].why
    assert not plan["collnet_direct"].runs and "SHARP" in plan["collnet_direct"].why
    assert "not run" in plan["collnet_direct"].text()


def test_collnet_direct_has_up_to_eight_heads_on_a_sharp_fabric():
    plan = _by_algo("superpod-h100", 4)
    assert plan["collnet_direct"].runs and plan["collnet_direct"].heads == 8
    assert plan["collnet_direct"].proto == "Simple"  # CollNet runs Simple only
