"""The configuration search: every way to train a model on a job's GPUs, ranked by step time.

It answers ``plan --model`` without ``--axes``.

The space is :func:`p2sim.workload.configurations.candidates` (tensor within the system's NVLink domain,
context, pipeline, expert, data, virtual stages, micro-batch) times the model's recompute choices
(:func:`~p2sim.workload.recompute.ladder`: none, the cheap selective modules, MLA's up projections, full; activation offloading before any recompute where it fits at no cost).  Each configuration is first *prepared* (:func:`~p2sim.studies.step_time.prepare_step`: memory per
GPU and each stage's compute, no collective): one that does not fit the GPU's memory is cut, with its
figure.  Its step's lower bound, the slowest stage's compute over the micro-batches plus the bubble of the
stages' compute plus the optimizer (:attr:`~p2sim.studies.step_time.PreparedStep.bound`), needs no
collective; the configurations are finished (collectives simulated, the overlap, the step:
:func:`~p2sim.studies.step_time.finish_step`) in order of that bound, and the search stops at the first
whose bound is above the ``top``-th best step found: no configuration after it can enter the top.  The
collectives are kept by (axes' sizes, operation, axes, size), so configurations that differ in virtual
stages, recompute or (for the data reduction) micro-batch share them.  Each configuration finished is timed
under Megatron-LM's two rank orders (:data:`ORDERS`: its default, data inside pipeline, and pipeline inside
data, Meta's Llama 3 order) and keeps the faster; the bound holds for both.

Each configuration after the best is told apart from the best by the part of the step that grew most
(compute, bubble, the exposed communication of an axis, the optimizer), and a recompute that memory forced
(the same configuration with less recompute does not fit) is named.  ``compare`` evaluates a configuration
a team chose (the Megatron-Bridge recipes, Llama 3 405B's TP 8, CP 1, PP 16) beside the search's pick: its
place among the finished ones, or how much slower than the best and why.

Examples
--------
>>> r = run_search(model="llama3-8b", system="dgx-h100", nodes=1, train="seq=4096,global_batch=16", top=3)
>>> len(r.ranked), r.ranked[0].step_seconds <= r.ranked[-1].step_seconds
(3, True)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from ..util.errors import InputError
from ..util.log import announce, progress
from ..workload import load_model
from ..workload.configurations import Configuration, candidates
from ..workload.memory import GIB
from ..workload.recompute import ladder
from ..workload.train_text import given_fields, training_of
from ..workload.training import AXES
from .jobsize import Limits, _duration, plural
from .step_workload import training_for
from .step_time import (PreparedStep, StepResult, default_placement_rows, finish_step, order_rows,
                        prepare_step, step_job, step_settings)

__all__ = ["SearchResult", "SearchCost", "Ranked", "run_search", "search_cost", "loses_because", "DEFAULT_TOP"]

DEFAULT_TOP = 5
# the placements each configuration finished is timed under: Megatron-LM's two rank orders (parallel_state.py:
# its default, and --use-tp-pp-dp-mapping's), the second with no expert axis Meta's Llama 3 order (TP, CP, PP,
# DP: data outermost; Dubey et al. 2024, section 3.3.2); its step is the faster
ORDERS = ("tp-cp-ep-dp-pp", "tp-cp-ep-pp-dp")
# The search's cost, measured on the 2-core development machine (load about 2, CPU s): preparing one
# configuration (fit, memory, each stage's compute) 0.4 ms (llama3-405b, 13,485 of them: 5.1 s); finishing one
# whose collectives are not yet kept, a collective simulated event-driven per GPU of the job at
# SIMULATED_PER_GPU (llama3-405b on 8,192 GPUs: 0.2 s for its 5 distinct collectives).  The configurations
# finished are not known before the bounds; the estimate takes FINISHED_GUESS of them, each with new collectives.
PREPARE_SECONDS = 0.4e-3
SIMULATED_PER_GPU = 5e-6
COLLECTIVES_GUESS = 5
FINISHED_GUESS = 40
# memory: the process and the system built with its collectives' structures (measured peak of the whole process,
# llama3-405b on 8,192 GPUs: 123 MiB)
BYTES_PER_GPU = 4 * 2**10
PROCESS_BYTES = 100 * 2**20


@dataclass(frozen=True)
class SearchCost:
    """The search's estimated CPU time and memory, said before it starts (:mod:`p2sim.studies.jobsize`'s limits)."""

    configurations: int
    gpus: int

    @property
    def seconds(self) -> float:
        return (self.configurations * PREPARE_SECONDS
                + min(self.configurations, FINISHED_GUESS) * len(ORDERS) * COLLECTIVES_GUESS * self.gpus
                * SIMULATED_PER_GPU)

    @property
    def memory(self) -> float:
        return PROCESS_BYTES + self.gpus * BYTES_PER_GPU

    def text(self) -> str:
        return (f"{self.configurations:,} configurations prepared, up to {FINISHED_GUESS} finished with their "
                f"collectives simulated over {self.gpus:,} GPUs under {len(ORDERS)} rank orders")

    def brief(self) -> str:
        cpu = _duration(self.seconds)
        return f"estimated {'' if cpu.startswith('under') else 'about '}{cpu} of CPU"


def search_cost(configurations: int, gpus: int) -> SearchCost:
    """The estimate for ``configurations`` (candidates x recompute choices) on ``gpus`` GPUs."""
    return SearchCost(configurations, gpus)


@dataclass(frozen=True)
class Ranked:
    """A finished configuration: its step, and the configuration it was prepared from."""

    configuration: Configuration
    recompute: str
    step: StepResult
    forced: str | None = None  # the recompute memory forced: "selective needs 90.1 GiB" (None: chosen)
    order: str = ORDERS[0]  # the Megatron-LM rank order of its placement (the faster of ORDERS)

    @property
    def step_seconds(self) -> float:
        return self.step.step_seconds

    @property
    def label(self) -> str:
        offload = self.step.training.get("offload", 0)
        return f"{self.configuration.label} recompute={self.recompute}" + (f" offload={offload}" if offload else "")

    def parts(self) -> dict[str, float]:
        """The step by part: compute, bubble, exposed communication by axis, optimizer (they sum to the step)."""
        s = self.step
        return {"compute": s.compute_seconds, "bubble": s.bubble_seconds,
                **{f"exposed {a}": v for a, v in s.exposed_comm_seconds.items()}, "optimizer": s.optimizer_seconds}

    def to_json(self) -> dict[str, Any]:
        return {"label": self.label, "rank_order": self.order, "axes": dict(self.step.axes),
                "virtual_stages": self.configuration.virtual_stages,
                "micro_batch": self.configuration.micro_batch, "recompute": self.recompute,
                "recompute_forced_by_memory": self.forced, **self.step.to_json()}


def loses_because(entry: Ranked, best: Ranked) -> str:
    """Why ``entry``'s step is longer than ``best``'s: the part that grew most, and a recompute memory forced."""
    if entry is best:
        return "the best"
    if entry.step_seconds == best.step_seconds:
        return "as fast as the best"
    if entry.step_seconds < best.step_seconds:  # a compared configuration outside the space searched
        return f"{100 * (1 - entry.step_seconds / best.step_seconds):.1f} % faster than the best searched"
    mine, theirs = entry.parts(), best.parts()
    part = max(mine, key=lambda k: (mine[k] - theirs[k], k))
    grew = mine[part] - theirs[part]
    why = f"{part} {_ms(grew)} longer ({_ms(theirs[part])} -> {_ms(mine[part])})"
    gain = min(mine, key=lambda k: (mine[k] - theirs[k], k))
    if mine[gain] < theirs[gain]:
        why += f", though its {gain} is {_ms(theirs[gain] - mine[gain])} shorter"
    if part == "compute" and entry.recompute != "none":
        why += f", recompute={entry.recompute}" + (f" forced by memory ({entry.forced})" if entry.forced else "")
    slower = entry.step_seconds / best.step_seconds - 1.0
    return f"{100 * slower:.1f} % slower: {why}"


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3g} ms" if seconds < 1 else f"{seconds:.3g} s"


@dataclass(frozen=True)
class SearchResult:
    """The configurations ranked by step time (the ``top`` best), and what the search cut and why."""

    model: str
    system: str
    gpus: int
    training: dict[str, Any]
    ranked: tuple[Ranked, ...]
    considered: int  # configurations x recompute choices
    cut_memory: int
    cut_bound: int
    cut_recompute: int  # a heavier recompute of a configuration that fits with a lighter one (only slower)
    finished: int
    tightest_unfit: str | None  # the unfit configuration nearest to fitting, with its figure
    compared: Ranked | None = None
    compared_place: int | None = None  # 1-based place among the finished (unfinished ones may also be faster);
    # None: below every one of them

    @property
    def best(self) -> Ranked:
        return self.ranked[0]

    def to_json(self) -> dict[str, Any]:
        best = self.best
        return {"model": self.model, "system": self.system, "gpus": self.gpus, "training": dict(self.training),
                "considered": self.considered, "cut_by_memory": self.cut_memory, "cut_by_bound": self.cut_bound,
                "cut_by_lighter_recompute": self.cut_recompute,
                "finished": self.finished, "tightest_unfit": self.tightest_unfit,
                "ranked": [{**r.to_json(), "loses_because": loses_because(r, best)} for r in self.ranked],
                "compared": None if self.compared is None else {
                    **self.compared.to_json(), "place": self.compared_place,
                    "loses_because": loses_because(self.compared, best)}}


def _compare_of(text: str) -> tuple[dict[str, int], str]:
    """``--compare``'s axes and its training keys: ``tensor=8,pipeline=16,data=64,vp=8,mbs=1,recompute=full``."""
    alias = {"tp": "tensor", "cp": "context", "pp": "pipeline", "dp": "data", "ep": "expert"}
    axes: dict[str, int] = {}
    train: list[str] = []
    for part in (p.strip() for p in text.split(",") if p.strip()):
        key, _, value = (s.strip() for s in part.partition("="))
        name = alias.get(key.lower(), key.lower())
        if name in AXES:
            try:
                axes[name] = int(value)
            except ValueError:
                raise InputError(f"compare: {part!r}: the size should be an integer") from None
        else:
            train.append(part)
    if not axes:
        raise InputError(f"compare: {text!r} names no axis (tensor, context, pipeline, expert, data)")
    return axes, ",".join(train)


def run_search(*, model: Any, system: Any, nodes: int | None = None, gpus: int | None = None,
               train: str | None = None, top: int = DEFAULT_TOP, compare: str | None = None,
               engine: str = "des", limits: Limits | None = None) -> SearchResult:
    """The ``top`` fastest configurations of ``model`` on the job (see the module).

    ``train``: ``--train``'s text; its global batch and sequence (a preset's published ones where not given),
    dtypes, ``zero`` and ``dtype=fp8`` are kept; micro-batch, virtual stages and recompute are searched (a
    ``recompute=`` given fixes it).  ``compare``: a configuration to place beside the pick.

    Raises
    ------
    InputError
        No global batch, nothing that divides, nothing that fits the memory (with the nearest figure), an
        estimate above the limits, or a ``compare`` that does not fit.
    """
    if isinstance(top, bool) or not isinstance(top, int) or top < 1:
        raise InputError(f"top: {top!r} should be a positive integer")
    spec_model = load_model(model)
    text, extra = step_settings(train)
    extra = extra.for_model(spec_model.name, spec_model.is_moe)
    if extra.offload:
        raise InputError("train: offload: the search offloads activations itself, where a configuration without "
                         "pipeline parallelism needs it to fit and its copies hide under the compute; leave it out")
    training, _ = training_for(model, text)  # a preset's published sequence and batch where not given
    recomputes = (extra.recompute,) if "recompute" in (train or "") else ladder(spec_model)
    job = step_job(spec_model, system, nodes, gpus, engine=engine)
    tensor_limit = job.used  # a node's GPUs (an NVL72 rack's): the NVLink domain the tensor axis stays in
    space = candidates(spec_model, job.gpus, training, tensor_limit=tensor_limit)
    cost = search_cost(len(space) * len(recomputes), job.gpus)
    announce(f"{plural(len(space), 'configuration')} x {len(recomputes)} recompute choices of {spec_model.name} on "
             f"{job.gpus:,} GPUs; {cost.brief()}")
    (limits or Limits()).check_cost(cost, f"the search of {spec_model.name} on {job.gpus:,} GPUs",
                                    "fewer --nodes, a fixed recompute= in --train,")
    capacity = job.topo.spec.nccl.memory_gib
    prepared: list[tuple[float, int, Configuration, str, PreparedStep]] = []
    unfit: list[tuple[float, str]] = []
    fits: dict[tuple[str, str], float] = {}
    dominated = 0  # heavier recompute of a configuration a lighter one fits
    with progress("preparing configurations", len(space)) as advance:
        for i, cfg in enumerate(space):
            for rc in recomputes:
                own = extra.where_allowed(cfg.axes.get("tensor", 1), cfg.training.sequence_parallel)
                prep = prepare_step(job, cfg.axes, cfg.training, replace(own, recompute=rc))
                fits[(cfg.label, rc)] = prep.memory.total / GIB
                if not prep.fits and rc == "none":
                    prep = _offloaded(job, cfg, own) or prep
                if prep.fits:
                    prepared.append((prep.bound, len(prepared), cfg, rc, prep))
                    # more recompute of the same configuration only adds compute: the lightest that fits wins
                    dominated += len(recomputes) - 1 - recomputes.index(rc)
                    break
                unfit.append((prep.memory.total / GIB, f"{cfg.label} recompute={rc}"))
            advance(1)
    if not prepared:
        least = min(unfit)
        raise InputError(f"search: no configuration of {spec_model.name} fits the {capacity:.1f} GiB of "
                         f"{job.topo.spec.nccl.gpu_model or 'the GPUs'}: the least, {least[1]}, needs {least[0]:.1f} GiB "
                         "per GPU; more GPUs, zero=3 or a smaller global batch")
    prepared.sort(key=lambda x: (x[0], x[1]))
    done: list[Ranked] = []
    kept: list[float] = []  # the finished steps, ascending
    uncontended: dict[int, PreparedStep] = {}  # the finished left without their contention (beyond the top)
    finished = 0
    for bound, _, cfg, rc, prep in prepared:
        if len(kept) >= top and bound > kept[top - 1]:
            break
        # contention only lengthens a step: one whose step without it is above the k-th best is not in the top
        result, order = _placed(prep, kept[top - 1] if len(kept) >= top else math.inf)
        finished += 1
        done.append(Ranked(cfg, rc, result, _forced(fits, cfg.label, rc, capacity, recomputes), order))
        if not result.contended:
            uncontended[id(done[-1])] = prep
        kept = sorted(kept + [result.step_seconds])
    done.sort(key=lambda r: (r.step_seconds, r.label))
    compared, place = None, None
    if compare:
        compared = _compared(job, spec_model, training, extra, compare, fits, capacity)
        # the finished steps left without their contention that may be below the compared one: with it, where
        # it may still be (an order whose step without it is above the compared one is not ahead of it either)
        def refinished(r: Ranked) -> Ranked:  # its step with contention, and the rank order that gives it
            result, order = _placed(uncontended[id(r)], compared.step_seconds)
            return replace(r, step=result, order=order)

        done = sorted((r if r.step.contended or r.step_seconds >= compared.step_seconds else refinished(r)
                       for r in done), key=lambda r: (r.step_seconds, r.label))
        place = next((i + 1 for i, r in enumerate(done) if compared.step_seconds <= r.step_seconds), None)
    tightest = None
    if unfit:
        gib, label = min(unfit)
        tightest = f"{label} needs {gib:.1f} GiB per GPU, more than {capacity:.1f} GiB"
    announce(f"{finished} of {len(prepared)} fitting configurations finished (collectives simulated); "
             f"{len(prepared) - finished} cut by their lower bound, {len(unfit)} by memory, {dominated} by a lighter "
             "recompute that fits")
    settings = {"seq_length": training.seq_length, "global_batch": training.global_batch,
                "dtype": "fp8" if extra.fp8 else training.param_dtype, "data_parallel": training.data_parallel,
                "recompute": list(recomputes), "tp_overlap": extra.tp_overlap, "dispatcher": extra.dispatcher}
    return SearchResult(spec_model.name, job.topo.spec.name, job.gpus, settings, tuple(done[:top]),
                        len(space) * len(recomputes), len(unfit), len(prepared) - finished, dominated, finished, tightest,
                        compared, place)


def _offloaded(job, cfg: Configuration, extra) -> PreparedStep | None:
    """The configuration with the fewest layers' activations offloaded to host memory that fit, where Megatron-Core
    runs it (no pipeline) and its copies hide under the compute: then it costs nothing, so it is lighter than any
    recompute (``None`` otherwise: the recompute rungs follow)."""
    if cfg.axes.get("pipeline", 1) > 1 or job.host_rate <= 0:
        return None
    prep = prepare_step(job, cfg.axes, cfg.training, replace(extra, recompute="none", offload="auto"))
    return prep if prep.fits and prep.offload_exposed == 0.0 else None


def _placed(prep: PreparedStep, limit: float = math.inf) -> tuple[StepResult, str]:
    """The configuration's step under the faster of Megatron-LM's rank orders, and that order (ties: the default);
    ``limit``: :func:`finish_step`'s ``contention_limit``."""
    job, sizes = prep.job, prep.sizes
    best, order = finish_step(prep, contention_limit=limit), ORDERS[0]
    default = default_placement_rows(job.hierarchy, sizes)
    for other in ORDERS[1:]:
        names, matrix, _ = order_rows(job.hierarchy, sizes, other)
        if matrix is None or (names, matrix) == default[:2]:
            continue  # no such placement, or the same as the default's
        # an order whose step without contention is above the best's loses to it: its contention is not needed
        result = finish_step(prep, (names, matrix), contention_limit=min(limit, best.step_seconds))
        if result.step_seconds < best.step_seconds:
            best, order = result, other
    return best, order


def _forced(fits: Mapping[tuple[str, str], float], label: str, recompute: str, capacity: float | None,
            rungs: tuple[str, ...]) -> str | None:
    """The recompute memory forced: the lighter choices of the ``rungs`` need more than the GPU has (with the
    nearest's figure)."""
    lighter = rungs[:rungs.index(recompute)] if recompute in rungs else ()
    if not lighter or capacity is None:
        return None
    needs = [(rc, fits.get((label, rc))) for rc in lighter]
    if any(g is None or g <= capacity for _, g in needs):
        return None
    rc, gib = needs[-1]
    return f"recompute={rc} needs {gib:.1f} GiB"


def _compared(job, spec_model, training, extra, text: str, fits, capacity) -> Ranked:
    """The configuration ``--compare`` names, finished as the search's are (memory checked)."""
    axes, train = _compare_of(text)
    sizes = {a: axes.get(a, 1) for a in AXES}
    if math.prod(sizes.values()) != job.gpus:
        raise InputError(f"compare: {' x '.join(str(sizes[a]) for a in AXES)} = {math.prod(sizes.values())} GPUs, "
                         f"but the job has {job.gpus}")
    given_text, given_extra = step_settings(train)
    keys = given_fields(given_text)
    base = {"seq_length": training.seq_length, "global_batch": training.global_batch,
            "param_dtype": training.param_dtype, "grad_dtype": training.grad_dtype,
            "data_parallel": training.data_parallel, "sequence_parallel": sizes["tensor"] > 1}
    t = training_of(given_text, {k: v for k, v in base.items() if k not in keys})
    if t.virtual_stages > 1 and t.schedule != "interleaved":
        t = replace(t, schedule="interleaved")
    # the recompute given, else the least that fits (as a team picks it)
    rungs = ladder(spec_model)
    choices = (given_extra.recompute,) if "recompute" in train else rungs
    cfg = Configuration(dict(sizes), t)
    fits = dict(fits)
    preps = {}
    own = extra.where_allowed(sizes["tensor"], t.sequence_parallel)
    for r in dict.fromkeys(rungs + choices):
        preps[r] = prepare_step(job, sizes, t, replace(own, recompute=r))
        fits[(cfg.label, r)] = preps[r].memory.total / GIB
    # offload= given (off and 0 too) is the compared configuration's own, as given (Megatron-Core's checks)
    offload_given = any(p.partition("=")[0].strip().lower() == "offload" for p in train.split(","))
    if given_extra.offload:
        rc = given_extra.recompute
        prep = prepare_step(job, sizes, t, replace(own, recompute=rc, offload=given_extra.offload))
    else:
        if "none" in choices and not preps["none"].fits and not offload_given:  # offloading first, where it fits
            preps["none"] = _offloaded(job, cfg, own) or preps["none"]          # and costs nothing
        rc = next((r for r in choices if preps[r].fits), choices[-1])
        prep = preps[rc]
    if not prep.fits:
        how = f"recompute={rc}" + (f", offload={given_extra.offload}" if given_extra.offload else "")
        raise InputError(f"compare: {text}: needs {prep.memory.total / GIB:.1f} GiB per GPU with {how}, "
                         f"more than the GPU's {capacity:.1f} GiB")
    result, order = _placed(prep)
    return Ranked(cfg, rc, result, _forced(fits, cfg.label, rc, capacity, rungs), order)

