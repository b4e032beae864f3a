from __future__ import annotations

import math

import pytest

from p2sim.collectives.nccl_tables import per_channel_tree_bw, tree_correction
from p2sim.collectives.protocols import TREE_SHARE, channel_cap_gbps, tuning_share, check_proto, collective_cap_gbps, link_share
from p2sim.util.errors import InputError


def test_link_shares_follow_nccls_tuning_model():
    assert link_share("ring", "Simple", "AllReduce", 2, 2**30, "hopper") == 1.0
    assert link_share("ring", "LL128", "AllReduce", 2, 2**30, "hopper") == 0.92
    assert link_share("ring", "LL", "AllReduce", 2, 2**30, "hopper") == 0.5
    # trees: NCCL's 92% shapes its choice, not the wire; the protocols' shares do both
    assert TREE_SHARE == 0.92 and tuning_share("tree", "AllReduce") == 0.92 and tuning_share("ring", "AllReduce") == 1
    assert link_share("tree", "Simple", "AllReduce", 2, 2**30, "hopper") == 1.0
    assert link_share("tree", "LL", "AllReduce", 2, 2**30, "hopper") == pytest.approx(1 / 3.8)
    assert link_share("tree", "LL128", "AllReduce", 1, 2**30, "hopper") == pytest.approx(7 / 9)
    assert link_share("nvls", "Simple", "AllReduce", 1, 2**30, "hopper") == 0.85
    # medium sizes: NCCL's correction factor for trees (1 MiB = 64 B x 2^14)
    assert link_share("tree", "Simple", "AllReduce", 2, 2**20, "ampere") == pytest.approx(0.5)
    assert tree_correction("Simple", 32) == 1.0 and tree_correction("LL", 2**40) == 1.0


def test_caps():
    assert channel_cap_gbps("ring", "Simple", 2, "hopper", None) == math.inf
    assert channel_cap_gbps("ring", "Simple", 2, "hopper", 5.0) == 5.0
    assert channel_cap_gbps("ring", "LL128", 1, "hopper", None) == 36.7
    assert channel_cap_gbps("tree", "Simple", 5, "hopper", None) == per_channel_tree_bw("hopper", 5) == 36.0
    assert collective_cap_gbps("LL", 1, "ampere") == 87.7 and collective_cap_gbps("Simple", 1, "ampere") == math.inf


def test_check_proto():
    assert check_proto("ll128") == "LL128" and check_proto("auto") == "auto"
    with pytest.raises(InputError, match="proto"):
        check_proto("fast")
