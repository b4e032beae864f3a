from __future__ import annotations

from p2sim.collectives.nccl_tables import hw_latency
from p2sim.collectives.transports import STEP_US, network_step_us
from p2sim.topology.settings import TRANSPORTS


def test_nccls_model_is_its_own_figures():
    for algo in ("ring", "tree"):
        for proto in ("LL", "LL128", "Simple"):
            assert network_step_us(None, algo, proto) == hw_latency("net", algo, proto)


def test_every_protocol_pays_the_proxy():
    # IB, RoCE, sockets: NCCL's Simple figure for every protocol (LL's 2.7 us would need no proxy)
    for t in ("ib", "roce", "socket"):
        assert network_step_us(t, "ring", "LL") == network_step_us(t, "ring", "Simple") == 14.0
    # EFA: AWS's model, 20 us and 3 more for Simple (aws-ofi-nccl nccl_ofi_model.cpp)
    assert network_step_us("efa", "ring", "LL") == 20.0 and network_step_us("efa", "tree", "Simple") == 23.0


def test_every_transport_has_a_step_and_a_file_may_set_it():
    assert set(STEP_US) == set(TRANSPORTS)
    assert network_step_us("tcpx", "ring", "Simple", override=30.0) == 30.0
