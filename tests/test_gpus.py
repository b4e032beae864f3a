from __future__ import annotations

import pytest

from p2sim.topology.gpus import GPUS, arch_of_cc, gpu_info, known_models
from p2sim.topology.settings import parse_nccl

# as nvidia-smi names them (and the short forms people write), with NCCL's tuning row
NAMES = [
    ("Tesla P100-SXM2-16GB", "volta", 60), ("Tesla P100-PCIE-16GB", "volta", 60),
    ("Tesla V100-SXM2-16GB", "volta", 70), ("Tesla V100-SXM2-32GB", "volta", 70), ("Tesla V100-SXM3-32GB", "volta", 70),
    ("Tesla V100-PCIE-32GB", "volta", 70), ("Tesla V100S-PCIE-32GB", "volta", 70), ("Tesla T4", "volta", 75),
    ("NVIDIA GeForce RTX 2080 Ti", "volta", 75), ("GeForce RTX 2080 Ti", "volta", 75), ("NVIDIA GeForce RTX 2080", "volta", 75),
    ("NVIDIA GeForce RTX 2070 SUPER", "volta", 75), ("NVIDIA GeForce RTX 2060", "volta", 75), ("NVIDIA TITAN RTX", "volta", 75),
    ("Quadro RTX 8000", "volta", 75),
    ("NVIDIA A100-SXM4-80GB", "ampere", 80), ("A100-SXM4-40GB", "ampere", 80), ("NVIDIA A100 80GB PCIe", "ampere", 80),
    ("NVIDIA A100-PCIE-40GB", "ampere", 80), ("NVIDIA A800-SXM4-80GB", "ampere", 80), ("NVIDIA A800 80GB PCIe", "ampere", 80),
    ("NVIDIA A30", "ampere", 80), ("NVIDIA A40", "ampere", 86), ("NVIDIA A10", "ampere", 86), ("NVIDIA A10G", "ampere", 86),
    ("NVIDIA A16", "ampere", 86), ("NVIDIA A2", "ampere", 86), ("NVIDIA RTX A6000", "ampere", 86),
    ("NVIDIA GeForce RTX 3090", "ampere", 86), ("NVIDIA GeForce RTX 3080", "ampere", 86),
    ("NVIDIA L4", "ampere", 89), ("NVIDIA L40S", "ampere", 89), ("NVIDIA L20", "ampere", 89),
    ("NVIDIA RTX 6000 Ada Generation", "ampere", 89), ("NVIDIA GeForce RTX 4090", "ampere", 89),
    ("NVIDIA H100 80GB HBM3", "hopper", 90), ("NVIDIA H100 PCIe", "hopper", 90), ("NVIDIA H100 NVL", "hopper", 90),
    ("H100-SXM5", "hopper", 90), ("NVIDIA H800", "hopper", 90), ("NVIDIA H800 PCIe", "hopper", 90), ("NVIDIA H20", "hopper", 90),
    ("NVIDIA H200", "hopper", 90), ("NVIDIA H200 NVL", "hopper", 90), ("NVIDIA GH200 480GB", "hopper", 90),
    ("NVIDIA B200", "blackwell", 100), ("NVIDIA GB200", "blackwell", 100), ("NVIDIA B300 SXM6 AC", "blackwell", 103),
    ("NVIDIA GB300", "blackwell", 103), ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "blackwell", 120),
    ("NVIDIA GeForce RTX 5090", "blackwell", 120), ("NVIDIA GB10", "blackwell", 121),
]


@pytest.mark.parametrize("name,arch,cc", NAMES)
def test_nvidia_smi_names_give_the_generation_and_compute_capability(name, arch, cc):
    g = gpu_info(name)
    assert g is not None and (g.arch, g.cc) == (arch, cc)
    # a system file naming only the model gets that generation, and says it assumed it
    assumed: list[str] = []
    s = parse_nccl({}, {}, {"model": name}, "x.toml", assumed)
    assert (s.arch, s.cc) == (arch, cc) and any(arch in a for a in assumed)


def test_every_catalogue_entry_is_named_by_the_list_above():
    found = {gpu_info(name).name for name, _, _ in NAMES}
    assert found == {g.name for g in GPUS}
    assert all(g.arch == arch_of_cc(g.cc) for g in GPUS)


def test_nccls_rows_by_compute_capability():
    assert [arch_of_cc(c) for c in (60, 70, 75, 80, 86, 89, 90, 100, 103, 120)] == [
        "volta", "volta", "volta", "ampere", "ampere", "ampere", "hopper", "blackwell", "blackwell", "blackwell"]


def test_memory_from_the_name_and_unknown_models():
    assert gpu_info("A100-SXM4-40GB").memory_gb == 40.0 and gpu_info("NVIDIA A100-SXM4-80GB").memory_gb == 80.0
    assert gpu_info("AMD Instinct MI300X") is None and gpu_info("") is None
    assert "H100 SXM5" in known_models()
