"""The network step: how long one step of a collective takes to cross the network, by transport.

NCCL's tuning model (``src/graph/tuning.cc``) charges each network step ``hwLat[NET]`` per
algorithm and protocol -- 2.7 us for an LL ring step, 14 us for a Simple one -- plus the
latency its network plugin reports (``graph->latencyInter``, once, and once more for Simple:
"the flush extra latency").  That is the model NCCL chooses by (``transport=None`` here, with the
plugin's latency from :func:`reported_latency_us`).  The time a step really takes differs, and
so does what each plugin reports:

* **NCCL's own figures** over NCCL's IB verbs transport (``ib``, and ``roce``, which runs the same
  ``net_ib``): a network step costs NCCL's ``hwLat[NET]`` for the algorithm and protocol (2.7 us for an LL
  ring step, 5.0 for an LL tree step, 14 for Simple; ``ncclTunerConstantsDefaults``, ``src/graph/tuning.cc``).
  Those figures are NCCL's measure of its own proxy path (the GPU writes the step into a buffer, the proxy
  thread posts it, the receiving proxy hands it back to the GPU: ``src/transport/net.cc``,
  ``sendProxyProgress`` / ``recvProxyProgress``), and the published times match them: a clean 2 x 8 H100 run
  over 8 x 400 Gb/s InfiniBand (NVIDIA/nccl-tests#309, NCCL 2.26.2, ``validation/logs``) times an 8-byte
  AllReduce at 24.7-25.0 us where NCCL's model of its tree of LL gives 6.8 + 2 x (7 x 0.6 + 1 x 5.0) = 25.2 us;
  the ~60 us of NVIDIA/nccl#1453, which p2sim used to floor every IB step at Simple's 14 us, came from a run
  that printed NCCL's INFO lines on every call (a host cost per call NCCL's kernel never sees).  NCCL's IB
  and socket transports report no latency (``net_ib/init.cc``, ``net_socket.cc``: ``props->latency = 0``);
  a RoCE fabric's extra hop latencies belong to the system file's links.
* **The proxy floor** over NCCL's socket transport (``socket``) and GPUDirect-TCPX (``tcpx``): TCP sockets
  driven by helper threads (``net_socket.cc``), for which no published small-message time separates the
  protocols: p2sim keeps every protocol's network step at least NCCL's Simple figure there (an assumption
  ``p2sim topo`` states for ``tcpx``; Google's TCPX(O) recipes force Simple anyway).
* ``efa`` (AWS's aws-ofi-nccl plugin): the plugin's model tuner times a network step at 20 us
  on P5/P5e for every protocol (``src/tuner/nccl_ofi_model.cpp``: ``net_lat``,
  ``nccl_ofi_param.h`` ``TUNER_NET_LATENCY`` 20) plus 3 us for Simple ("~2 us in the device and
  ~1 us to write the completion up to the host stack", ``TUNER_NET_COMP_OVERHEAD``).  The plugin
  reports 75 us to NCCL on p4d/p4de, p5/p5e and any EC2 platform it does not list, 35 us on
  p5en/p6 (``src/platform-aws.cpp``, ``platform_data_map`` ``.latency`` and the fall-through in
  ``PlatformAWS::init``: "NCCL's internal tuner choices work better with this value"), which
  moves NCCL's choice towards fewer network steps (trees) and away from LL.  p4d (EFA's first
  generation) runs the plugin's SENDRECV protocol and p5 RDMA writes (``default_protocol``); no
  published step time separates them, so p2sim times both with the P5 model's step and says so.
  Under the RDMA protocol the receiver's ``irecv`` sends the sender a control message naming its buffer,
  and a send larger than ``OFI_NCCL_EAGER_MAX_SIZE`` (8192 bytes, ``nccl_ofi_param.h``) waits for it
  (``nccl_ofi_rdma.cpp``, ``send``: without the control message and not eager, it returns no request and
  NCCL tries again).  NCCL's receiving proxy posts its receives when the collective starts, as the sender's
  does its sends: the first network step of a collective therefore waits one crossing of the control
  message (the plugin's 8-byte RDMA latency, the network step itself) before its data leaves; later steps
  find it there (their receives are posted ``NCCL_STEPS`` ahead, the pipeline's window).  SENDRECV (p4d)
  posts tagged sends that need no control message from the plugin (:func:`control_wait_us`).
  **The flush.** On GPUs before Hopper NCCL flushes every Simple step it receives by GPUDirect RDMA before
  the GPU reads it (``ncclTopoNeedFlush``, ``src/graph/paths.cc``: "Flush is required on Ampere and earlier";
  ``recvProxyProgress``, ``net.cc``: Simple only), and its own model counts it as one more plugin latency
  (``tuning.cc``, "the flush extra latency").  aws-ofi-nccl flushes with an RDMA read of the received buffer
  on its own endpoint (``nccl_ofi_sendrecv.cpp``, ``flush``: ``fi_read`` to ``local_ep_addr``, "Flush is an
  expensive operation"), with libfabric's shared memory disabled so that the read goes through "a real
  network device" (``nccl_ofi_ofiutils.cpp``, ``FI_OPT_SHARED_MEMORY_PERMITTED``): the step waits one
  crossing of the EFA device, which p2sim takes as the 8-byte network step (20 us), as the control message
  (:func:`flush_us`; p4d, p4de).  Hopper needs none (and the plugin sets ``NCCL_NET_FORCE_FLUSH=0`` on p5).
  The plugin flushes alike over ``cxi`` (Perlmutter's A100s), where the read is one eager crossing of the
  Cassini NIC: NCCL's LL network step, as p2sim times cxi's eager sends.
  NCCL's IB verbs transport reads on a queue pair connected to itself (``net_ib``), inside the HCA: p2sim
  leaves that in NCCL's step, as before.
* ``cxi`` (HPE Slingshot 11 through aws-ofi-nccl on libfabric's cxi provider): off AWS the plugin
  reports no latency (``nccl_ofi_param.h``: ``NET_LATENCY`` default 0.0; only
  ``platform-aws.cpp`` sets one) and runs SENDRECV, tagged sends that the Cassini NIC matches in
  hardware (fi_cxi(7), "Messaging").  A send up to ``FI_CXI_RDZV_THRESHOLD`` + ``FI_CXI_RDZV_GET_MIN``
  (16384 + 2049 bytes, ``cxip_env`` defaults) goes eagerly and lands in the posted buffer; a
  larger one sends its header with 16 KiB and the receiving NIC pulls the rest with an RDMA Get
  ("offloaded rendezvous"), so the wire is crossed three times (the header, the Get, its data).
  LL and LL128 steps (a few KiB per channel) are eager and p2sim charges them NCCL's own
  per-protocol figure; Simple steps (a slice is 16 KiB and more, above the threshold) NCCL's
  Simple figure with the route's latency three times.  The rank-count effect at scale follows:
  beyond one dragonfly group a route climbs to the global links (Rosetta switch hops,
  ``topologies/perlmutter.toml``), and each Simple step pays that longer route three times where
  IB pays it once.  No public figure gives the cxi step itself: NCCL's figures are assumptions
  that ``p2sim topo`` states.
* ``tcpx`` (Google's GPUDirect-TCPX(O) plugin): the TCPXO plugin reports no latency
  (``nccl_shim.cc`` ``GetProperties``: ``props.latency = 0``; ``maxRecvs = 1``), nor does the open TCPX
  plugin (google/nccl-plugin-gpudirecttcpx ``src/net_tcpx.cc``: ``props->latency = 0``, ``maxRecvs = 1``);
  its data path is the host's TCP stack with the receive-side data mover, proxied like NCCL's socket
  transport, so p2sim takes the socket transport's step (NCCL's Simple figure) -- an assumption ``p2sim
  topo`` states; calibration fits the step (``[model] step_latency``).  What the open TCPX plugin's source
  gives: **flows** -- each connection runs ``NCCL_SOCKET_NTHREADS`` x ``NCCL_NSOCKS_PERTHREAD`` TCP sockets
  (the plugin reads NCCL's names, ``src/adapter/nccl/param.h``; 1 x 1 by default, ``src/flags.cc``; Google's
  A3 High recipe 1 x 4: ``[nccl] socket_streams``), and hands a socket at most ``NCCL_DYNAMIC_CHUNK_SIZE``
  bytes at a time (``isend``: ``send_size = min(kDynamicChunkSize, ...)``; 128 KiB by default, the recipe's
  512 KiB: ``[nccl] dynamic_chunksize``), so a step of S bytes keeps ``min(sockets, ceil(S / chunk))``
  flows busy (:func:`stream_task_bytes`; what a flow carries, ``[model] stream_rate``, has no published
  figure: uncapped unless calibrated); **the receive-side copy** -- the plugin's device is
  ``DEV_UNPACK`` (``props->netDeviceType``): data lands in the plugin's GPU receive pages and the NCCL
  kernel's receiving thread block copies it into the destination (``src/devcomm/nccl/unpack1.cu``, NCCL
  ``src/device/network/unpack/``), and NCCL doubles a multi-node communicator's channels below 16 for it
  (``[network] unpack``, :mod:`.channels`).  The copy itself reads and writes HBM (3.35 TB/s on an H100)
  for bytes that arrive at 25 GB/s per NIC: p2sim assumes it hidden behind the network (no published
  figure; ``[model] step_cost`` or ``*_channel_rate`` take it where calibration finds it).

A system file's ``[network] step_latency`` (microseconds; Simple adds the transport's extra)
replaces the transport's step, ``[network] net_latency`` what the plugin reports to NCCL.

Examples
--------
>>> network_step_us(None, "ring", "LL"), network_step_us("ib", "ring", "LL"), network_step_us("socket", "ring", "LL")
(2.7, 2.7, 14.0)
>>> network_step_us("efa", "ring", "Simple"), network_step_us("ib", "tree", "LL", override=20.0)
(23.0, 20.0)
>>> reported_latency_us("efa"), reported_latency_us("cxi"), route_crossings("cxi", "Simple")
(75.0, 0.0, 3)
>>> control_wait_us("efa", "RDMA", "tree", "LL", 4096), control_wait_us("efa", "RDMA", "tree", "LL", 4097)
(0.0, 20.0)
>>> control_wait_us("efa", "SENDRECV", "tree", "Simple", 2**20), control_wait_us("ib", "RDMA", "tree", "Simple", 2**20)
(0.0, 0.0)
>>> flush_us("efa", "ampere", "tree", "Simple"), flush_us("efa", "hopper", "tree", "Simple"), flush_us("ib", "ampere", "tree", "Simple")
(20.0, 0.0, 0.0)
>>> stream_task_bytes("socket", None), stream_task_bytes("tcpx", None), stream_task_bytes("tcpx", 524288)
(65536, 131072, 524288)
"""

from __future__ import annotations

from dataclasses import dataclass

from ..topology.settings import ASSUMED_TRANSPORTS
from .nccl_tables import hw_latency

__all__ = ["network_step_us", "reported_latency_us", "route_crossings", "control_wait_us", "flush_us", "wire_bytes",
           "stream_task_bytes", "SOCKET_TASK", "TCPX_CHUNK",
           "FLUSH_ARCHS", "Transport", "TRANSPORT_MODELS", "STEP_US", "SIMPLE_EXTRA_US", "ASSUMED_TRANSPORTS"]


@dataclass(frozen=True)
class Transport:
    """How p2sim times one transport's network step, and what its plugin tells NCCL.

    ``step_us``: a network step for every protocol (us); ``None``: NCCL's own figure, raised to its
    Simple figure where ``proxy_floor`` (the proxy's turn-around, see the module).  ``simple_extra_us``:
    what a Simple step adds.  ``reported_us``: the latency the network plugin reports to NCCL
    (``ncclNetProperties_t.latency``), which NCCL's model adds to each network step (twice for
    Simple) and so to what it chooses by.  ``rendezvous_crossings``: how many times a Simple step
    crosses the route (a rendezvous that pulls the data back), 1 for a plain send.  ``source``: where
    the figures come from.  What no document gives is in
    :data:`~p2sim.topology.settings.TRANSPORT_ASSUMPTIONS` (``p2sim topo`` lists it).
    """

    step_us: float | None
    proxy_floor: bool
    simple_extra_us: float
    reported_us: float
    rendezvous_crossings: int
    source: str
    # the largest send (bytes on the wire) that goes without the receiver's control message under the plugin's
    # RDMA protocol (None: the transport has no such protocol)
    eager_bytes: int | None = None
    # whether the plugin's GPUDirect flush (GPUs before Hopper, Simple) is a read through the device that the
    # step waits for, one crossing (see the module); False: it stays inside the NIC, in the transport's step
    device_flush: bool = False


TRANSPORT_MODELS: dict[str, Transport] = {
    # NCCL's hwLat[NET] per protocol (tuning.cc ncclTunerConstantsDefaults); a 2 x 8 H100 8-byte AllReduce
    # over IB measures 24.7-25.0 us, NCCL's model 25.2 (NVIDIA/nccl-tests#309, validation/logs)
    "ib": Transport(None, False, 0.0, 0.0, 1, "NCCL's hwLat[NET] per protocol (its own proxy path); net_ib "
                    "reports 0; 2 x 8 H100 8-byte AllReduce: 24.7-25.0 us measured, 25.2 modelled (nccl-tests#309)"),
    "roce": Transport(None, False, 0.0, 0.0, 1, "NCCL's IB verbs transport (net_ib), as ib"),
    "socket": Transport(None, True, 0.0, 0.0, 1, "NCCL's Simple hwLat[NET] for every protocol; net_socket reports 0"),
    # aws-ofi-nccl: nccl_ofi_model.cpp net_lat 20 us + 3 us Simple completion; platform-aws.cpp reports 75 us
    # RDMA protocol: sends above OFI_NCCL_EAGER_MAX_SIZE = 8192 bytes (nccl_ofi_param.h) wait for the receiver's
    # control message (nccl_ofi_rdma.cpp, send); the GPUDirect flush is an fi_read through the EFA device
    # (nccl_ofi_sendrecv.cpp flush; shared memory disabled, nccl_ofi_ofiutils.cpp)
    "efa": Transport(20.0, False, 3.0, 75.0, 1, "aws-ofi-nccl's P5/P5e model tuner (20 us, +3 Simple); "
                     "75 us reported to NCCL (platform-aws.cpp: p4d, p5, fall-through)", 8192, True),
    # aws-ofi-nccl off AWS: NET_LATENCY 0.0 (nccl_ofi_param.h); fi_cxi(7): eager up to 16384 + 2049 bytes,
    # offloaded rendezvous (an RDMA Get by the target NIC) above it
    # the plugin's GPUDirect flush is the same fi_read on its own endpoint as over EFA (nccl_ofi_sendrecv.cpp)
    "cxi": Transport(None, False, 0.0, 0.0, 3, "NCCL's hwLat[NET] per protocol (eager, matched by the NIC); "
                     "Simple's rendezvous crosses the route 3 times (fi_cxi(7)); aws-ofi-nccl reports 0 off AWS",
                     None, True),
    # TCPXO: nccl_shim.cc GetProperties props.latency = 0; TCPX: src/net_tcpx.cc props->latency = 0
    "tcpx": Transport(None, True, 0.0, 0.0, 1, "the socket transport's step; the TCPX(O) plugins report 0"),
}

# the least a socket stream carries of a step: NCCL's socket transport, NCCL_SOCKET_MIN_TASKSIZE (net_socket.cc)
SOCKET_TASK = 65536
# the most the GPUDirect-TCPX plugin hands one socket at a time by default (src/flags.cc kDynamicChunkSize)
TCPX_CHUNK = 128 * 1024

# the GPU generations whose received Simple steps NCCL flushes (ncclTopoNeedFlush, src/graph/paths.cc: "Flush is
# required on Ampere and earlier"; from compute capability 9.0 on none, short of C2C DataDirect NICs)
FLUSH_ARCHS = ("volta", "ampere")

# per transport: a network step's latency (us) for every protocol; None: NCCL's figure (see Transport)
STEP_US: dict[str, float | None] = {k: t.step_us for k, t in TRANSPORT_MODELS.items()}
SIMPLE_EXTRA_US: dict[str, float] = {k: t.simple_extra_us for k, t in TRANSPORT_MODELS.items() if t.simple_extra_us}


def network_step_us(transport: str | None, algo: str, proto: str, override: float | None = None) -> float:
    """One network step of ``algo`` / ``proto`` over ``transport`` (microseconds); ``None``: NCCL's model."""
    if transport is None:
        return hw_latency("net", algo, proto)
    t = TRANSPORT_MODELS[transport]
    step = override if override is not None else t.step_us
    if step is None:
        own = hw_latency("net", algo, proto)
        return max(own, hw_latency("net", algo, "Simple")) if t.proxy_floor else own
    return step + (t.simple_extra_us if proto == "Simple" else 0.0)


def reported_latency_us(transport: str, override: float | None = None) -> float:
    """The latency (us) the transport's plugin reports to NCCL, which NCCL's model adds to each network step."""
    return override if override is not None else TRANSPORT_MODELS[transport].reported_us


def route_crossings(transport: str | None, proto: str) -> int:
    """How many times one network step crosses its route in p2sim's time (``None``: NCCL's model, which
    counts the plugin's latency twice for Simple, its flush)."""
    if transport is None:
        return 2 if proto == "Simple" else 1
    return TRANSPORT_MODELS[transport].rendezvous_crossings if proto == "Simple" else 1


def wire_bytes(proto: str, data: float) -> float:
    """Bytes a step of ``data`` bytes puts on the wire: LL sends 8 bytes of flag with every 8 of data
    (``union ncclLLFifoLine``, 16 bytes), LL128 8 of every 128 (``NCCL_LL128_DATAELEMS`` 15 of
    ``NCCL_LL128_LINEELEMS`` 16 eight-byte words, ``src/include/device.h``), Simple its data."""
    return data * (2.0 if proto == "LL" else 16 / 15 if proto == "LL128" else 1.0)


def control_wait_us(transport: str | None, ofi_protocol: str, algo: str, proto: str, data: float,
                    override: float | None = None) -> float:
    """What a collective's first network step waits (us) for the receiver's control message before a send of
    ``data`` bytes (its chunk) leaves: one network step where the transport's plugin runs its RDMA protocol and
    the step is larger on the wire than its eager limit (see the module), else 0."""
    t = TRANSPORT_MODELS.get(transport) if transport is not None else None
    if t is None or t.eager_bytes is None or ofi_protocol != "RDMA" or wire_bytes(proto, data) <= t.eager_bytes:
        return 0.0
    # the control message is a small message across the network: the step without Simple's completion overhead
    return network_step_us(transport, algo, "LL", override)


def flush_us(transport: str | None, arch: str, algo: str, proto: str, override: float | None = None) -> float:
    """What a received network step of ``proto`` waits (us) for the plugin's GPUDirect flush on ``arch``: one
    crossing of the device (the step without Simple's completion overhead, as :func:`control_wait_us`) where
    the plugin's flush reads through the device and NCCL flushes (Simple on GPUs before Hopper), else 0."""
    t = TRANSPORT_MODELS.get(transport) if transport is not None else None
    if t is None or not t.device_flush or proto != "Simple" or arch not in FLUSH_ARCHS:
        return 0.0
    return network_step_us(transport, algo, "LL", override)


def stream_task_bytes(transport: str, dynamic_chunksize: int | None) -> int:
    """Bytes of a step each TCP stream of a connection takes at a time: NCCL's socket transport splits a step into
    tasks of at least ``NCCL_SOCKET_MIN_TASKSIZE`` (64 KiB), the GPUDirect-TCPX plugin into chunks of at most
    ``NCCL_DYNAMIC_CHUNK_SIZE`` (``dynamic_chunksize``; 128 KiB by default), one socket each, so a step of S bytes
    keeps ``ceil(S / task)`` streams busy, at most the connection's."""
    if transport == "tcpx":
        return TCPX_CHUNK if dynamic_chunksize is None else dynamic_chunksize
    return SOCKET_TASK
