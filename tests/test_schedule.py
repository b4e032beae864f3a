"""The pipeline schedule: Megatron-LM's stage splits, the 1F1B and interleaved bubbles (hand-computed), and
the invariant that more stages never shrink the bubble at fixed micro-batches."""

import pytest
from hypothesis import given, settings, strategies as st

from p2sim.util.errors import InputError
from p2sim.workload.schedule import bubble_fraction, bubble_seconds, chunk_layers, pipeline_seconds, stage_split


def test_even_layers_split_evenly():
    assert stage_split(80, 8, 5) == tuple((2,) * 5 for _ in range(8))
    assert chunk_layers(32, 4) == (8, 8, 8, 8)


def test_embedding_and_loss_count_as_a_layer_when_that_divides():
    # Llama 3 405B: 126 + 2 = 128 = 16 x 8 (Megatron-LM's account_for_embedding/loss_in_pipeline_split)
    assert chunk_layers(126, 16) == (7,) + (8,) * 14 + (7,)
    # interleaved: chunk j of stage r is slice j x p + r
    split = stage_split(126, 8, 8)
    assert split[0] == (1,) + (2,) * 7 and split[7] == (2,) * 7 + (1,)


def test_first_and_last_given():
    assert chunk_layers(61, 16, first=3, last=2) == (3,) + (4,) * 14 + (2,)
    with pytest.raises(InputError, match="first 2 and last 2 stage layers leave 57"):
        chunk_layers(61, 16, first=2, last=2)


def test_deepseek_61_layers_on_16_stages():
    c = chunk_layers(61, 16)
    assert sum(c) == 61 and max(c) == 4 and len(c) == 16


def test_1f1b_and_interleaved_times_by_hand():
    # 4 equal stages of 1 s, 8 micro-batches: (m + p - 1) t = 11 s; bubble 3 s = (p-1)/m of 8 s
    assert pipeline_seconds([1.0] * 4, 8) == 11.0
    assert bubble_seconds([1.0] * 4) == 3.0 == 8 * bubble_fraction(4, 8)
    # interleaved, v = 2: the bubble halves
    assert pipeline_seconds([1.0] * 4, 8, 2) == 9.5
    # one slow stage sets the steady state; the others fill and drain
    assert pipeline_seconds([1.0, 2.0, 1.0], 4) == 4 * 2.0 + 2.0


@settings(max_examples=60, deadline=None)
@given(layers=st.integers(8, 128), p=st.integers(1, 8), m=st.integers(1, 64), v=st.integers(1, 4))
def test_more_stages_never_shrink_the_bubble(layers, p, m, v):
    """Work per layer fixed: a deeper pipeline's bubble (fill and drain) is never smaller, at fixed micro-batches."""
    def bubble(stages):
        per_stage = [sum(c) * 1.0 for c in stage_split(layers, stages, v)]
        return pipeline_seconds(per_stage, m, v) - m * max(per_stage)
    if layers < 2 * (p + 1) * v:
        return
    assert bubble(p + 1) >= bubble(p) - 1e-9
    assert bubble_fraction(p + 1, m, v) > bubble_fraction(p, m, v)
