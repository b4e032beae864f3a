"""The pipeline schedule: how a model's layers split over stages and virtual chunks, and the step's bubble.

Pure functions of counts and times, no hardware:

* :func:`stage_split` -- the layers of each virtual chunk of each stage as Megatron-LM splits them:
  evenly when ``pipeline x virtual`` divides the layers; else with the embedding and the loss counted as
  a layer each (``--account-for-embedding-in-pipeline-split``, ``--account-for-loss-in-pipeline-split``,
  Megatron-LM ``megatron/core/transformer/transformer_block.py``, ``get_num_layers_to_build``), as
  Llama 3 405B's 126 layers run on 16 stages; else the first and last stage given their own counts
  (``--decoder-first-pipeline-num-layers`` / ``--decoder-last-pipeline-num-layers``) and the rest
  even; else the layers spread as evenly as they go, the extra ones on the middle chunks.
* :func:`pipeline_seconds` -- one step of ``m`` micro-batches through stages of per-micro-batch times
  ``t_i`` (forward + backward of all the stage's chunks): ``m x max t_i + (sum t_i - max t_i) / v``.  For
  equal stages it is 1F1B's ``(m + p - 1) t`` and the interleaved schedule's ``m t + (p - 1) t / v``
  (Narayanan et al. 2021, sections 2.2.1 and 2.2.2: bubble ``(p - 1) / (v m)`` of the ideal).  The
  slowest stage sets the steady state; the others' fill and drain is the bubble.

Examples
--------
>>> stage_split(126, 16)[:2], stage_split(126, 16)[-1]     # 405B: embedding and loss count as a layer
(((7,), (8,)), (7,))
>>> pipeline_seconds([1.0, 1.0, 1.0, 1.0], 8, 1)            # (m + p - 1) t
11.0
>>> bubble_fraction(4, 8, 2)                                # (p - 1) / (v m)
0.1875
"""

from __future__ import annotations

from collections.abc import Sequence

from ..util.errors import InputError

__all__ = ["stage_split", "pipeline_seconds", "bubble_seconds", "bubble_fraction", "chunk_layers"]


def stage_split(layers: int, pipeline: int, virtual: int = 1, first: int | None = None,
                last: int | None = None) -> tuple[tuple[int, ...], ...]:
    """The layers of each stage's virtual chunks: ``out[stage][chunk]``; chunk ``j`` of stage ``r`` holds the
    model's ``(j x pipeline + r)``-th slice (Megatron-LM's interleaving).

    Raises
    ------
    InputError
        Fewer layers than chunks that can hold them, or first/last counts that leave a split no
        stage can take evenly.
    """
    chunks = pipeline * virtual
    flat = _flat_split(layers, chunks, first, last)
    return tuple(tuple(flat[j * pipeline + r] for j in range(virtual)) for r in range(pipeline))


def chunk_layers(layers: int, pipeline: int, virtual: int = 1, first: int | None = None,
                 last: int | None = None) -> tuple[int, ...]:
    """The layers of each virtual chunk in model order (the model's slices, first to last)."""
    return _flat_split(layers, pipeline * virtual, first, last)


def _flat_split(layers: int, chunks: int, first: int | None, last: int | None) -> tuple[int, ...]:
    if first is not None or last is not None:
        a = 0 if first is None else first
        b = 0 if last is None else last
        rest = layers - a - b
        inner = chunks - (first is not None) - (last is not None)
        if rest < 0 or (inner and rest % inner) or (not inner and rest):
            raise InputError(f"pipeline: first {first} and last {last} stage layers leave {rest} layers, not a "
                             f"multiple of the {inner} other chunks (Megatron-LM's --decoder-first/last-pipeline-num-layers)")
        mid = [rest // inner] * inner if inner else []
        return tuple(([a] if first is not None else []) + mid + ([b] if last is not None else []))
    if layers % chunks == 0:
        return (layers // chunks,) * chunks
    if chunks >= 2 and (layers + 2) % chunks == 0 and layers + 2 >= 2 * chunks:
        # the embedding and the loss counted as a layer each: the first and last chunk one layer fewer
        each = (layers + 2) // chunks
        return (each - 1,) + (each,) * (chunks - 2) + (each - 1,)
    if layers < chunks - 2:
        raise InputError(f"pipeline: {layers} layers cannot fill {chunks} pipeline chunks (pipeline x virtual stages)")
    # as even as it goes, with the embedding and the loss each counted as a layer: the extra layers on the
    # middle chunks (a pipeline layout such as Megatron-Bridge's for DeepSeek-V3's 61 layers)
    total = layers + 2
    base, extra = divmod(total, chunks)
    out = [base] * chunks
    order = sorted(range(chunks), key=lambda i: (i in (0, chunks - 1), abs(i - (chunks - 1) / 2)))
    for i in order[:extra]:
        out[i] += 1
    out[0] -= 1
    out[-1] -= 1
    if min(out) < 0:
        raise InputError(f"pipeline: {layers} layers cannot fill {chunks} pipeline chunks (pipeline x virtual stages)")
    return tuple(out)


def pipeline_seconds(stage_seconds: Sequence[float], micro_batches: int, virtual: int = 1) -> float:
    """One step's compute time through the pipeline: ``m x max t_i + (sum t_i - max t_i) / v``.

    ``stage_seconds[i]`` is stage ``i``'s forward and backward of one micro-batch over all its chunks.
    """
    if not stage_seconds:
        raise InputError("pipeline: no stages")
    slowest = max(stage_seconds)
    return micro_batches * slowest + bubble_seconds(stage_seconds, virtual)


def bubble_seconds(stage_seconds: Sequence[float], virtual: int = 1) -> float:
    """The fill and drain of the pipeline: ``(sum t_i - max t_i) / v``: ``(p - 1) t / v`` for equal stages."""
    return (sum(stage_seconds) - max(stage_seconds)) / virtual


def bubble_fraction(pipeline: int, micro_batches: int, virtual: int = 1) -> float:
    """Narayanan et al. 2021's bubble fraction of equal stages: ``(p - 1) / (v m)``."""
    return (pipeline - 1) / (virtual * micro_batches)
