from __future__ import annotations

import json
from pathlib import Path

import pytest

import p2sim

from p2sim.report.whatif import whatif_text
from p2sim.studies.whatif import WhatifRequest, WhatifResult, run_whatif
from p2sim.util.errors import InputError, ProgramError

from .test_fabric import fabric_text


def _row(label, nodes, matrix):
    return {"point": {}, "label": label, "nodes": nodes, "bytes_per_gpu": 1, "matrix": matrix, "algo": "ring",
            "program": "AllReduce(slice=0, Inside)", "seconds": 1.0, "speedup_over_allreduce": 1.0,
            "winner_changed": False, "best_per_matrix": [], "search": {}}


def test_placements_compare_within_a_node_count():
    req = WhatifRequest.build(system="h100", vary=["nodes=2,4"], workers=1)
    same = WhatifResult(req, ("a",), (0,), ("node", "gpu"), (_row("n=2", 2, [[2, 8]]), _row("n=4", 4, [[4, 8]])), ())
    assert not same.placement_changes and same.to_json()["placement_changes"] is False
    assert [(n, m) for n, m, _ in same.placements] == [(2, [[2, 8]]), (4, [[4, 8]])]
    moved = WhatifResult(req, ("a",), (0,), ("node", "gpu"),
                         (_row("x=1", 2, [[2, 8]]), _row("x=2", 2, [[2, 1], [1, 8]]), _row("x=3", 2, [[2, 8]])), ())
    assert moved.placement_changes
    assert moved.placements[0][2] == ["x=1", "x=3"]


@pytest.fixture
def fab(tmp_path) -> Path:
    path = tmp_path / "fab.toml"
    path.write_text(fabric_text(nodes_per_leaf=2, oversubscription=1.0, gpus=2, nics=1,
                                levels='{ name = "leaf", fabric = "leaf" }, '))
    return path


def test_varying_a_tier_and_a_fault_from_the_cli_layer(fab):
    req = WhatifRequest.build(system=str(fab), nodes=4, axes="data=4,tensor=2", reduce="data", workers=1,
                              algo="ring", bytes="1GiB", vary=["leaf.oversubscription=1,4"])
    res = run_whatif(req)
    assert [r["label"] for r in res.rows] == ["leaf.oversubscription=1", "leaf.oversubscription=4"]
    one, four = res.rows
    # a 4:1 spine can only slow the best program down; the best keeps the reduced axis in a leaf there
    assert four["seconds"] >= one["seconds"]
    assert four["matrix"][0][0] == 1
    text = whatif_text(res)
    assert "best placement" in text
    doc = res.to_json()
    assert {"nodes", "matrix", "points"} <= set(doc["best_placements"][0])
    slow = run_whatif(WhatifRequest.build(system=str(fab), nodes=4, axes="data=4,tensor=2", reduce="data", workers=1,
                                          algo="ring", bytes="1GiB", vary=["node3.speed=1,0.25"]))
    assert slow.rows[1]["seconds"] > slow.rows[0]["seconds"]


# a file's field and --vary's target that sets it, with the text that sets it in fabric_text's file
FIELDS = {
    "nic.bandwidth": ("nic = { bandwidth = 10.0, efficiency = 1.0 }", "nic = {{ bandwidth = {}, efficiency = 1.0 }}"),
    # a fault's rate is a link's: the file's per-link bandwidth
    "node1.pcie0.bandwidth": ('{ class = "pcie", pairs', '{{ class = "pcie", bandwidth = {}, pairs'),
    "nic.latency": ("nic = { bandwidth = 10.0, efficiency = 1.0 }",
                    "nic = {{ bandwidth = 10.0, latency = {}, efficiency = 1.0 }}"),
    "leaf.oversubscription": ("oversubscription = 1.0", "oversubscription = {}"),
    "leaf.uplinks": ("oversubscription = 1.0", "uplinks = {}"),
    "leaf.nodes": ("nodes = 2, oversubscription = 1.0", "nodes = {}, oversubscription = 1.0"),
}
EDGES = [float("inf"), float("nan"), -1.0, 0.0, 1e-300, 1e-9, 1e-3, 0.5, 1.0, 2.5, 4.0, 16.0, 17.0, 16384.0,
         16385.0, 1e6, 1e7, 1e300]


@pytest.mark.parametrize("target", sorted(FIELDS))
def test_vary_and_the_system_file_accept_the_same_values(target):
    """One rule per field: a value --vary takes is one the file takes, at the edges too."""
    from p2sim.studies.variations import parse_vary, points
    from p2sim.util.errors import InputError

    from .helpers import spec_from

    text = fabric_text(nodes_per_leaf=2, oversubscription=1.0)
    spec = spec_from(text)
    old, new = FIELDS[target]
    for v in EDGES:
        try:
            spec_from(text.replace(old, new.format(repr(v))))
            in_file = True
        except InputError:
            in_file = False
        try:
            points(spec, 4, [parse_vary(f"{target}={v!r}", spec)])
            in_vary = True
        except InputError as e:
            in_vary = False
            assert str(e).startswith(f"--vary: {target}"), str(e)
        assert in_file == in_vary, (target, v, in_file, in_vary)


def test_a_tier_whose_name_ends_in_a_digit_is_varied_as_itself():
    from p2sim.studies.variations import apply_setting, parse_vary

    from .helpers import spec_from

    text = fabric_text(nodes_per_leaf=2, oversubscription=1.0).replace('name = "leaf"', 'name = "leaf2"').replace(
        "leaf = {", "leaf2 = {")
    spec = spec_from(text)
    # leaf2.uplinks reads as the leaf2 tier's uplinks, not as group 2 of a tier "leaf" that does not exist
    assert parse_vary("leaf2.uplinks=4", spec).values == (4,)
    assert apply_setting(spec, "leaf2.uplinks", 4).fabric.tier("leaf2").uplinks == 4


def test_vary_queue_pairs_per_connection():
    from p2sim.studies.variations import parse_vary, points
    from p2sim.topology import find_spec
    from p2sim.util.errors import InputError

    roce = find_spec("roce-h100")
    v = parse_vary("qps_per_connection=1,2,4", roce)
    assert v.values == (1, 2, 4)
    pts = points(roce, 16, [v])
    assert [p.spec.nccl.ib_qps_per_connection for p in pts] == [1, 2, 4]
    assert [p.label for p in pts] == [f"qps_per_connection={k}" for k in (1, 2, 4)]
    for bad, msg in (("0", "0 must be a whole number in 1..128"), ("129", "129 must be a whole number in 1..128"),
                     ("1.5", "1.5 must be a whole number")):
        with pytest.raises(InputError, match=f"^--vary: qps_per_connection: {msg}"):
            parse_vary(f"qps_per_connection={bad}", roce)
    with pytest.raises(InputError, match="^--vary: qps_per_connection: a100 has no \\[fabric\\]"):
        parse_vary("qps_per_connection=2", find_spec("a100"))
    efa = find_spec("superpod-h100")
    from dataclasses import replace

    efa = replace(efa, nccl=replace(efa.nccl, transport="efa"))
    with pytest.raises(InputError, match="transport is efa; queue pairs are NCCL's IB transport's"):
        parse_vary("qps_per_connection=2", efa)


def test_whatif_with_a_fixed_matrix_and_program_shows_ecmp_cost_falling_as_queue_pairs_rise(tmp_path):
    # 4 nodes of 1 GPU and a 10 GB/s NIC, leaves of 2 nodes with 2 uplink ports of the NICs' speed (1:1, no
    # oversubscription): the data axis joins node i of leaf 0 to node i of leaf 1, both groups at once.  At
    # seed 3 one queue pair per connection puts all four connections of a direction on one port (half the
    # rate: twice adaptive routing's time); each doubling of the queue pairs spreads them further
    text = fabric_text(nodes_per_leaf=2, oversubscription=1.0, routing="ecmp",
                       levels='{ name = "leaf", fabric = "leaf" }, ').replace('routing = "ecmp"',
                                                                             'routing = "ecmp"\nseed = 3')
    path = tmp_path / "ecmp.toml"
    path.write_text(text)
    program = "ReduceScatter(slice=0, Inside) ; AllGather(slice=0, Inside)"

    def whatif(vary: str) -> WhatifResult:
        return run_whatif(WhatifRequest.build(system=str(path), nodes=4, axes="data=2,other=2", reduce="data",
                                              matrix="[[2 1 1] [1 2 1]]", program=program, algo="ring",
                                              bytes="1GiB", vary=[vary], workers=1))

    r = whatif("qps_per_connection=1,2,4,8")
    assert {row["program"] for row in r.rows} == {program}  # the given program, though AllReduce ran beside it
    assert all(row["matrix"] == [[2, 1, 1], [1, 2, 1]] for row in r.rows)
    seconds = [row["seconds"] for row in r.rows]
    adaptive = whatif("routing=adaptive").rows[0]["seconds"]
    assert seconds == sorted(seconds, reverse=True) and len(set(seconds)) == 4  # falls at every step
    assert seconds[0] > 1.9 * adaptive and seconds[-1] > adaptive
    text = whatif_text(r)
    assert "matrix [[2 1 1] [1 2 1]]; program " + program in text.splitlines()[0]
    assert "placement given: [[2 1 1] [1 2 1]] at every point" in text


def test_whatif_program_needs_one_matrix_and_a_valid_program():
    with pytest.raises(InputError, match=r"^matrix: axes 2,8 have 2 matrices; a --program needs one"):
        run_whatif(WhatifRequest.build(system="h100", nodes=2, axes="2,8", reduce="0", vary=["nic.bandwidth=25"],
                                       program="AllReduce(slice=0, Inside)", workers=1))
    with pytest.raises(ProgramError):
        WhatifRequest.build(system="h100", nodes=2, vary=["nic.bandwidth=25"], program="AllReduce(", workers=1)


def test_whatif_runs_a_given_program_that_the_rules_do_not_synthesize():
    # as simulate does: a valid program longer than --max-size still runs (the rules bound the search only)
    program = "Reduce(slice=0, Inside) ; Broadcast(slice=0, Inside)"
    r = run_whatif(WhatifRequest.build(system="h100", nodes=2, axes="16", vary=["nic.bandwidth=25"], max_size=1,
                                       matrix=[[2, 8]], program=program, workers=1))
    assert [row["program"] for row in r.rows] == [program]
    assert r.rows[0]["seconds"] > r.rows[0]["best_per_matrix"][0]["allreduce_seconds"]  # slower than AllReduce here


STEP_JOB = dict(system="dgx-h100", nodes=2, axes="data=2,pipeline=2,tensor=4", train="seq=2048,global_batch=64",
                workers=1)


@pytest.mark.slow  # a model's step at each point
def test_whatif_model_charges_the_whole_step_at_each_nic_speed_as_plan_model_does(tiny):
    """Two NIC speeds: each point's step (best and default placement, per axis) equals plan --model's on that
    point's system; the data reduction crosses the nodes, so the slower NIC gives the slower step."""
    import p2sim
    r = p2sim.whatif(**STEP_JOB, model=tiny, vary="nic.bandwidth=12.5,50")
    assert [row["label"] for row in r.rows] == ["nic.bandwidth=12.5", "nic.bandwidth=50"]
    slow, fast = r.rows
    assert slow["seconds"] > fast["seconds"]
    for pt, row in zip(r.request.points, r.rows):
        planned = p2sim.plan(**dict(STEP_JOB, system=pt.spec), model=tiny)
        assert row["seconds"] == planned.best.total_seconds
        assert row["matrix"] == [list(x) for x in planned.best.matrix]
        assert row["default_seconds"] == planned.default_plan.total_seconds
        step = planned.to_json()["step"]
        assert [(a["axis"], a["seconds"]) for a in row["axes"]] == [(a["axis"], a["seconds"])
                                                                    for a in step["best_axes"]]
        assert {a["axis"] for a in row["axes"]} == {"data", "pipeline", "tensor"}
    # the data axis's time is what the NIC moves: only it (of the best placement's axes) changes
    by_axis = [{a["axis"]: a["seconds"] for a in row["axes"]} for row in r.rows]
    assert by_axis[0]["data"] > by_axis[1]["data"] and by_axis[0]["tensor"] == by_axis[1]["tensor"]
    assert r.to_json()["points"][0]["axes"] == slow["axes"]
    text = whatif_text(r)
    assert "(model tiny, axes data=2,pipeline=2,tensor=4;" in text.splitlines()[0]
    assert text.splitlines()[1].startswith("overlap: none")
    assert sum(1 for line in text.splitlines() if line.strip().startswith("default ")) == 2


def test_whatif_model_points_of_nic_speeds_share_their_structures(monkeypatch, tiny):
    # issue 34 item 2, the --model path too: the second point takes the first's structures (the rows are checked
    # against plan --model alone above)
    request = {k: v for k, v in STEP_JOB.items() if k != "workers"}
    shared, fewer = _built_and_rows(monkeypatch, True, **request, model=tiny, vary=["nic.bandwidth=12.5,50"])
    alone, every = _built_and_rows(monkeypatch, False, **request, model=tiny, vary=["nic.bandwidth=12.5,50"])
    assert shared == alone and fewer < every * 0.75, (fewer, every)


def test_whatif_model_refuses_what_the_step_decides(tiny):
    for kw in (dict(reduce="tensor"), dict(bytes="1GiB"), dict(matrix="[[2 1] [1 2] [1 4]]"),
               dict(program="AllReduce(slice=0, Inside)")):
        name = next(iter(kw))
        with pytest.raises(InputError, match=f"^{name}: with --model the step's collectives say what is reduced"):
            WhatifRequest.build(**STEP_JOB, model=tiny, vary=["nic.bandwidth=25"], **kw)
    with pytest.raises(InputError, match="^train: describes the training step of a --model"):
        WhatifRequest.build(system="dgx-h100", nodes=2, vary=["nic.bandwidth=25"], train="seq=2048")


def _built_and_rows(monkeypatch, share: bool, **request):
    """A what-if's rows and the structures it built, with or without points taking the one before's."""
    from p2sim.collectives import caches, structure as structure_module

    built = [0]
    structure = structure_module.Structures.build

    def counted(self, *args, **kwargs):
        built[0] += 1
        return structure(self, *args, **kwargs)

    monkeypatch.setattr(structure_module.Structures, "build", counted)
    if not share:  # neither taken after a point (adopt) nor shared while searched together (share)
        monkeypatch.setattr(caches.CollectiveCaches, "adopt", lambda self, other: False)
        monkeypatch.setattr(caches.CollectiveCaches, "share", lambda self, other: False)
    result = run_whatif(WhatifRequest.build(workers=1, **request))
    monkeypatch.undo()
    return json.dumps(result.to_json(), sort_keys=True), built[0]


@pytest.mark.slow  # every point twice
def test_points_of_nic_rates_share_their_structures_and_answer_as_alone(monkeypatch):
    # issue 34 item 2: a flat network's NIC rate changes no structure (structure_key); the points take the one
    # before's and build fewer, with the same answer to the bit; a PCIe rate (a node link) shares nothing
    job = dict(nodes=8, axes="data=16,pipeline=4", reduce="data", bytes="1GiB")
    for system, vary in (("h100", "nic.bandwidth=25,50,100"), ("superpod-h100", "nic.bandwidth=25,50")):
        shared, fewer = _built_and_rows(monkeypatch, True, system=system, vary=[vary], **job)
        alone, every = _built_and_rows(monkeypatch, False, system=system, vary=[vary], **job)
        assert shared == alone and fewer < every * 0.6, (system, fewer, every)
    shared, fewer = _built_and_rows(monkeypatch, True, system="h100", vary=["pcie.bandwidth=16,64"], **job)
    alone, every = _built_and_rows(monkeypatch, False, system="h100", vary=["pcie.bandwidth=16,64"], **job)
    assert shared == alone and fewer == every


def test_points_that_build_the_same_structures_run_one_after_another(monkeypatch):
    # the first --vary varies fastest, so points of one NVSwitch rate (equal structure keys) are not neighbours:
    # they run one after another (whatif._run_order), sharing, and the rows stay in the points' order, as alone
    job = dict(system="h100", nodes=4, axes="data=8,pipeline=4", reduce="data", bytes="1GiB",
               vary=["nvswitch.bandwidth=200,450", "nic.bandwidth=25,50"])
    shared, fewer = _built_and_rows(monkeypatch, True, **job)
    alone, every = _built_and_rows(monkeypatch, False, **job)
    assert shared == alone and fewer < every * 0.8, (fewer, every)
    labels = [p["label"] for p in json.loads(shared)["points"]]
    assert labels[:2] == ["nvswitch.bandwidth=200, nic.bandwidth=25", "nvswitch.bandwidth=450, nic.bandwidth=25"]


@pytest.mark.slow  # every point twice
def test_points_of_uplink_rates_share_their_structures_and_answer_as_alone(monkeypatch):
    # issue 34 item 2: leaf oversubscription 1, 2, 4 under adaptive routing changes no structure; each point takes
    # the one before's (CollectiveCaches.adopt) and builds a third as many, with the same rows to the bit
    job = dict(system="superpod-h100", nodes=32, axes={"data": 8, "pipeline": 4, "tensor": 8}, reduce=["data"],
               bytes="4GiB", vary=["leaf.oversubscription=1,2,4"])
    shared, fewer = _built_and_rows(monkeypatch, True, **job)
    alone, every = _built_and_rows(monkeypatch, False, **job)
    assert shared == alone and fewer < every / 2


def test_an_nccl_environment_variable_is_a_what_if_target():
    from p2sim.studies.variations import apply_setting, parse_vary
    from p2sim.topology import find_spec
    from p2sim.util.errors import InputError

    spec = find_spec("dgx-h100")
    v = parse_vary("NCCL_PROTO=LL128, Simple", spec)
    assert v.values == ("LL128", "Simple")
    assert apply_setting(spec, v.target, "Simple").nccl.protocols == ("Simple",)
    assert apply_setting(spec, "NCCL_NVLS_ENABLE", "0").nccl.nvls is False
    with pytest.raises(InputError, match="--vary NCCL_NVLS_ENABLE: 'off' must be 0, 1 or 2"):
        parse_vary("NCCL_NVLS_ENABLE=0,off", spec)


def test_whatif_model_is_estimated_and_refused_as_a_whole_before_any_point_runs(monkeypatch, tiny):
    """Issue 43's class: each point of a what-if --model checked only its own step, so points each under the
    limit ran one after another however many; their sum is now said and checked before the first runs."""
    import p2sim
    import p2sim.studies.whatif as whatif
    import p2sim.studies.whatif_step as ws
    from p2sim.studies.jobsize import JobCost

    ran = []
    monkeypatch.setattr(whatif, "run_step_plan", lambda *a, **k: ran.append(a))
    monkeypatch.setattr(ws, "step_plan_cost", lambda req, mats: JobCost(16, 1, 0, 1, 150.0, 0.0))  # 150 s each
    with pytest.raises(InputError, match=r"^job: whatif --model of 3 points would take about 450 s of CPU time \(3 "
                                         r"points, each a whole step planned: 150 s, 150 s, 150 s of CPU\)"):
        p2sim.whatif(**STEP_JOB, model=tiny, vary="nic.bandwidth=12.5,25,50")
    assert not ran


def test_whatif_model_points_are_built_from_the_requests_values(tiny):
    """issue 44: each point's plan takes the request's checked values whole (no option copied by name), and its
    Demand is the model's step on that point's axes (a '*' resolved there)."""
    req = WhatifRequest.build(system="dgx-h100", nodes=2, axes="data=*,tensor=4", vary=["nodes=1,2"], model=tiny,
                              train="seq=2048,global_batch=64", workers=1)
    assert [p.job.axes for p in req.plans] == [(2, 4), (4, 4)]
    for plan in req.plans:
        assert plan.settings is req.settings and plan.limits is req.limits and plan.run is req.run
        assert plan.demand.whole_step and plan.demand.reductions and plan.job.axis_names == ("data", "tensor")
    plain = WhatifRequest.build(system="dgx-h100", nodes=2, vary=["nodes=1,2"], workers=1)
    assert plain.plans == ()


def test_request_holds_each_points_demand():
    """What each point makes fast is built with the request: one reduction per point, P2's default buffer growing
    with that point's node count, a '*' axis resolved there (issue 44)."""
    req = WhatifRequest.build(system="h100", axes="data=*,tensor=4", reduce="tensor,data", vary=["nodes=2,4"], workers=1)
    assert [d.bytes_per_gpu for d in req.demands] == [2**29 * 4 * 2, 2**29 * 4 * 4]
    assert all(d.default_bytes and not d.whole_step for d in req.demands)
    assert [d.reduce_axes for d in req.demands] == [(1, 0), (1, 0)]  # as given (of_reduce), checked at each point
    assert req.sizes == ((4, 4), (8, 4)) and req.axis_names == ("data", "tensor")
    given = WhatifRequest.build(system="h100", vary=["nodes=2,4"], bytes="1GiB", workers=1)
    assert [(d.bytes_per_gpu, d.default_bytes) for d in given.demands] == [(2**30, False)] * 2
    # a point that cannot reduce is refused when the request is built, naming the point
    with pytest.raises(InputError, match=r"reduce: .*at the --vary point nodes=2"):
        WhatifRequest.build(system="h100", vary=["nodes=2,4"], reduce="3", workers=1)


def test_model_request_demands_are_its_plans():
    req = WhatifRequest.build(system="dgx-h100", nodes=2, axes="data=2,pipeline=2,tensor=4", model="llama3-8b",
                              vary=["nic.bandwidth=12.5,50"], workers=1)
    assert req.demands == tuple(p.demand for p in req.plans) and all(d.whole_step for d in req.demands)


def test_whatif_model_takes_zero_fsdp_and_refuses_what_changes_only_compute():
    """zero=fsdp changes the step's collectives (taken, as plan --model takes it); recompute, fp8, tp_overlap and
    the dispatcher change only its compute, which whatif --model does not weigh: refused, saying so."""
    kw = dict(model="llama3-8b", system="dgx-h100", axes="tensor=8,data=*", vary="nodes=1,2", workers=1)
    assert len(p2sim.whatif(**kw, train="seq=8192,zero=fsdp").rows) == 2
    for train in ("seq=8192,recompute=selective", "seq=8192,tp_overlap=on", "dtype=fp8"):
        with pytest.raises(InputError, match="^train: recompute, dtype=fp8, tp_overlap and dispatcher change"):
            p2sim.whatif(**kw, train=train)


def test_a_point_searched_with_the_others_answers_as_the_point_alone(monkeypatch):
    # the points of one structure key are bounded together, a matrix's tasks one after another
    # (search.run_searches), their contexts sharing structures and geometry: each row is the row of a what-if of
    # that point alone, to the bit, and the points build each structure once where alone each builds its own
    job = dict(system="superpod-h100", nodes=8, axes="data=8,pipeline=4,tensor=2", reduce="data", bytes="1GiB")
    together, built = _built_and_rows(monkeypatch, True, vary=["leaf.oversubscription=1,2,4"], **job)
    alone = [_built_and_rows(monkeypatch, True, vary=[f"leaf.oversubscription={v}"], **job) for v in (1, 2, 4)]
    rows = json.loads(together)["points"]
    for row, (one, _) in zip(rows, alone):
        (mine,) = json.loads(one)["points"]
        assert {k: v for k, v in row.items() if k != "winner_changed"} == {
            k: v for k, v in mine.items() if k != "winner_changed"}
    assert built < sum(n for _, n in alone) / 2, (built, [n for _, n in alone])


def test_the_points_of_one_structure_key_share_one_store_of_structures_and_geometry():
    from p2sim.collectives import Expander
    from p2sim.sim import SimulationContext
    from p2sim.studies.whatif import _shared_groups
    from p2sim.topology import load_system

    from .test_caches import _oversubscribed

    base = load_system("superpod-h100", 8)
    two = _oversubscribed("superpod-h100", 8, 2.0)
    fewer = load_system("superpod-h100", 16)
    contexts = [SimulationContext(t) for t in (base, fewer, two)]
    assert _shared_groups(contexts) == [[0, 2], [1]]
    assert contexts[2].geometry is contexts[0].geometry and contexts[1].geometry is not contexts[0].geometry
    rates = Expander(base).rates
    assert contexts[2].expansions(rates).structures is contexts[0].expansions(rates).structures
