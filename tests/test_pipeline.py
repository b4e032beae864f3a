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
