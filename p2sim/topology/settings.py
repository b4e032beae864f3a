"""The NCCL-facing settings of a system file: ``[gpu]``, ``[network] transport``, ``[nccl]`` and ``[model]``.

These tables describe what is not a link: the GPU generation (which of NCCL's tuning
tables apply), the network transport (which per-channel network rate applies), NCCL's
channel knobs as its environment variables set them, and the model's per-channel
throughput caps that calibration fits.  Every table is optional; the defaults are
NCCL's own (cited beside each).

Examples
--------
>>> s = parse_nccl({"channels_per_nic": 2, "hca": ["nic0", "nic2"]}, {}, {"arch": "hopper"}, "x.toml")
>>> s.arch, s.hca, s.max_channels
('hopper', ('nic0', 'nic2'), 64)
>>> parse_nccl({}, {}, {"model": "NVIDIA A100-SXM4-80GB"}, "x.toml").arch
'ampere'
>>> parse_nccl({}, {}, {}, "x.toml")
Traceback (most recent call last):
...
p2sim.util.errors.TopologyError: x.toml: gpu: no [gpu] arch or model: give [gpu] arch (volta, ampere, hopper, blackwell) or [gpu] model as nvidia-smi names it, e.g. "NVIDIA H100 80GB HBM3" (p2sim knows V100 to B300 and their PCIe and GeForce siblings: see the README)
>>> parse_rates({"tree_net_rate": 0.6}, "x.toml").tree_net_rate
0.6
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from ..util.algorithms import ALGORITHMS, by_nccl_name
from ..util.errors import TopologyError
from .gpus import gpu_info
from .ranges import MAX_BANDWIDTH_GBPS, MAX_LATENCY_US, MIN_BANDWIDTH_GBPS  # the links' ranges, one rule for all

__all__ = ["ARCHS", "TRANSPORTS", "IB_TRANSPORTS", "UNPACK_TRANSPORTS", "ASSUMED_TRANSPORTS", "TRANSPORT_ASSUMPTIONS", "REPORTING_TRANSPORTS", "MAX_QPS", "P2P_LEVELS", "OFI_PROTOCOLS", "OFI_TUNERS", "NcclSettings", "ModelRates",
           "parse_nccl", "parse_rates", "LATENCY_FIELDS", "SHARE_FIELDS", "MAX_BANDWIDTH_GBPS", "MIN_BANDWIDTH_GBPS", "MAX_LATENCY_US", "MAX_MEMORY_GIB"]

# NCCL's tuning tables are indexed by these generations (src/graph/tuning.cc, compCapIndex)
ARCHS = ("volta", "ampere", "hopper", "blackwell")
# ib and roce: NCCL's IB verbs transport; efa: AWS's libfabric plugin (aws-ofi-nccl); cxi: HPE
# Slingshot through the same plugin on libfabric's cxi provider; socket: NCCL's TCP transport;
# tcpx: Google's GPUDirect-TCPX(O) plugin
TRANSPORTS = ("ib", "roce", "efa", "cxi", "socket", "tcpx")
# what p2sim assumes for a transport where no document gives a figure (p2sim.collectives.transports has the
# model and its sources); p2sim topo lists it unless the file states the step ([network] step_latency) and, for
# a plugin that reports a latency to NCCL, that too ([network] net_latency)
TRANSPORT_ASSUMPTIONS = {
    "efa": ("an efa network step takes aws-ofi-nccl's P5/P5e model figure (20 us, +3 us for Simple; "
            "nccl_ofi_model.cpp), also on other EFA generations, which have no published figure; the plugin "
            "reports 75 us to NCCL's tuner (platform-aws.cpp: p4d, p5 and the fall-through; 35 us on p5en/p6) "
            "([network] step_latency, net_latency set them); under its RDMA protocol ([nccl] ofi_protocol; "
            "SENDRECV, the plugin's default, where a file does not say) a collective's first network step above "
            "8192 bytes waits one such step for the receiver's control message; on GPUs before Hopper a received "
            "Simple step waits one more for the plugin's GPUDirect flush, an RDMA read through the EFA device "
            "(nccl_ofi_sendrecv.cpp); a message rides ceil(size / 128 KiB) of the device's [nccl] ofi_rails rails "
            "(nccl_ofi_scheduler.cpp; 1 where a file does not say); NCCL's own model chooses unless [nccl] ofi_tuner "
            "names the plugin's region maps (p5, from three nodes)"),
    "cxi": ("a cxi network step takes NCCL's hwLat[NET] for its protocol (LL, LL128: eager sends matched by "
            "the Cassini NIC; no published figure) and a Simple step crosses its route three times (fi_cxi(7)'s "
            "offloaded rendezvous above 16384 + 2049 bytes); on GPUs before Hopper a received Simple step waits "
            "one LL step more for the plugin's GPUDirect flush, a read through the NIC; aws-ofi-nccl reports 0 us "
            "to NCCL off AWS ([network] step_latency or calibrate sets the step)"),
    "tcpx": ("a tcpx network step takes NCCL's Simple hwLat[NET] for every protocol, as NCCL's socket "
             "transport (no published figure for GPUDirect-TCPX(O)); the TCPXO plugin reports 0 us to NCCL "
             "([network] step_latency or calibrate sets the step); the TCPX plugin's receive-side unpack copy "
             "(DEV_UNPACK) is hidden behind the network (no published figure; [model] step_cost takes it)"),
}
# the transports whose network plugin declares its device NCCL_NET_DEVICE_UNPACK (the received data lands in the
# plugin's GPU pages and NCCL's kernel copies it out): Google's open GPUDirect-TCPX plugin (google/nccl-plugin-
# gpudirecttcpx src/net_tcpx.cc GetProperties: props->netDeviceType = DEV_UNPACK); a file's [network] unpack
# says otherwise (the closed TCPXO plugin publishes no source)
UNPACK_TRANSPORTS = ("tcpx",)
# the transports whose plugins report a latency to NCCL that p2sim takes from a document (aws-ofi-nccl on EC2)
REPORTING_TRANSPORTS = ("efa",)
# transports with an assumption p2sim states
ASSUMED_TRANSPORTS = tuple(TRANSPORT_ASSUMPTIONS)
# aws-ofi-nccl's send/receive protocols (OFI_NCCL_PROTOCOL, nccl_ofi_param.h; SENDRECV its default,
# platform-aws.cpp's default_protocol RDMA on p5/p5e, p5en and p6, SENDRECV on p4d/p4de)
OFI_PROTOCOLS = ("SENDRECV", "RDMA")
OFI_TUNERS = ("none", "p5")  # [nccl] ofi_tuner: the platforms whose tuner maps p2sim has (collectives/ofi_tuner.py)
# NCCL_P2P_LEVEL's path types, nearest first (NCCL docs, "NCCL_P2P_LEVEL")
P2P_LEVELS = ("NVL", "PIX", "PXB", "PHB", "SYS")

MAX_MEMORY_GIB = 1e4  # a GPU's memory: the largest have 192-288 GB (B200, B300 data sheets)
# queue pairs of one IB/RoCE connection: NCCL_IB_QPS_PER_CONNECTION times the merged devices, at most
# NCCL_IB_MAX_QPS = 128 (src/transport/net_ib/common.h)
MAX_QPS = 128
# the transports whose connections are NCCL's IB verbs queue pairs (src/transport/net_ib/)
IB_TRANSPORTS = ("ib", "roce")


@dataclass(frozen=True)
class NcclSettings:
    """How NCCL is set up on this system (environment variables and detected hardware).

    ``channels_per_nic``: NCCL's ring search puts one channel on each NIC and
    duplicates the channels (``src/graph/connect.cc``), so a collective across nodes
    runs two channels per NIC by default.  ``min_channels`` / ``max_channels`` bound the
    channel count like ``NCCL_MIN_NCHANNELS`` / ``NCCL_MAX_NCHANNELS`` (``MAXCHANNELS`` is
    64 in ``src/include/device.h``).  ``hca`` restricts the NICs like ``NCCL_IB_HCA``.
    ``p2p_level`` is ``NCCL_P2P_LEVEL``: NCCL's default allows GPU peer-to-peer only
    through PCIe switches (PXB), not through a CPU (``src/graph/paths.cc``), so GPUs
    farther apart exchange data through host memory (the SHM transport).  ``nvls``
    is ``NCCL_NVLS_ENABLE``.  ``collnet`` is ``NCCL_COLLNET_ENABLE`` (CollNet, in-network
    reduction): ``None`` follows the fabric -- on where its switches reduce (SHARP), since a
    cluster that has them runs NCCL with the SHARP plugin and CollNet enabled.
    """

    arch: str = "ampere"
    gpu_model: str = ""
    cc: int = 80  # compute capability x 10: which of NCCL's per-NVLink figures applies (topo.h)
    memory_gib: float | None = None  # the GPU's memory (data sheet), for warnings about buffers
    # the GPU's dense tensor-core peaks and HBM bandwidth as the file gives them ([gpu] bf16_tflops,
    # fp8_tflops, hbm_tb_per_s; None: the data sheet's, p2sim.topology.gpus.gpu_compute): a step's compute
    bf16_tflops: float | None = None
    fp8_tflops: float | None = None
    hbm_tb_per_s: float | None = None
    transport: str = "ib"
    channels_per_nic: int = 2
    min_channels: int = 1
    max_channels: int = 64
    hca: tuple[str, ...] = ()
    p2p_level: str = "PXB"
    gdr_level: str = "PXB"  # NCCL_NET_GDR_LEVEL: GPUDirect RDMA up to this path type (paths.cc default)
    nvls: bool = True
    collnet: bool | None = None
    step_latency: float | None = None  # [network] step_latency: us per network step, replacing the transport's
    # [network] net_latency: the latency (us) the network plugin reports to NCCL (OFI_NCCL_NET_LATENCY for
    # aws-ofi-nccl), which NCCL's model adds to every network step; None: the transport's default
    net_latency: float | None = None
    protocols: tuple[str, ...] = ("LL", "LL128", "Simple")  # NCCL_PROTO: the protocols NCCL may use
    buffsize: int = 4 * 2**20  # NCCL_BUFFSIZE: bytes of a Simple connection's buffer (init.cc DEFAULT_BUFFSIZE)
    algorithms: tuple[str, ...] = ALGORITHMS  # NCCL_ALGO: the algorithms NCCL may use
    nvls_chunksize: int = 131072  # NCCL_NVLS_CHUNKSIZE (src/transport/nvls.cc default)
    nvlstree_max_chunksize: int | None = None  # NCCL_NVLSTREE_MAX_CHUNKSIZE; None: 64 KiB from 4 nodes (nvls.cc)
    # TCP streams per network connection: NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD (socket transport;
    # net_socket.cc picks 1 unless the NIC is AWS's, 2 x 8, or Google's, 4 x 1), or a TCPX plugin's flows
    socket_streams: int = 1
    # NCCL_IB_QPS_PER_CONNECTION: queue pairs per connection (default 1, src/transport/net_ib/connect.cc);
    # each is a flow of its own to an ECMP fabric (its own UDP source port on RoCE)
    ib_qps_per_connection: int = 1
    # NCCL_IB_SPLIT_DATA_ON_QPS: 1 splits every message over all QPs, 0 (default since 2.20.3,
    # net_ib/common.cc) sends each message whole on one QP, round-robin (net_ib/common.h)
    ib_split_data_on_qps: bool = False
    # OFI_NCCL_PROTOCOL: aws-ofi-nccl's protocol (efa, cxi): SENDRECV (the plugin's default, nccl_ofi_param.h:
    # tagged sends) or RDMA (RDMA writes into the buffer the receiver's control message names)
    ofi_protocol: str = "SENDRECV"
    # under the RDMA protocol, the NICs aws-ofi-nccl joins into one network device of NCCL's ("rails": p5's topology
    # file puts 4 EFA NICs behind each GPU's PCIe switch, src/platform-aws.cpp) and the least a message's stripe on a
    # rail carries: OFI_NCCL_MIN_STRIPE_SIZE, 128 KiB (nccl_ofi_param.h); a message goes whole to one rail up to it,
    # else over the most rails (a divisor of their count) that keep each stripe at least that (nccl_ofi_scheduler.cpp)
    ofi_rails: int = 1
    # the tuner aws-ofi-nccl bundles (NCCL 2.21+ loads it from the net plugin): "p5", its region maps of p5/p5e
    # (src/tuner/nccl_ofi_regions.cpp), choose from three nodes on; "none", NCCL's own model (OFI_TUNERS)
    ofi_tuner: str = "none"
    ofi_min_stripe_size: int = 131072
    # [network] unpack: whether the network plugin's device is NCCL_NET_DEVICE_UNPACK, for which NCCL doubles a
    # multi-node communicator's channels below 16 (NCCL_UNPACK_DOUBLE_NCHANNELS, src/graph/connect.cc); parse_nccl
    # defaults it by transport (UNPACK_TRANSPORTS)
    net_unpack: bool = False
    # NCCL_DYNAMIC_CHUNK_SIZE: the most bytes the GPUDirect-TCPX plugin hands one of a connection's sockets at a
    # time (src/net_tcpx.cc, isend: send_size = min(kDynamicChunkSize, ...)); None: the plugin's default, 128 KiB
    # (src/flags.cc kDynamicChunkSize)
    dynamic_chunksize: int | None = None
    # the NCCL release the job loaded, "MAJOR.MINOR.PATCH" as NCCL's log prints it ("NCCL version 2.26.2"); "" (the
    # default) is the newest p2sim follows (its tables: src/graph/tuning.cc of 2.30).  Only the rules that changed
    # between releases read it (:func:`~p2sim.collectives.nccl_tables.ll128_over_network`: LL128 over a NIC behind
    # Grace's C2C link from 2.27.3)
    version: str = ""

    def version_at_least(self, *release: int) -> bool:
        """Whether the job's NCCL is ``release`` or newer (the default, "", is the newest)."""
        if not self.version:
            return True
        return tuple(int(x) for x in self.version.split(".")) >= release


# NCCL releases are MAJOR.MINOR.PATCH (src/include/nccl.h.in NCCL_VERSION_CODE), all of them 2.x
_VERSION = re.compile(r"2\.\d{1,2}\.\d{1,2}")


def check_version(src: str, field: str, value: Any) -> str:
    """An NCCL release as ``[nccl] version`` takes it: "" or MAJOR.MINOR.PATCH, 2.x."""
    if not isinstance(value, str) or (value and _VERSION.fullmatch(value) is None):
        raise _fail(src, field, f"{value!r} must be an NCCL release such as \"2.26.2\" (as NCCL's log prints it)")
    return value


@dataclass(frozen=True)
class ModelRates:
    """Per-channel throughput caps in GB/s (``None``: the default; ``inf``: uncapped).

    ``*_net_rate`` caps the bytes one channel of a ring or tree sends into the network
    per second at a node (NCCL moves a channel's network traffic through one
    connection of its proxy thread: sockets or queue pairs).  ``*_channel_rate`` caps a
    channel's bus bandwidth on the GPU side (one thread block copies and reduces a
    channel's data).  Calibration fits them.

    Latencies, in microseconds: ``step_latency`` is one network step (replacing the
    transport's, see :mod:`p2sim.collectives.transports`); ``launch`` a per-collective cost and
    ``step_cost`` a per-chunk synchronisation cost that pipelining does not hide (each chunk of
    a channel takes ``step_cost`` plus its bytes over the channel's rate), both of which NCCL's
    model leaves out and no public figure gives: 0 unless calibrated.

    ``stream_rate`` (GB/s) is what one TCP stream carries, for the transports over TCP (``socket``,
    ``tcpx``): a channel's network connection moves at most its streams times it, where a step
    uses one stream per 64 KiB (``NCCL_SOCKET_MIN_TASKSIZE``) up to ``[nccl] socket_streams``.  A
    NIC then fills only as more channels and communicators share it.  No public figure: unset
    (uncapped) unless calibrated.
    """

    ring_net_rate: float | None = None
    tree_net_rate: float | None = None
    ring_channel_rate: float | None = None
    tree_channel_rate: float | None = None
    step_latency: float | None = None
    launch: float | None = None
    step_cost: float | None = None
    stream_rate: float | None = None
    # the share of its NVLink an NVLink SHARP reduction reaches (NVLS and NVLS-Tree's hops), in (0, 1]; None:
    # NCCL's nvlsEfficiency (tuning.cc: 0.85 Hopper, 0.74 Blackwell).  No public figure for NVL72 (nccl-facts-2
    # 1f): an assumption a system file states with its source, and calibration fits
    nvls_efficiency: float | None = None

    def to_dict(self) -> dict[str, float]:
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}


LATENCY_FIELDS = ("step_latency", "launch", "step_cost")  # ModelRates' latencies (us), not rates
SHARE_FIELDS = ("nvls_efficiency",)  # ModelRates' shares of a link's rate, in (0, 1]


def _fail(src: str, field: str, msg: str) -> TopologyError:
    return TopologyError(f"{src}: {field}: {msg}")


def _unknown(src: str, table: str, raw: Mapping[str, Any], known: set[str]) -> None:
    extra = sorted(set(raw) - known)
    if extra:
        raise _fail(src, f"{table}.{extra[0]}", f"unknown setting (known: {', '.join(sorted(known))})")


def _choice(src: str, field: str, value: Any, options: tuple[str, ...]) -> str:
    if value not in options:
        raise _fail(src, field, f"{value!r} is not one of {', '.join(options)}")
    return value


def _count(src: str, field: str, value: Any, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise _fail(src, field, f"{value!r} must be a whole number in {low}..{high}")
    return value


def _step_latency(src: str, network: Mapping[str, Any], key: str = "step_latency") -> float | None:
    v = network.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= MAX_LATENCY_US:
        raise _fail(src, f"network.{key}", f"{v!r} must be a number of microseconds in [0, {MAX_LATENCY_US:g}]")
    return float(v)


def _bytes(src: str, field: str, value: Any, env: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 4096 <= value <= 2**30:
        raise _fail(src, field, f"{value!r} must be a whole number of bytes in 4096..1073741824 ({env})")
    return value


def _algorithms(src: str, value: Any) -> tuple[str, ...]:
    """NCCL_ALGO's list: p2sim's names or NCCL's (Ring, NVLSTree, CollNetDirect, ...), any case."""
    names = [by_nccl_name(v) if isinstance(v, str) else None
             for v in value] if isinstance(value, list) else [None]
    if not names or None in names or len(set(names)) != len(names):
        raise _fail(src, "nccl.algorithms", f"{value!r} must be a list of some of {', '.join(ALGORITHMS)} (NCCL_ALGO)")
    return tuple(a for a in ALGORITHMS if a in names)


# a step's compute figures of [gpu], with their bounds (a GPU's dense peak: 0 where it has no such cores;
# the largest data-sheet figures are GB300's 5,000 TFLOP/s FP8 and 8 TB/s)
_COMPUTE_KEYS = {"bf16_tflops": (1.0, 1e5), "fp8_tflops": (0.0, 1e5), "hbm_tb_per_s": (0.01, 1e3)}

# the compute capability a generation stands for when the file names no known model
_ARCH_CC = {"volta": 70, "ampere": 80, "hopper": 90, "blackwell": 100}


def _generation(src: str, gpu: Mapping[str, Any], model: str, memory: Any,
                assumed: list[str]) -> tuple[str, int, float | None]:
    """The GPU generation, compute capability and memory: from ``arch`` and a model p2sim knows.

    Nothing is assumed silently: a file that gives neither is refused, and what is inferred
    goes into ``assumed`` (``p2sim topo`` prints it).
    """
    info = gpu_info(model) if model else None
    arch = gpu.get("arch")
    if arch is not None:
        arch = _choice(src, "gpu.arch", arch, ARCHS)
    if info is None and arch is None:
        what = f"[gpu] model {model!r} is not one p2sim knows" if model else "no [gpu] arch or model"
        raise _fail(src, "gpu", f"{what}: give [gpu] arch ({', '.join(ARCHS)}) or [gpu] model as nvidia-smi "
                                "names it, e.g. \"NVIDIA H100 80GB HBM3\" (p2sim knows V100 to B300 and their PCIe "
                                "and GeForce siblings: see the README)")
    if info is not None and arch is not None and arch != info.arch:
        raise _fail(src, "gpu.arch", f"{arch!r}, but the {info.name} (compute capability {info.cc / 10:g}) uses "
                                     f"NCCL's {info.arch} tables")
    if info is None:
        cc = _ARCH_CC[arch]
        if model:
            assumed.append(f"GPU {model!r} unknown to p2sim: compute capability {cc / 10:g} assumed from arch {arch}")
        else:
            assumed.append(f"GPU compute capability {cc / 10:g} assumed from arch {arch} ([gpu] model not given)")
        return arch, cc, None if memory is None else float(memory)
    if arch is None:
        assumed.append(f"GPU generation {info.arch} (compute capability {info.cc / 10:g}) from [gpu] model {model!r}")
    if memory is None:
        memory = info.memory_gb * 1e9 / 2**30
        assumed.append(f"GPU memory {info.memory_gb:g} GB from the {info.name}'s data sheet")
    return info.arch, info.cc, float(memory)


def parse_nccl(nccl: Mapping[str, Any], network: Mapping[str, Any], gpu: Mapping[str, Any], src: str,
               assumed: list[str] | None = None) -> NcclSettings:
    """Validate the ``[nccl]`` table, ``[network] transport`` and the ``[gpu]`` table.

    What the file leaves to defaults that change a prediction is appended to ``assumed``.
    """
    assumed = [] if assumed is None else assumed
    if not isinstance(nccl, Mapping):
        raise _fail(src, "nccl", "must be a table")
    if not isinstance(gpu, Mapping):
        raise _fail(src, "gpu", "must be a table")
    _unknown(src, "gpu", gpu, {"arch", "model", "memory_gib", *_COMPUTE_KEYS})
    _unknown(src, "nccl", nccl, {"channels_per_nic", "min_channels", "max_channels", "hca", "p2p_level", "nvls",
                                 "collnet", "gdr_level", "protocols", "buffsize", "algorithms",
                                 "nvls_chunksize", "nvlstree_max_chunksize", "socket_streams",
                                 "ib_qps_per_connection", "ib_split_data_on_qps", "ofi_protocol",
                                 "ofi_rails", "ofi_min_stripe_size", "ofi_tuner", "dynamic_chunksize", "version"})
    d = NcclSettings()
    hca = nccl.get("hca", [])
    if not isinstance(hca, list) or not all(isinstance(h, str) and h for h in hca):
        raise _fail(src, "nccl.hca", f"{hca!r} must be a list of NIC names")
    nvls = nccl.get("nvls", d.nvls)
    if not isinstance(nvls, bool):
        raise _fail(src, "nccl.nvls", f"{nvls!r} must be true or false")
    split = nccl.get("ib_split_data_on_qps", d.ib_split_data_on_qps)
    if not isinstance(split, bool):
        raise _fail(src, "nccl.ib_split_data_on_qps", f"{split!r} must be true or false (NCCL_IB_SPLIT_DATA_ON_QPS)")
    collnet = nccl.get("collnet")
    if collnet is not None and not isinstance(collnet, bool):
        raise _fail(src, "nccl.collnet", f"{collnet!r} must be true or false")
    protocols = nccl.get("protocols", list(d.protocols))
    if (not isinstance(protocols, list) or not protocols
            or any(p not in d.protocols for p in protocols) or len(set(protocols)) != len(protocols)):
        raise _fail(src, "nccl.protocols", f"{protocols!r} must be a list of some of LL, LL128, Simple (NCCL_PROTO)")
    algorithms = _algorithms(src, nccl.get("algorithms", list(d.algorithms)))
    chunks = {k: _bytes(src, f"nccl.{k}", nccl.get(k, getattr(d, k)), env)
              for k, env in (("nvls_chunksize", "NCCL_NVLS_CHUNKSIZE"),
                             ("nvlstree_max_chunksize", "NCCL_NVLSTREE_MAX_CHUNKSIZE"),
                             ("dynamic_chunksize", "NCCL_DYNAMIC_CHUNK_SIZE"))}
    buffsize = nccl.get("buffsize", d.buffsize)
    if isinstance(buffsize, bool) or not isinstance(buffsize, int) or not 2**16 <= buffsize <= 2**30:
        raise _fail(src, "nccl.buffsize", f"{buffsize!r} must be a whole number of bytes in 65536..1073741824 "
                                          "(NCCL_BUFFSIZE)")
    model = gpu.get("model", "")
    if not isinstance(model, str):
        raise _fail(src, "gpu.model", f"{model!r} is not a text")
    memory = gpu.get("memory_gib")
    if memory is not None and (isinstance(memory, bool) or not isinstance(memory, (int, float))
                               or not 0 < memory <= MAX_MEMORY_GIB):
        raise _fail(src, "gpu.memory_gib", f"{memory!r} must be a number of GiB in (0, {MAX_MEMORY_GIB:g}]")
    arch, cc, memory = _generation(src, gpu, model, memory, assumed)
    transport = _choice(src, "network.transport", network.get("transport", d.transport), TRANSPORTS)
    unpack = network.get("unpack", transport in UNPACK_TRANSPORTS)
    if not isinstance(unpack, bool):
        raise _fail(src, "network.unpack", f"{unpack!r} must be true or false (the plugin's NCCL_NET_DEVICE_UNPACK)")
    compute = {}
    for key, (low, high) in _COMPUTE_KEYS.items():
        value = gpu.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                  or not low <= value <= high):
            raise _fail(src, f"gpu.{key}", f"{value!r} must be a number in [{low:g}, {high:g}]")
        compute[key] = None if value is None else float(value)
    out = NcclSettings(
        **compute,
        arch=arch,
        gpu_model=model,
        cc=cc,
        memory_gib=memory,
        transport=transport,
        net_unpack=unpack,
        channels_per_nic=_count(src, "nccl.channels_per_nic", nccl.get("channels_per_nic", d.channels_per_nic), 1, 64),
        min_channels=_count(src, "nccl.min_channels", nccl.get("min_channels", d.min_channels), 1, 64),
        max_channels=_count(src, "nccl.max_channels", nccl.get("max_channels", d.max_channels), 1, 64),
        hca=tuple(hca),
        p2p_level=_choice(src, "nccl.p2p_level", nccl.get("p2p_level", d.p2p_level), P2P_LEVELS),
        gdr_level=_choice(src, "nccl.gdr_level", nccl.get("gdr_level", d.gdr_level), P2P_LEVELS),
        nvls=nvls,
        collnet=collnet,
        step_latency=_step_latency(src, network),
        net_latency=_step_latency(src, network, "net_latency"),
        protocols=tuple(p for p in d.protocols if p in protocols),
        buffsize=buffsize,
        algorithms=algorithms,
        socket_streams=_count(src, "nccl.socket_streams", nccl.get("socket_streams", d.socket_streams), 1, 1024),
        ib_qps_per_connection=_count(src, "nccl.ib_qps_per_connection",
                                     nccl.get("ib_qps_per_connection", d.ib_qps_per_connection), 1, MAX_QPS),
        ib_split_data_on_qps=split,
        ofi_protocol=_choice(src, "nccl.ofi_protocol", nccl.get("ofi_protocol", d.ofi_protocol), OFI_PROTOCOLS),
        ofi_rails=_count(src, "nccl.ofi_rails", nccl.get("ofi_rails", d.ofi_rails), 1, 64),
        ofi_tuner=_choice(src, "nccl.ofi_tuner", nccl.get("ofi_tuner", d.ofi_tuner), OFI_TUNERS),
        ofi_min_stripe_size=_count(src, "nccl.ofi_min_stripe_size",
                                   nccl.get("ofi_min_stripe_size", d.ofi_min_stripe_size), 1, 2**30),
        version=check_version(src, "nccl.version", nccl.get("version", d.version)),
        **chunks,
    )
    if out.min_channels > out.max_channels:
        raise _fail(src, "nccl.min_channels", f"{out.min_channels} is above max_channels {out.max_channels}")
    return out


def parse_rates(model: Mapping[str, Any], src: str) -> ModelRates:
    """Validate the ``[model]`` table (GB/s; ``inf`` = uncapped)."""
    if not isinstance(model, Mapping):
        raise _fail(src, "model", "must be a table")
    known = {f.name for f in fields(ModelRates)}
    for old in ("ring_efficiency", "tree_efficiency", "ring_max_rate", "tree_max_rate"):
        if old in model:
            raise _fail(src, f"model.{old}", "was replaced by the per-channel rates "
                        "(ring_net_rate, tree_net_rate, ring_channel_rate, tree_channel_rate): recalibrate")
    _unknown(src, "model", model, known)
    values: dict[str, float] = {}
    for k in LATENCY_FIELDS:
        if k in model:
            v = model[k]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= MAX_LATENCY_US:
                raise _fail(src, f"model.{k}", f"{v!r} must be a number of microseconds in [0, {MAX_LATENCY_US:g}]")
            values[k] = float(v)
    for k in SHARE_FIELDS:
        if k in model:
            v = model[k]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= 1:
                raise _fail(src, f"model.{k}", f"{v!r} must be a share of the link's rate in (0, 1]")
            values[k] = float(v)
    for k in known - set(LATENCY_FIELDS) - set(SHARE_FIELDS):
        if k in model:
            v = model[k]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
                raise _fail(src, f"model.{k}", f"{v!r} must be a positive number of GB/s (or inf)")
            if not math.isinf(v) and not MIN_BANDWIDTH_GBPS <= v <= MAX_BANDWIDTH_GBPS:
                raise _fail(src, f"model.{k}", f"{v!r} GB/s is beyond any real link (between {MIN_BANDWIDTH_GBPS:g} and "
                                               f"{MAX_BANDWIDTH_GBPS:g})")
            values[k] = float(v)
    return ModelRates(**values)
