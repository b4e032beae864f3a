"""The network step: how long one step of a collective takes to cross the network, by transport.

NCCL's tuning model (``src/graph/tuning.cc``) charges each network step ``hwLat[NET]`` per
algorithm and protocol -- 2.7 us for an LL ring step, 14 us for a Simple one -- plus the
latency its network plugin reports.  That is the model NCCL chooses by (``transport=None``
here).  The time a step really takes differs:

* **Every protocol pays the proxy.**  Over the network, LL and LL128 data is staged like
  Simple's: the GPU writes the step into a buffer, NCCL's proxy thread polls it and posts the
  send, the receiving proxy polls the completion and hands the step to the GPU
  (``src/transport/net.cc``, ``sendProxyProgress`` / ``recvProxyProgress``).  That turn-around
  does not depend on the protocol, and NCCL's own LL figures (2.7-5 us) leave it out: public
  2-node 8-byte AllReduce times sit well above NCCL's estimate (about 62 us measured against
  its 25 us for a tree of 2 x 8 H100 over InfiniBand, NVIDIA/nccl#1453), and AWS's model of the
  same path charges every protocol alike (below).  p2sim therefore charges each network step
  at least NCCL's Simple figure for the algorithm, whatever the protocol.
* ``ib``, ``roce``, ``socket``: NCCL's own transports report no extra latency (``net_ib``,
  ``net_socket.cc``): the step above.
* ``efa``: AWS's network plugin (aws-ofi-nccl) reports 75 us to NCCL only to steer its choice;
  the plugin's model tuner times a network step at 20 us on P5/P5e for every protocol
  (``src/tuner/nccl_ofi_model.cpp``: ``net_lat``), plus 3 us for Simple ("~2 us in the device
  and ~1 us to write the completion up to the host stack", ``nccl_ofi_param.h``).
* ``cxi`` (HPE Slingshot through aws-ofi-nccl) and ``tcpx`` (Google's GPUDirect-TCPX(O)
  plugin): no published per-step figure, so the IB step, stated by ``p2sim topo`` as an
  assumption; calibration fits the step (``[model] step_latency``).

A system file's ``[network] step_latency`` (microseconds; Simple adds the transport's extra)
replaces the transport's step.

Examples
--------
>>> network_step_us(None, "ring", "LL"), network_step_us("ib", "ring", "LL")
(2.7, 14.0)
>>> network_step_us("efa", "ring", "Simple"), network_step_us("ib", "tree", "LL", override=20.0)
(23.0, 20.0)
"""

from __future__ import annotations

from ..topology.settings import ASSUMED_TRANSPORTS
from .nccl_tables import hw_latency

__all__ = ["network_step_us", "STEP_US", "SIMPLE_EXTRA_US", "ASSUMED_TRANSPORTS"]

# per transport: a network step's latency (us) for every protocol; None: NCCL's Simple figure
STEP_US: dict[str, float | None] = {"ib": None, "roce": None, "socket": None, "efa": 20.0, "cxi": None, "tcpx": None}
SIMPLE_EXTRA_US: dict[str, float] = {"efa": 3.0}  # what Simple adds (AWS: the device's completion)


def network_step_us(transport: str | None, algo: str, proto: str, override: float | None = None) -> float:
    """One network step of ``algo`` / ``proto`` over ``transport`` (microseconds); ``None``: NCCL's model."""
    if transport is None:
        return hw_latency("net", algo, proto)
    step = override if override is not None else STEP_US.get(transport)
    if step is None:
        return max(hw_latency("net", algo, proto), hw_latency("net", algo, "Simple"))
    return step + (SIMPLE_EXTRA_US.get(transport, 0.0) if proto == "Simple" else 0.0)
