"""The configuration search (p2sim.studies.config_search): hand-checkable picks, the bound never cuts the
best, determinism, the estimate and the command line."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from p2sim.studies.config_search import SearchCost, _offloaded, loses_because, run_search
from p2sim.studies.jobsize import Limits
from p2sim.studies.step_time import RECOMPUTE, finish_step, prepare_step, step_job, step_settings
from p2sim.util.errors import InputError
from p2sim.workload.configurations import candidates
from p2sim.workload.model_spec import ModelSpec
from p2sim.workload.recompute import ladder
from p2sim.workload.train_text import training_of

# a model small enough that every GPU holds it whole: nothing to gain by splitting it
TINY = ModelSpec(name="tiny", source="test", hidden_size=1024, num_layers=4, num_attention_heads=8,
                 num_key_value_heads=8, intermediate_size=4096, vocab_size=32000)
TRAIN = "seq=2048,global_batch=64"


def test_tiny_model_trains_data_parallel_with_the_largest_micro_batch():
    r = run_search(model=TINY, system="dgx-h100", nodes=1, train=TRAIN, top=3)
    best = r.best
    # no tensor communication, no bubble, no recompute, and the largest GEMMs: 64 sequences / 8 ranks
    assert best.step.axes["tensor"] == 1 and best.step.axes["pipeline"] == 1
    assert best.recompute == "none" and best.configuration.micro_batch == 8
    assert best.step.bubble_seconds == 0.0 and best.step.exposed_comm_seconds["tensor"] == 0.0
    assert [x.step_seconds for x in r.ranked] == sorted(x.step_seconds for x in r.ranked)
    assert r.considered == r.cut_memory + r.cut_recompute + r.cut_bound + r.finished


def _exhaustive(model, system, nodes, train):
    """Every configuration x recompute that fits, finished: (step, bound, label), the lightest recompute that fits
    of each configuration only -- after checking that a heavier one is never faster (the search cuts them)."""
    text, extra = step_settings(train)
    training = training_of(text)
    job = step_job(model, system, nodes, None)
    out = []
    for cfg in candidates(job.model, job.gpus, training, tensor_limit=job.used):
        mine = []
        for rc in ladder(job.model):
            prep = prepare_step(job, cfg.axes, cfg.training, replace(extra, recompute=rc))
            if rc == "none" and not prep.fits:  # activation offloading first, where it fits at no cost
                prep = _offloaded(job, cfg, extra) or prep
            if prep.fits:
                mine.append((finish_step(prep).step_seconds, prep.bound, f"{cfg.label} recompute={rc}"))
        assert all(mine[0][0] <= m[0] for m in mine[1:]), mine  # more recompute never shortens the step
        assert all(bound <= step for step, bound, _ in mine)  # the bound is below every step
        out += mine[:1]  # the search keeps the lightest recompute that fits
    return out


@pytest.mark.parametrize("model,train", [(TINY, TRAIN), ("llama3-8b", "seq=4096,global_batch=16")])
def test_bound_never_cuts_the_best(model, train):
    every = _exhaustive(model, "dgx-h100", 1, train)
    assert all(bound <= step for step, bound, _ in every)  # the bound is a lower bound of every step
    top = 4
    r = run_search(model=model, system="dgx-h100", nodes=1, train=train, top=top)
    exact = sorted(step for step, _, _ in every)[:top]
    assert [x.step_seconds for x in r.ranked] == exact
    assert r.cut_bound > 0  # and it cut something


def test_deterministic():
    a = run_search(model="llama3-8b", system="dgx-h100", nodes=1, train="seq=4096,global_batch=16", top=3)
    b = run_search(model="llama3-8b", system="dgx-h100", nodes=1, train="seq=4096,global_batch=16", top=3)
    assert json.dumps(a.to_json(), sort_keys=True) == json.dumps(b.to_json(), sort_keys=True)


def test_compare_and_why():
    r = run_search(model=TINY, system="dgx-h100", nodes=1, train=TRAIN, top=2,
                   compare="tensor=8,data=1,mbs=1")
    c = r.compared
    assert c is not None and c.step.axes["tensor"] == 8 and c.recompute == "none"
    assert c.step_seconds > r.best.step_seconds
    assert "slower" in loses_because(c, r.best)
    with pytest.raises(InputError, match="compare: .* GPUs, but the job has 8"):
        run_search(model=TINY, system="dgx-h100", nodes=1, train=TRAIN, compare="tensor=4")


def test_memory_forced_recompute_is_named():
    # llama3-70b on 8 nodes: tensor 4, pipeline 2 fits only with full recompute (108 GiB without)
    r = run_search(model="llama3-70b", system="dgx-h100", nodes=8, train="global_batch=128,zero=1", top=1,
                   compare="tensor=4,pipeline=2,data=8,mbs=1")
    assert r.compared.recompute != "none" and r.compared.forced and "needs" in r.compared.forced
    assert r.tightest_unfit and "GiB per GPU" in r.tightest_unfit


def test_estimate_refuses_past_the_limit():
    with pytest.raises(InputError, match="job: the search of tiny on 8 GPUs would take about"):
        run_search(model=TINY, system="dgx-h100", nodes=1, train=TRAIN, limits=Limits(seconds=1e-6))
    cost = SearchCost(13485, 8192)
    assert 5 < cost.seconds < 60  # the 405B search on 8,192 GPUs is announced at well under the limit


def test_bad_inputs():
    with pytest.raises(InputError, match="top"):
        run_search(model=TINY, system="dgx-h100", nodes=1, train=TRAIN, top=0)
    with pytest.raises(InputError, match="global batch"):
        run_search(model=TINY, system="dgx-h100", nodes=1, train="seq=2048")


def test_cli(capsys):
    from p2sim.cli.main import main

    assert main(["plan", "--model", "llama3-8b", "--system", "dgx-h100", "--nodes", "1",
                 "--train", "seq=4096,global_batch=16", "--top", "2", "-q"]) == 0
    out = capsys.readouterr().out
    assert "configuration" in out and "\n1  tensor=" in out and "\n2: " in out
    assert main(["plan", "--model", "llama3-8b", "--system", "dgx-h100", "--nodes", "1",
                 "--train", "seq=4096,global_batch=16", "--top", "1", "--json", "-q"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert len(doc["ranked"]) == 1 and doc["ranked"][0]["loses_because"] == "the best"
    assert main(["plan", "--model", "llama3-8b", "--system", "dgx-h100", "--nodes", "1", "--out", "x"]) != 0
    assert "--out is for a plan of given --axes" in capsys.readouterr().err


@pytest.mark.parametrize("argv, says", [
    (["--top", "0"], "top: "),
    (["--top", "2", "--axes", "data=8"], "top: --top and --compare are the configuration search's"),
    (["--compare", "tensor=3,data=2"], "compare: "),
    (["--compare", "vp=2"], "compare: 'vp=2' names no axis"),
    (["--train", "seq=4096,global_batch=16,micro=2"], "train: 'micro' is not a training setting"),
    (["--emit", "megatron"], "emit: --emit is for a plan of given --axes"),
    (["--reduction", "data:1GiB"], "reduction: --reduction is for a plan of given --axes"),
])
def test_cli_refuses_bad_search_inputs(capsys, argv, says):
    from p2sim.cli.main import main

    base = ["plan", "--model", "llama3-8b", "--system", "dgx-h100", "--nodes", "1"]
    if "--train" not in argv:
        base += ["--train", "seq=4096,global_batch=16"]
    rc = main(base + argv)
    err = [line for line in capsys.readouterr().err.splitlines() if not line.startswith("p2sim plan: ") or "error" in line]
    assert rc == 2 and len(err) == 1 and says in err[0], err


def test_plan_with_axes_ranks_placements_by_step_time():
    import p2sim

    r = p2sim.plan(model="llama3-8b", system="dgx-h100", axes="data=2,pipeline=2,tensor=4",
                   train="seq=8192,global_batch=64", workers=1)
    steps = [p.step_seconds for p in r.step_times]
    assert steps == sorted(steps) and len(steps) == len(r.plans)
    names = [o for p in r.step_times for o in p.orders]
    assert any("Meta's Llama 3 order" in o for o in names) and any("default tp-cp-ep-dp-pp" in o for o in names)
    # pipeline inside a node (Meta's order) beats pipeline across the nodes: its sends are on the critical path
    fastest = r.step_times[0]
    assert "Meta's" in " ".join(fastest.orders)
    assert fastest.step.exposed_comm_seconds["pipeline"] < r.step_times[-1].step.exposed_comm_seconds["pipeline"]
    assert r.to_json()["step"]["by_step_time"][0]["step_seconds"] == fastest.step_seconds


def test_plan_says_when_a_named_order_is_not_listed():
    import p2sim
    from p2sim.report.step_plan import step_text

    # tensor listed first nests outside pipeline inside the node: no matrix of these rows is Meta's order
    r = p2sim.plan(model="llama3-8b", system="dgx-h100", axes="tensor=4,pipeline=2,data=2",
                   train="seq=8192,global_batch=64", workers=1)
    text = "\n".join(step_text(r))
    assert "not among the placements listed: " in text and "Meta's order (axes sharing a level nest" in text


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=6, deadline=None)
@given(seq=st.sampled_from([1024, 2048, 8192]), batch=st.sampled_from([8, 16, 48, 64]), top=st.integers(1, 4),
       layers=st.sampled_from([2, 4, 6]))
def test_the_search_top_is_the_exhaustive_top(seq, batch, top, layers):
    model = replace(TINY, num_layers=layers)
    train = f"seq={seq},global_batch={batch}"
    every = _exhaustive(model, "dgx-h100", 1, train)
    assert all(bound <= step for step, bound, _ in every)
    r = run_search(model=model, system="dgx-h100", nodes=1, train=train, top=top)
    assert [x.step_seconds for x in r.ranked] == sorted(step for step, _, _ in every)[:top]


def test_each_configuration_keeps_the_faster_rank_order():
    from p2sim.studies.step_time import run_step

    # Megatron-Bridge's 70B recipe on 8 DGX H100 nodes: the pipeline's sends inside a node (tp-cp-ep-pp-dp,
    # Meta's order) beat Megatron-LM's default, which puts data inside the node and the pipeline across
    r = run_search(model="llama3-70b", system="dgx-h100", nodes=8, train="global_batch=128,dtype=fp8,zero=1", top=1,
                   compare="tensor=4,pipeline=8,data=2,vp=5,mbs=1")
    default = run_step(model="llama3-70b", system="dgx-h100", nodes=8, axes={"tensor": 4, "pipeline": 8, "data": 2},
                       train="global_batch=128,dtype=fp8,zero=1,vp=5,sp=on")
    assert r.compared.order == "tp-cp-ep-pp-dp"
    assert r.compared.step_seconds < default.step_seconds
    assert r.compared.step.exposed_comm_seconds["pipeline"] < default.exposed_comm_seconds["pipeline"]


def test_contention_left_out_beyond_the_top_changes_nothing(monkeypatch):
    """The search simulates a configuration's contention only where its step without it could still enter the
    top (or beat the compared one); with every step's contention simulated the answer is the same."""
    case = dict(model="llama3-8b", system="dgx-h100", nodes=2, train="global_batch=64,zero=1", top=3,
                compare="tensor=4,pipeline=2,data=2,mbs=1")
    import p2sim.studies.config_search as cs
    skipped = []

    def recording(prep, matrix=None, contention_limit=float("inf")):
        result = finish_step(prep, matrix, contention_limit)
        skipped.append(not result.contended)
        return result

    monkeypatch.setattr(cs, "finish_step", recording)
    lazy = run_search(**case)
    assert any(skipped)  # the case leaves some contention out
    monkeypatch.setattr(cs, "finish_step", lambda prep, matrix=None, contention_limit=None: finish_step(prep, matrix))
    full = run_search(**case)
    assert [(r.label, r.step_seconds) for r in lazy.ranked] == [(r.label, r.step_seconds) for r in full.ranked]
    assert lazy.compared.step_seconds == full.compared.step_seconds and lazy.compared_place == full.compared_place
    assert all(r.step.contended for r in lazy.ranked)


def test_the_search_names_the_dispatcher_and_tp_overlap_it_timed():
    """They change every MoE step's time: the answer's training line and JSON say so (a dense model's dispatcher
    is refused: it would change nothing)."""
    import p2sim
    from p2sim.report.config_search import search_text
    from p2sim.util.errors import InputError
    r = p2sim.plan(model="qwen3-30b-a3b", system="dgx-h100", nodes=1,
                   train="seq=4096,global_batch=32,dispatcher=deepep,tp_overlap=on", top=1)
    assert r.training["dispatcher"] == "deepep" and r.training["tp_overlap"] is True
    assert "tensor-parallel overlap, dispatcher deepep" in search_text(r).splitlines()[0]
    with pytest.raises(InputError, match="^train: dispatcher: 'deepep' is a MoE layer's token dispatcher"):
        p2sim.plan(model="llama3-8b", system="dgx-h100", nodes=1, train="dispatcher=deepep")


def test_tp_overlap_is_timed_only_where_megatron_allows_it():
    """tp_overlap=on in a search's --train is a wish for the configurations with a tensor axis: one without (the
    tiny model's tensor=1 ones) is timed, and says it ran, without --tp-comm-overlap (Megatron-LM refuses the
    flag there: it needs sequence parallelism, off at tensor 1); the search's own training line keeps the wish."""
    r = run_search(model=TINY, system="dgx-h100", nodes=1, train=TRAIN + ",tp_overlap=on", top=8)
    assert r.training["tp_overlap"] is True
    tensors = {x.step.axes["tensor"] for x in r.ranked}
    assert 1 in tensors and len(tensors) > 1  # both kinds among the finished
    assert all(x.step.training["tp_overlap"] is (x.step.axes["tensor"] > 1) for x in r.ranked)


def test_the_search_offloads_activations_where_it_fits_and_costs_nothing():
    """Llama 3 70B on one GB300 rack, FSDP, as Megatron-Bridge runs it (micro-batch 2, no pipeline): without recompute
    it does not fit, and offloading the fewest layers that fit to Grace over NVLink-C2C hides under the compute, so
    the search (here --compare) takes it before any recompute; offload in --train is the search's own to choose."""
    r = run_search(model="llama3-70b", system="gb300-nvl72", nodes=1, top=1,
                   train="seq=8192,global_batch=288,dtype=fp8,zero=fsdp,grad_dtype=bf16", compare="data=72,mbs=2")
    c = r.compared
    assert c.recompute == "none" and c.step.training["offload"] > 0 and c.step.offload_seconds == 0.0
    with pytest.raises(InputError, match="the search offloads activations itself"):
        run_search(model="llama3-70b", system="gb300-nvl72", nodes=1, train="seq=8192,offload=10")


def test_compare_takes_its_own_offload_as_given():
    """--compare ...,offload=N times the compared configuration with N layers offloaded; offload=off with none
    (the search's own offloading, where it hides, is not put in its place); what does not fit says both."""
    base = dict(model="llama3-70b", system="dgx-h100", nodes=8, top=1,
                train="seq=8192,global_batch=128,dtype=fp8,zero=1,grad_dtype=bf16")
    auto = run_search(**base, compare="tensor=8,data=8,mbs=2").compared
    assert auto.step.training["offload"] > 0 and auto.label.endswith(f"offload={auto.step.training['offload']}")
    given = run_search(**base, compare="tensor=8,data=8,mbs=2,offload=20").compared
    assert given.step.training["offload"] == 20
    off = run_search(**base, compare="tensor=8,data=8,mbs=2,offload=off").compared
    assert off.step.training["offload"] == 0 and off.recompute != "none"  # it needs recompute to fit
    with pytest.raises(InputError, match="with recompute=none, offload=1, more than"):
        run_search(**base, compare="tensor=8,data=8,mbs=2,offload=1")
