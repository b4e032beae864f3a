"""``p2sim rank``, ``plan``, ``whatif``, ``validate`` and ``calibrate``."""

from __future__ import annotations

import argparse

from ..analysis.rank import split_by_matrix
from ..analysis.sweep import SweepTask
from ..collectives import check_algo, check_proto
from ..errors import InputError
from ..hierarchy import Lowering, Order
from ..parsing import int_list, positive_int
from ..placement import Placement, enumerate_matrices, parse_matrix
from ..report.files import write_report
from ..report.mesh import MeshChoice, MeshReduction, check_emit, emit_mesh
from ..report.rank import ranking_json, ranking_report, ranking_text
from ..sim import ModelConfig
from ..sim.model import check_model
from .common import axes, buffer_bytes, emit, executor, order, order_label, rules, topology


def algorithms(text: str) -> tuple[str, ...]:
    """``both`` is P2's pair of forced algorithms; anything else one setting (``auto`` = NCCL's choice)."""
    if text == "both":
        return ("ring", "tree")
    return (check_algo(text),)


def _search_options(args: argparse.Namespace) -> dict:
    """``--exhaustive``, ``--budget SECONDS`` and ``--top-matrices K`` for :func:`~p2sim.analysis.search.run_search`."""
    budget = getattr(args, "budget", None)
    if budget is not None:
        try:
            budget = float(budget)
        except ValueError:
            raise InputError(f"budget: {args.budget!r} is not a number of seconds") from None
        if not (budget > 0 and budget < float("inf")):
            raise InputError(f"budget: {args.budget!r} must be a positive number of seconds")
    k = getattr(args, "top_matrices", None)
    return {"exhaustive": args.exhaustive, "budget": budget,
            "top_matrices": None if k is None else positive_int(k, "top-matrices")}


def search_text(stats, top: int | None = None) -> str:
    """What a search simulated and skipped, in words (one line)."""
    text = f"{stats.simulated} of {stats.programs} programs simulated"
    if stats.bounded_out:
        nth = {1: "1st", 2: "2nd", 3: "3rd"}.get(top, f"{top}th") if top else ""
        why = (f"the {nth} best time and " if top else "") + "their matrix's best"
        text += f", {stats.bounded_out} bounded out (lower bound above {why})"
    if stats.searched < stats.matrices:
        text += (f"; only the {stats.searched} of {stats.matrices} (matrix, algorithm) pairs with the least lower "
                 f"bounds searched (--top-matrices)")
    if stats.stopped_by_budget:
        text += (f"; stopped by --budget {stats.budget_seconds:g} s: NOT proven, programs with lower bounds from "
                 f"{stats.next_bound:.4g} s on were not simulated")
    return text


def cmd_rank(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from ..analysis.orders import compare_orders, orders_agree
    from ..analysis.rank import rank_results
    from ..analysis.search import run_search
    from ..report.orders import comparison_json, comparison_table, comparison_text

    topo = topology(args)
    h, p = axes(args, topo.hierarchy)
    red = int_list(args.reduce, "reduce")
    nbytes = buffer_bytes(args, topo)
    model = check_model(args.model)
    top = positive_int(args.top, "top")
    algos = algorithms(args.algo)
    proto = check_proto(args.proto)
    profile, max_size = rules(args)
    chosen = order(args)
    form = check_emit(args.emit, args.json)
    search = _search_options(args)
    mats = enumerate_matrices(h, p) if args.matrix is None else [parse_matrix(args.matrix)]
    Lowering.of(Placement.of(h, p, mats[0]), red)  # validates the reduction axes before any work
    tasks = []
    for algo in algos:
        base = SweepTask(topo.spec, topo.nodes, p, tuple(red), algo, model, nbytes, None, profile.value, max_size,
                         proto=proto, order=chosen.value)
        tasks += split_by_matrix(base, mats)
    others: list[SweepTask] = []
    rest_results: list = []
    if args.compare_orders:
        # the other order is simulated only where it changes the groups
        same = {m: orders_agree(Placement.of(h, p, m), red) for m in mats}
        other = Order.P2 if chosen is Order.ALIGNED else Order.ALIGNED
        others = [replace(t, order=other.value) for t in tasks if not same[t.matrices[0]]]
    with executor(args) as ex:
        results, stats = run_search(tasks, ex, top, **search)
        if others:  # the other order: each matrix's best (no top k of its own)
            kept = {r.task.matrices[0] for r in results}
            others = [t for t in others if t.matrices[0] in kept]
            rest_results = run_search(others, ex, 0, exhaustive=search["exhaustive"])[0] if others else []
    ranking = rank_results(results)
    comparison = None
    if args.compare_orders:
        rest = rank_results(rest_results)
        same = {m: v for m, v in same.items() if m in {s.matrix for s in ranking.matrices}}
        comparison = compare_orders(*((ranking, rest) if chosen is Order.ALIGNED else (rest, ranking)), same)
    header = (f"{topo.spec.name}, {topo.node_count} nodes, {topo.devices} GPUs; axes {list(p)} reduce {sorted(set(red))}"
              f"{order_label(chosen, red)}; algo {args.algo}, {model} model, {nbytes / 2**30:g} GiB per GPU; "
              f"{search_text(stats, top)}")
    meta = {"system": topo.spec.name, "nodes": topo.node_count, "axes": list(p), "reduce_axes": sorted(set(red)),
            "order": chosen.value, "algo": args.algo, "proto": proto, "model": model, "bytes_per_gpu": nbytes,
            "config": ModelConfig.of(topo.spec).to_json(topo.spec)}
    if args.out:
        best = ranking.entries[0]
        files = ranking_report(f"p2sim rank: {topo.spec.name}", header, ranking, top, topo,
                               Lowering.of(Placement.of(h, p, best.matrix), red, chosen),
                               (comparison_table(comparison),) if comparison is not None else ())
        written = write_report(args.out, files)
    if form:
        best = ranking.entries[0]
        reduction = MeshReduction(tuple(sorted(set(red))), best.algo, best.timing.text, best.seconds)
        choice = MeshChoice(topo.spec.name, topo.node_count, topo.gpus_per_node, Placement.of(h, p, best.matrix),
                            (reduction,))
        print(emit_mesh(form, choice), end="")
    elif args.json:
        doc = dict(ranking_json(meta, ranking, top), search=stats.to_json())
        if comparison is not None:
            doc["order_comparison"] = comparison_json(comparison)
        emit(doc)
    else:
        print(ranking_text(header, ranking, top))
        if comparison is not None:
            print("\n" + comparison_text(comparison))
        if args.out:
            print(f"\nreport: {', '.join(str(w) for w in written)}")
    return 0


def cmd_plan(args: argparse.Namespace) -> int:
    from ..analysis.plan import build_plans, default_matrix, parse_reduction, plan_tasks, plan_scores
    from ..analysis.search import run_search
    from ..hierarchy import reduce_axes_of
    from ..placement import format_matrix

    topo = topology(args)
    h, p = axes(args, topo.hierarchy)
    if not args.reduction:
        raise InputError("reduction: give at least one --reduction AXES:SIZE[ x COUNT]")
    reductions = [parse_reduction(r) for r in args.reduction]
    for r in reductions:
        reduce_axes_of(p, r.axes)
    data_axis = int_list(args.data_axis, "data-axis")[0]
    if not 0 <= data_axis < len(p):
        raise InputError(f"data-axis: {data_axis} is out of range 0..{len(p) - 1}")
    model = check_model(args.model)
    algos = algorithms(args.algo)
    mats = enumerate_matrices(h, p)
    profile, max_size = rules(args)
    chosen = order(args)
    form = check_emit(args.emit, args.json)
    search = _search_options(args)
    base = SweepTask(topo.spec, topo.nodes, p, (0,), algos[0], model, 1.0, None, profile.value, max_size,
                     proto=check_proto(args.proto), order=chosen.value)
    tasks = plan_tasks(base, reductions, algos, mats)
    default = default_matrix(mats, data_axis)
    with executor(args) as ex:
        # each matrix's best program per reduction: exact, with or without the bounds
        results, stats = run_search(tasks, ex, 0, score=plan_scores(reductions), always=frozenset([default]),
                                    label="planning", **search)
    mats = [m for m in mats if m in {r.task.matrices[0] for r in results}]
    plans = build_plans(reductions, results, mats)
    dplan = next(pl for pl in plans if pl.matrix == default)
    best = plans[0]
    savings = {
        "vs_default_placement": 1 - best.total_seconds / dplan.total_seconds,
        "vs_default_allreduce": 1 - best.total_seconds / dplan.allreduce_total_seconds,
        "vs_best_placement_allreduce": 1 - best.total_seconds / min(pl.allreduce_total_seconds for pl in plans),
    }
    if form:
        choice = MeshChoice(topo.spec.name, topo.node_count, topo.gpus_per_node, Placement.of(h, p, best.matrix),
                            tuple(MeshReduction(c.reduction.axes, c.algo, c.program, c.seconds) for c in best.choices))
        print(emit_mesh(form, choice), end="")
        return 0
    if args.json:
        emit({"system": topo.spec.name, "nodes": topo.node_count, "axes": list(p), "data_axis": data_axis,
              "order": chosen.value, "algo": args.algo, "model": model,
              "reductions": [{"axes": list(r.axes), "bytes": r.bytes, "count": r.count} for r in reductions],
              "plans": [pl.to_json() for pl in plans], "best": best.to_json(), "default": dplan.to_json(),
              "savings": savings, "search": stats.to_json()})
        return 0
    print(f"{topo.spec.name}, {topo.node_count} nodes, {topo.devices} GPUs; axes {list(p)} (data axis {data_axis})"
          f"{order_label(chosen, *(r.axes for r in reductions))}; algo {args.algo}, {model} model")
    print("reductions: " + "; ".join(f"axes {list(r.axes)} {r.bytes / 2**20:g} MiB x {r.count}" for r in reductions))
    print(search_text(stats))
    print(f"\n{'rank':>4}  {'step seconds':>12}  {'AllReduce only':>14}  matrix")
    for i, pl in enumerate(plans, 1):
        mark = "  <- default placement" if pl.matrix == default else ""
        print(f"{i:4d}  {pl.total_seconds:12.4f}  {pl.allreduce_total_seconds:14.4f}  {format_matrix(pl.matrix)}{mark}")
    print(f"\nbest plan {format_matrix(best.matrix)}:")
    for c in best.choices:
        print(f"  axes {list(c.reduction.axes)} {c.reduction.bytes / 2**20:g} MiB x {c.reduction.count}: "
              f"{c.seconds:.4f} s each ({c.algo}) {c.program}")
    print(f"\nsaves {savings['vs_default_placement']:.1%} over the default placement {format_matrix(default)} "
          f"with its best programs, {savings['vs_default_allreduce']:.1%} over the default placement with plain "
          f"AllReduce, and {savings['vs_best_placement_allreduce']:.1%} over the best placement with plain AllReduce")
    return 0


def cmd_whatif(args: argparse.Namespace) -> int:
    from ..analysis.rank import rank_results
    from ..analysis.search import run_search
    from ..analysis.sweep import ConfigResult
    from ..analysis.whatif import parse_vary, points, resolve_axes, winner_key
    from ..hierarchy import reduce_axes_of
    from ..placement import format_matrix
    from ..report.whatif import whatif_plot
    from ..topology import Topology, find_spec

    spec = find_spec(args.system)
    nodes = spec.default_nodes if args.nodes is None else positive_int(args.nodes, "nodes")
    if not args.vary:
        raise InputError("vary: give at least one --vary CLASS.bandwidth=V,.. or nodes=N,..")
    variations = [parse_vary(v, spec) for v in args.vary]
    pts = points(spec, nodes, variations)
    red = int_list(args.reduce, "reduce")
    model = check_model(args.model)
    algos = algorithms(args.algo)
    profile, max_size = rules(args)
    chosen = order(args)
    tasks, owners, point_bytes = [], [], []
    for k, pt in enumerate(pts):
        topo = Topology(pt.spec, pt.nodes)
        p = resolve_axes(args.axes, topo.devices)
        reduce_axes_of(p, red)
        nbytes = buffer_bytes(args, topo)
        point_bytes.append(nbytes)
        mats = enumerate_matrices(topo.hierarchy, p)
        for algo in algos:
            base = SweepTask(pt.spec, pt.nodes, p, tuple(red), algo, model, nbytes, None, profile.value, max_size,
                             proto=check_proto(args.proto), order=chosen.value)
            split = split_by_matrix(base, mats)
            tasks += split
            owners += [k] * len(split)
    per_point: list[list[ConfigResult]] = [[] for _ in pts]
    with executor(args) as ex:
        for k in range(len(pts)):  # each point's winner and matrices' bests: exact, with or without the bounds
            mine = [t for t, o in zip(tasks, owners) if o == k]
            per_point[k] = run_search(mine, ex, 1, exhaustive=args.exhaustive, label="what-if")[0]
    rows = []
    winners: dict[tuple, tuple] = {}
    first = variations[0].target
    for k, pt in enumerate(pts):
        ranking = rank_results(per_point[k])
        best = ranking.entries[0]
        key = winner_key(best.matrix, best.algo, best.timing.text)
        # a series varies the first parameter with the others fixed, as in the plot
        series = tuple((t, v) for t, v in pt.settings if t != first)
        previous = winners.get(series)
        winners[series] = key
        rows.append({"point": dict(pt.settings), "label": pt.label, "bytes_per_gpu": point_bytes[k],
                     "matrix": [list(r) for r in best.matrix],
                     "algo": best.algo, "program": best.timing.text, "seconds": best.seconds,
                     "speedup_over_allreduce": best.speedup, "winner_changed": previous is not None and key != previous,
                     "best_per_matrix": [s.to_json() for s in ranking.matrices]})
    if args.out:
        from ..report.files import write_report

        written = write_report(args.out, {"whatif.png": whatif_plot(variations, rows)})
    if args.json:
        emit({"system": spec.name, "vary": [{"target": v.target, "values": list(v.values)} for v in variations],
              "order": chosen.value, "algo": args.algo, "model": model, "points": rows})
        return 0
    print(f"{spec.name}: what if {'; '.join(args.vary)}  (algo {args.algo}, {model} model{order_label(chosen, red)})")
    for r in rows:
        mark = "  <- winner changes" if r["winner_changed"] else ""
        print(f"  {r['label']:<32} {r['bytes_per_gpu'] / 2**20:9.0f} MiB {r['seconds']:10.4f} s  {r['algo']:<4} "
              f"{format_matrix(tuple(tuple(x) for x in r['matrix'])):<18} {r['program']}{mark}")
    if args.out:
        print(f"\nplot: {written[0]}")
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from ..analysis.collective_validation import validate_collectives
    from ..analysis.inputs import load_inputs
    from ..analysis.validation_run import validate
    from ..report.collectives import collectives_report, collectives_text
    from ..report.files import write_report
    from ..report.validate import validation_report, validation_text

    data = load_inputs(args.measurements, args.system)
    cal = None if args.calibrate_on is None else load_inputs(args.calibrate_on, args.system)
    model = check_model(args.model)
    folds = positive_int(args.folds, "folds")
    doc: dict = {}
    files: dict[str, bytes] = {}
    with executor(args) as ex:
        if data.programs:
            result = validate(list(data.programs), ex, model, None if cal is None else list(cal.programs), folds)
            doc = result.to_json()
            if args.out:
                files.update(validation_report(doc))
        if data.collectives:
            if cal is not None and not cal.collectives:
                raise InputError("calibrate-on: no single-collective measurements to calibrate the collectives on")
            doc["collectives"] = validate_collectives(data.collectives, ex, model,
                                                      None if cal is None else cal.collectives)
            if args.out:
                files.update(collectives_report(doc["collectives"]))
    written = write_report(args.out, files) if args.out else []
    if args.json:
        emit(doc)
    else:
        parts = ([validation_text(doc)] if data.programs else []) + (
            [collectives_text(doc["collectives"])] if data.collectives else [])
        print("\n\n".join(parts))
        if written:
            print(f"\nreport: {', '.join(str(w) for w in written)}")
    return 0


def cmd_calibrate(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..analysis.calibrate import calibrate
    from ..analysis.inputs import load_inputs
    from ..report.validate import calibration_lines
    from ..topology import find_spec
    from ..topology.toml_out import spec_to_toml

    spec = find_spec(args.system)
    data = load_inputs(args.measurements, spec.name)
    model = check_model(args.model)
    out = Path(args.out)
    if out.suffix != ".toml":
        raise InputError(f"out: {args.out!r} should be a .toml file")
    with executor(args) as ex:
        fit = calibrate(list(data.programs), spec.name, ex, model, base=spec, collectives=data.collectives)
    out.write_text(spec_to_toml(fit.after, f"Calibrated by p2sim calibrate from {spec.source}\n"
                                            f"on {args.measurements} ({fit.rows} rows, {model} model)."))
    doc = dict(fit.to_json(), out=str(out))
    if args.json:
        emit(doc)
    else:
        print(calibration_lines([doc])[0])
        for w in doc["warnings"]:
            print(f"WARNING {w}")
        print(f"wrote {out}")
    return 0
