from __future__ import annotations

from p2sim.collectives.nccl_tables import hw_latency
from p2sim.collectives.transports import STEP_US, network_step_us
from p2sim.topology.settings import TRANSPORTS


def test_nccls_model_is_its_own_figures():
    for algo in ("ring", "tree"):
        for proto in ("LL", "LL128", "Simple"):
            assert network_step_us(None, algo, proto) == hw_latency("net", algo, proto)


def test_ib_and_roce_steps_are_nccls_own_figures_and_sockets_pay_the_proxy():
    # IB and RoCE (NCCL's net_ib): NCCL's hwLat[NET] per algorithm and protocol (tuning.cc), by hand
    for t in ("ib", "roce"):
        assert [network_step_us(t, "ring", p) for p in ("LL", "LL128", "Simple")] == [2.7, 4.0, 14.0]
        assert [network_step_us(t, "tree", p) for p in ("LL", "LL128", "Simple")] == [5.0, 8.5, 14.0]
    # sockets and TCPX: NCCL's Simple figure for every protocol (the proxy floor, an assumption)
    for t in ("socket", "tcpx"):
        assert network_step_us(t, "ring", "LL") == network_step_us(t, "ring", "Simple") == 14.0
    # EFA: AWS's model, 20 us and 3 more for Simple (aws-ofi-nccl nccl_ofi_model.cpp)
    assert network_step_us("efa", "ring", "LL") == 20.0 and network_step_us("efa", "tree", "Simple") == 23.0


def test_every_transport_has_a_step_and_a_file_may_set_it():
    assert set(STEP_US) == set(TRANSPORTS)
    assert network_step_us("tcpx", "ring", "Simple", override=30.0) == 30.0


# ---- issue 33 item 2 / issue 32 item 5: small messages per transport ----------------------------------------

from dataclasses import replace  # noqa: E402

import pytest  # noqa: E402

from p2sim.collectives import Expander  # noqa: E402
from p2sim.collectives.latency import collective_latency  # noqa: E402
from p2sim.collectives.nccl_tables import base_latency  # noqa: E402
from p2sim.collectives.transports import TRANSPORT_MODELS, reported_latency_us, route_crossings  # noqa: E402
from p2sim.topology import find_spec, load_system  # noqa: E402
from p2sim.topology.settings import TRANSPORT_ASSUMPTIONS  # noqa: E402

US = 1e-6


@pytest.mark.parametrize("transport, step", [("ib", 5.0), ("roce", 5.0), ("socket", 14.0), ("tcpx", 14.0),
                                             ("efa", 20.0), ("cxi", hw_latency("net", "tree", "LL"))])
def test_two_node_8_byte_allreduce_by_hand(transport, step):
    """2 nodes x 1 GPU, 8 B AllReduce as a tree of LL: launch + NCCL's base + 2 network steps (up and down
    the tree, log2(2) = 1 level), each the transport's step plus the route once (LL is eager everywhere):
    NCCL's own LL tree figure (5 us) over IB, RoCE and cxi, its Simple figure (14 us) over sockets and TCPX,
    20 us over EFA."""
    route, launch = 1.5, 4.0  # us
    t = collective_latency("tree", "LL", "AllReduce", 2, 2, "nvlink", 0.0, route * US, 8, 1, "hopper",
                           transport, None, launch)
    assert t == pytest.approx((launch + base_latency("tree", "LL") + 2 * (step + route)) * US)


def test_simple_step_crosses_the_route_by_protocol():
    """A Simple step: IB and EFA send once; cxi's offloaded rendezvous (fi_cxi(7)) crosses the route 3 times."""
    route = 2.0
    ib = collective_latency("tree", "Simple", "AllReduce", 2, 2, "nvlink", 0.0, route * US, 2**20, 1, "ampere", "ib")
    cxi = collective_latency("tree", "Simple", "AllReduce", 2, 2, "nvlink", 0.0, route * US, 2**20, 1, "ampere",
                             "cxi")
    # 2 network steps, 2 more crossings each, and on Ampere each step's GPUDirect flush through the Cassini NIC
    # (aws-ofi-nccl's read, NCCL's 5 us tree LL step; IB's stays inside the HCA)
    assert cxi - ib == pytest.approx(2 * (2 * route + 5.0) * US)
    assert [route_crossings(t, "Simple") for t in ("ib", "efa", "cxi")] == [1, 1, 3]
    assert route_crossings(None, "Simple") == 2 and route_crossings("cxi", "LL") == 1  # NCCL's flush; eager


def _with(spec, **nccl):
    return replace(spec, nccl=replace(spec.nccl, **nccl))


def _time(topo, nbytes, algo="auto", proto="auto"):
    ex = Expander(topo)
    members = tuple(range(topo.devices))
    if algo == "auto":
        algo, proto = ex.choose("AllReduce", members, nbytes)
    return ex.collective(algo, proto, "AllReduce", members, nbytes)


def test_cxi_small_steps_as_ibs_and_dearer_simple_steps_across_groups():
    """Few ranks: a small AllReduce on Slingshot (cxi) takes what it takes over IB (NCCL's own LL figure on
    both: eager sends matched by the Cassini NIC, NCCL's measure of its IB proxy path).  Beyond one
    dragonfly group (128 nodes, 512 ranks; 2,048 ranks at 512 nodes) a Simple step's three crossings of the
    longer route (global links) cost cxi more than IB, and more than inside a group."""
    spec = find_spec("perlmutter")
    cxi2, ib2 = load_system(spec, 2), load_system(_with(spec, transport="ib"), 2)
    assert _time(cxi2, 8).latency == _time(ib2, 8).latency
    extra = {}
    for nodes in (2, 512):
        c, i = (load_system(s, nodes) for s in (spec, _with(spec, transport="ib")))
        extra[nodes] = _time(c, 2**20, "tree", "Simple").latency - _time(i, 2**20, "tree", "Simple").latency
    # two nodes on one switch: the route is the switch's 350 ns (the NIC links' two halves); a cxi Simple step
    # crosses it twice more than IB's, on each of the tree's 2 network steps, and waits for the plugin's flush
    # through the NIC (A100: NCCL's 5 us tree LL step)
    assert extra[2] == pytest.approx(2 * (2 * 0.35e-6 + 5.0e-6))
    assert extra[512] > extra[2]  # across groups the route is longer, and cxi pays it three times a step


def test_efa_reports_its_latency_to_nccls_choice():
    """NCCL adds what the plugin reports (75 us on p5, platform-aws.cpp) to every network step of its model,
    twice for Simple; p2sim's time does not pay it."""
    spec = find_spec("p5")
    told, silent = load_system(spec, 2), load_system(_with(spec, net_latency=0.0), 2)
    a, b = _time(told, 2**20, "tree", "Simple"), _time(silent, 2**20, "tree", "Simple")
    assert a.tuning[0] - b.tuning[0] == pytest.approx(2 * 2 * 75.0 * US)  # 2 tree steps x (75 + 75 flush)
    assert a.latency == b.latency
    assert reported_latency_us("efa") == 75.0 and reported_latency_us("efa", 35.0) == 35.0
    assert all(reported_latency_us(t) == 0.0 for t in TRANSPORT_MODELS if t != "efa")


def test_topo_lists_the_assumed_transport_values():
    for name, transport in (("p5", "efa"), ("p4d", "efa"), ("a3-mega", "tcpx"), ("perlmutter", "cxi")):
        assert TRANSPORT_ASSUMPTIONS[transport] in find_spec(name).assumed
    assert not any("network step" in a for a in find_spec("dgx-h100").assumed)  # ib: NCCL's own transport


def test_perlmutter_loads_with_the_dragonfly_hops():
    topo = load_system("perlmutter", 512)
    assert topo.spec.nccl.transport == "cxi" and topo.devices == 2048
    r = topo.router
    near, far = r.route(0, 4), r.route(0, 4 * 511)  # the next node (same switch), a node in another group
    assert far.latency > near.latency


def test_rdma_sends_above_the_eager_size_wait_for_the_receivers_control_message():
    """aws-ofi-nccl's RDMA protocol: a send above OFI_NCCL_EAGER_MAX_SIZE (8192 bytes on the wire) waits one
    crossing of the receiver's control message (the 20 us network step); LL puts 16 bytes on the wire per 8
    of data, LL128 128 per 120; SENDRECV and NCCL's own transports wait for none."""
    from p2sim.collectives.transports import control_wait_us, wire_bytes

    assert wire_bytes("LL", 4096) == 8192 and wire_bytes("LL128", 122880) == 131072 and wire_bytes("Simple", 9) == 9
    assert control_wait_us("efa", "RDMA", "tree", "LL", 4096) == 0.0  # 8192 bytes on the wire: eager
    assert control_wait_us("efa", "RDMA", "tree", "LL", 4100) == 20.0
    assert control_wait_us("efa", "RDMA", "tree", "Simple", 8193) == 20.0  # the step without Simple's +3 us
    assert control_wait_us("efa", "RDMA", "tree", "Simple", 8192) == 0.0
    assert control_wait_us("efa", "RDMA", "ring", "LL128", 2**20, override=30.0) == 30.0  # a file's step
    assert control_wait_us("efa", "SENDRECV", "tree", "Simple", 2**20) == 0.0
    for t in ("ib", "roce", "socket", "tcpx", "cxi", None):
        assert control_wait_us(t, "RDMA", "tree", "Simple", 2**20) == 0.0


def test_a_p5_collectives_first_network_step_waits_for_the_control_message():
    """2 x p5 (RDMA protocol): 1 MiB over 16 channels is 64 KiB a channel, far above 8 KiB: p2sim's time pays one
    20 us crossing more than with SENDRECV; 64 KiB (4 KiB of LL data, 8 KiB on the wire) goes eagerly.  NCCL's
    choice does not see it; InfiniBand's time is unchanged."""
    spec = find_spec("p5")
    assert spec.nccl.ofi_protocol == "RDMA" and find_spec("p4d").nccl.ofi_protocol == "SENDRECV"
    rdma, sendrecv = load_system(spec, 2), load_system(_with(spec, ofi_protocol="SENDRECV"), 2)
    a, b = _time(rdma, 2**20, "tree", "LL128"), _time(sendrecv, 2**20, "tree", "LL128")
    assert a.latency - b.latency == pytest.approx(20.0 * US) and a.tuning == b.tuning
    a, b = _time(rdma, 2**16, "tree", "LL"), _time(sendrecv, 2**16, "tree", "LL")
    assert a.channels == 16 and a.latency == b.latency
    ib = find_spec("dgx-h100")
    assert _time(load_system(ib, 2), 2**20).latency == _time(load_system(_with(ib, ofi_protocol="RDMA"), 2),
                                                             2**20).latency


# ---- issue 33 item 2: the GPUDirect flush through the EFA device (p4d, p4de) ----------------------------------

def test_efa_flush_on_gpus_before_hopper_is_one_more_device_crossing_per_simple_step():
    """NCCL flushes every Simple step received by GPUDirect on Ampere and earlier (ncclTopoNeedFlush, paths.cc);
    aws-ofi-nccl's flush is an RDMA read through the EFA device (sendrecv flush: fi_read on the local endpoint,
    shared memory disabled, nccl_ofi_ofiutils.cpp), so it costs one crossing of the device: the 20 us network
    step without Simple's 3 us.  Not for LL/LL128 (NCCL flushes Simple only), not from Hopper on, not over
    NCCL's IB verbs (its loopback read stays inside the HCA, as before), not in NCCL's own model."""
    from p2sim.collectives.transports import flush_us

    assert flush_us("efa", "ampere", "tree", "Simple") == 20.0
    assert flush_us("efa", "volta", "ring", "Simple", override=30.0) == 30.0  # a file's step
    assert flush_us("efa", "ampere", "tree", "LL") == flush_us("efa", "ampere", "tree", "LL128") == 0.0
    assert flush_us("efa", "hopper", "tree", "Simple") == flush_us("efa", "blackwell", "tree", "Simple") == 0.0
    # the same plugin over Slingshot: one eager crossing of the Cassini NIC, NCCL's LL network step
    assert flush_us("cxi", "ampere", "tree", "Simple") == 5.0 and flush_us("cxi", "ampere", "ring", "Simple") == 2.7
    for t in ("ib", "roce", "socket", "tcpx", None):
        assert flush_us(t, "ampere", "tree", "Simple") == 0.0
    assert "GPUDirect flush" in TRANSPORT_ASSUMPTIONS["efa"]


def test_two_p4d_8_byte_allreduce_by_hand_pays_two_flushes():
    """2 x p4d (A100, EFA, Simple only), 8 B AllReduce as a tree of Simple, by hand: NCCL's base 8.4 us +
    2 x (7 NVLink steps of 4 us + one network step: 23 us and the 20 us flush) = 150.4 us (110.4 without the
    flush); NCCL's choice is unchanged."""
    topo = load_system(find_spec("p4d"), 2)
    c = _time(topo, 8, "tree", "Simple")
    # 8 bytes' own time at the links' rates is under 0.01 us
    assert c.latency == pytest.approx((8.4 + 2 * (7 * 4.0 + 23.0 + 20.0)) * US, abs=0.01 * US)
    hopper = load_system(_with(find_spec("p4d"), arch="hopper"), 2)
    assert c.tuning[0] == pytest.approx(_time(hopper, 8, "tree", "Simple").tuning[0])


def test_ib_and_a_single_node_on_ampere_keep_their_steps():
    """Over InfiniBand (dgx-a100) the flush is the HCA's own loopback read, which p2sim leaves inside NCCL's
    14 us step as before: its 2-node tree of Simple takes the same time as on a GPU that needs no flush.  Inside
    one p4d node there is no network step to flush.  (The GPU generation changes the link rates, whose time for
    8 bytes is under 0.01 us.)"""
    for name, nodes, algo in (("dgx-a100", 2, "tree"), ("p4d", 1, "ring"), ("p4d", 1, "tree")):
        spec = find_spec(name)
        ampere, hopper = load_system(spec, nodes), load_system(_with(spec, arch="hopper"), nodes)
        assert _time(ampere, 8, algo, "Simple").latency == pytest.approx(_time(hopper, 8, algo, "Simple").latency,
                                                                          abs=0.01 * US)


# ---- issue 46 item 4: cloud transports (GCP A3 High, GPUDirect-TCPX) -------------------------------------------


def test_a3_high_is_google_s_machine_as_its_recipe_runs_it():
    """a3-high: 8 H100 on NVSwitch, 4 data NICs of 200 Gb/s, one per PCIe switch of two GPUs (Google's docs);
    [nccl] as Google's TCPX recipe sets it (gpudirect-tcpx/nccl-config.yaml): Ring,Tree, Simple, a 4 MiB
    buffer, GDR at PIX, 1 thread x 4 sockets; NVLS left out (NCCL_ALGO=Ring,Tree)."""
    spec = find_spec("a3-high")
    n = spec.nccl
    assert (n.transport, n.arch, n.algorithms, n.protocols) == ("tcpx", "hopper", ("ring", "tree"), ("Simple",))
    assert (n.buffsize, n.gdr_level, n.nvls, n.socket_streams) == (4 * 2**20, "PIX", False, 4)
    topo = load_system(spec, 2)
    r = topo.router
    nics = [r.nic_of(g) for g in range(8)]
    assert len(set(nics)) == 4 and all(nics[2 * i] == nics[2 * i + 1] for i in range(4))
    assert TRANSPORT_ASSUMPTIONS["tcpx"] in spec.assumed


def test_a3_high_ring_at_8_gib_is_bounded_by_its_four_nics():
    """A 2-node ring AllReduce of 8 GiB crosses the network on every channel: each node's 4 NICs of 25 GB/s
    (200 Gb/s, Google's data sheet) carry its ring traffic, so the bus bandwidth is 4 x 25 = 100 GB/s, less
    the pipeline's fill (a published run measured 89.5 GB/s: measured / predicted about 0.9)."""
    from p2sim import api

    r = api.sweep(system=find_spec("a3-high"), nodes=2, minbytes=2**33, maxbytes=2**33, algo="ring")
    busbw = r.points[0].busbw / 1e9  # GB/s
    assert busbw == pytest.approx(4 * 25.0, rel=0.01)
    assert 0.85 < 89.5 / busbw < 0.95


def test_an_unpack_network_doubles_a_multi_node_communicators_channels_below_16():
    """NCCL v2.28.9 connect.cc: with the plugin's device NCCL_NET_DEVICE_UNPACK (the TCPX plugin), nNodes > 1 and
    fewer than 16 channels, the channels double.  a3-high: 4 NICs x 2 = 8 channels across nodes, doubled to 16;
    inside one node nothing changes; without unpack 8; a3-mega (8 NICs x 2 = 16, unpack off) keeps its 16."""
    spec = find_spec("a3-high")
    assert spec.nccl.net_unpack  # the default for tcpx
    two = Expander(load_system(spec, 2))
    host = Expander(load_system(_with(spec, net_unpack=False), 2))
    assert two.channels(tuple(range(16))) == 16 and host.channels(tuple(range(16))) == 8
    assert two.channels(tuple(range(8))) == host.channels(tuple(range(8)))  # one node: no network, no doubling
    # two GPUs a node on one NIC: 1 NIC x 2 = 2 channels, doubled to 4
    assert two.channels((0, 1, 8, 9)) == 4 and host.channels((0, 1, 8, 9)) == 2
    # NCCL_MIN_NCHANNELS comes after the doubling (connect.cc)
    assert Expander(load_system(_with(spec, min_channels=24), 2)).channels(tuple(range(16))) == 24
    mega = find_spec("a3-mega")
    assert not mega.nccl.net_unpack and Expander(load_system(mega, 2)).channels(tuple(range(16))) == 16


def test_network_unpack_is_read_checked_and_written_back():
    from p2sim.topology.toml_out import spec_to_toml
    from p2sim.util.errors import TopologyError

    from .helpers import spec_from

    spec = find_spec("a3-high")
    off = _with(spec, net_unpack=False)
    assert spec_from(spec_to_toml(off)).nccl.net_unpack is False
    assert spec_from(spec_to_toml(spec)).nccl.net_unpack is True
    assert spec_from(spec_to_toml(spec)).nccl.dynamic_chunksize == 524288
    bad = spec_to_toml(spec).replace('transport = "tcpx"', 'transport = "tcpx"\nunpack = "yes"')
    with pytest.raises(TopologyError, match="network.unpack: 'yes' must be true or false"):
        spec_from(bad)


def test_tcpx_streams_take_the_plugins_chunks():
    """The TCPX plugin hands a socket at most NCCL_DYNAMIC_CHUNK_SIZE bytes at a time (src/net_tcpx.cc): a ring
    step of 256 KiB (a3-high's 4 MiB buffer) keeps two of the recipe's 4 sockets busy at the plugin's default
    128 KiB, one at the recipe's 512 KiB: where [model] stream_rate binds, half the bus bandwidth."""
    from p2sim import api
    from p2sim.collectives.transports import stream_task_bytes

    assert stream_task_bytes("tcpx", None) == 128 * 1024 and stream_task_bytes("socket", 524288) == 65536
    spec = find_spec("a3-high")
    slow = replace(spec, rates=replace(spec.rates, stream_rate=0.5))

    def busbw(s):
        return api.sweep(system=s, nodes=2, minbytes=2**30, maxbytes=2**30, algo="ring").points[0].busbw

    default = replace(slow, nccl=replace(slow.nccl, dynamic_chunksize=None))
    assert busbw(default) / busbw(slow) == pytest.approx(2.0, rel=0.02)
