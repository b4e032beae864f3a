from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from p2sim.collectives.pipeline import chunk_size, chunking, in_flight, step_cap, window
from p2sim.topology.settings import NcclSettings

N = NcclSettings()


def test_nccls_largest_chunks():
    assert chunking("ring", "Simple", "AllReduce", N, 2) == 2 * 2**20  # 4 steps of 512 KiB
    assert chunking("ring", "Simple", "Broadcast", N, 2) == 2**19
    assert chunking("tree", "Simple", "AllReduce", N, 2) == 2**19
    assert chunking("ring", "LL", "AllReduce", N, 2) == 32768 and chunking("tree", "LL128", "AllReduce", N, 2) == 576000
    assert chunking("nvls", "Simple", "AllReduce", N, 1) == 131072
    assert chunking("nvls_tree", "Simple", "AllReduce", N, 4) == 65536  # nvls.cc: 64 KiB from 4 nodes
    big = NcclSettings(buffsize=8 * 2**20, nvls_chunksize=2**19, nvlstree_max_chunksize=2**19)  # AWS p5
    assert chunking("ring", "Simple", "AllReduce", big, 2) == 4 * 2**20 and chunking("nvls_tree", "Simple", "AllReduce", big, 8) == 2**19


def test_chunks_follow_the_size():
    # a ring cuts a channel's bytes into one chunk per rank
    assert chunk_size("ring", "Simple", "AllReduce", 2**20, 16, N, 1) == 65536
    assert chunk_size("ring", "Simple", "AllReduce", 2**30, 16, N, 1) == 2 * 2**20
    # NVLS: 128 KiB, cut to 64, 32, 16 KiB as a channel holds fewer chunks per head (enqueue.cc)
    assert chunk_size("nvls", "Simple", "AllReduce", 2**26, 1, N, 8) == 131072
    assert chunk_size("nvls", "Simple", "AllReduce", 2**24, 1, N, 8) == 65536
    assert chunk_size("nvls", "Simple", "AllReduce", 2**21, 1, N, 8) == 32768
    assert chunk_size("nvls", "Simple", "AllReduce", 2**18, 1, N, 8) == 16384
    assert chunk_size("tree", "Simple", "AllReduce", 1000, 16, N, 1) == 1000  # never more than the bytes


def test_a_window_binds_small_chunks_over_a_slow_step():
    # ring Simple: two chunks of two slices in flight; a round trip of two steps and a slice
    assert in_flight("ring", "Simple", "AllReduce", 65536) == (131072.0, 32768.0)
    w = window("ring", "Simple", "AllReduce", 65536, 14e-6, 12.5e9)
    assert math.isclose(w, 131072 / (28e-6 + 32768 / 12.5e9))  # by hand: 4.28 GB/s
    assert window("ring", "Simple", "AllReduce", 2**21, 14e-6, 12.5e9) > 12.5e9  # largest chunks: the link binds
    # a pipeline whose chunks all fit in flight never waits
    assert window("tree", "Simple", "AllReduce", 65536, 14e-6, 12.5e9, channel_bytes=65536) == math.inf
    assert window("tree", "Simple", "AllReduce", 65536, 0.0, 12.5e9) == math.inf


def test_step_cost_is_simples_only():
    assert step_cap("ring", "LL", "AllReduce", 4096, 1e-6, 1e10) == math.inf
    assert step_cap("ring", "Simple", "AllReduce", 65536, 0.0, 1e10) == math.inf
    assert math.isclose(step_cap("tree", "Simple", "AllReduce", 65536, 1e-6, 1e10), 65536 / (1e-6 + 65536 / 1e10))


@given(st.integers(1, 2**22), st.floats(1e-7, 1e-4), st.floats(1e8, 1e12))
def test_the_window_grows_with_the_chunk_and_shrinks_with_the_step(chunk, sigma, beta):
    w = window("ring", "Simple", "AllReduce", chunk, sigma, beta)
    assert window("ring", "Simple", "AllReduce", chunk * 2, sigma, beta) > w
    assert window("ring", "Simple", "AllReduce", chunk, sigma * 2, beta) < w


def test_a_wire_counts_once_each_way_in_a_slots_round_trip():
    # by hand: ring Simple, 2 MiB chunks (4 MiB in flight, 1 MiB slices), a 14 us step at each end and a
    # 10 us wire crossed by the data and by the clear-to-send: 4 MiB / (28 + 20 us + 1 MiB / 12.5 GB/s)
    w = window("ring", "Simple", "AllReduce", 2**21, 14e-6, 12.5e9, wire=10e-6)
    assert math.isclose(w, 4 * 2**20 / (28e-6 + 20e-6 + 2**20 / 12.5e9))
    assert window("tree", "Simple", "AllReduce", 65536, 0.0, 12.5e9, wire=5e-6) < math.inf  # a wire alone binds


def test_nvls_tree_runs_every_heads_tree_on_every_channel():
    from p2sim.collectives.algorithms import algorithm

    # connect.cc connectNvls: every NVLS channel gets the head's tree; p2sim's flow per head counts 2 of 16
    assert algorithm("nvls_tree").connections(2, 16) == 16
    assert algorithm("ring").connections(2, 16) == 2 and algorithm("tree").connections(2, 16) == 2
