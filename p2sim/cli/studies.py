"""``p2sim rank``, ``plan``, ``whatif``, ``validate`` and ``calibrate``."""

from __future__ import annotations

import argparse
import sys

from ..studies.rank import split_by_matrix
from ..studies.sweep import SweepTask
from ..collectives import check_algo, check_proto
from ..util.errors import InputError
from ..formalism.hierarchy import Lowering, Order
from ..util.parsing import positive_int
from ..util.fileio import check_output_dir, check_output_file, writing
from ..formalism.placement import Placement, enumerate_matrices, parse_matrix
from ..report.files import write_report
from ..report.mesh import MeshChoice, MeshReduction, check_emit, emit_mesh
from ..report.rank import ranking_json, ranking_report, ranking_text
from ..sim import ModelConfig
from ..sim.model import check_model
from ..formalism.placement import format_matrix
from ..report.axes import axes_text, describe_placement, is_default, matrix_legend, reduce_text
from ..util.units import format_bytes, format_seconds
from .common import (axes, axis_names, buffer_bytes, emit, executor, limits, order, order_label, reduce_axes,
                     reduces_something, rules, topology, warn_memory, where)


def algorithms(text: str) -> tuple[str, ...]:
    """``both`` is P2's pair of forced algorithms; anything else one setting (``auto`` = NCCL's choice)."""
    if text == "both":
        return ("ring", "tree")
    return (check_algo(text),)


def scope_note(p: tuple[int, ...], red: tuple[int, ...], names: tuple[str, ...]) -> str:
    """What ``rank`` optimises: the reduction axes' traffic only (empty when every axis is reduced)."""
    others = [names[i] for i in range(len(p)) if i not in red and p[i] > 1]
    if not others:
        return ""
    return (f"optimises the reduction over {', '.join(names[i] for i in sorted(set(red)))} only: the traffic of "
            f"{', '.join(others)} is not counted (p2sim plan weighs every reduction of a training step)")


def _search_options(args: argparse.Namespace) -> dict:
    """``--exhaustive``, ``--budget SECONDS`` and ``--top-matrices K`` for :func:`~p2sim.studies.search.run_search`."""
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


def _bounded(search: dict, model: str) -> bool:
    """Whether the job bounds its programs first (the des model, not --exhaustive)."""
    return model == "des" and not search["exhaustive"]


def _check_size(lim, search: dict, model: str, total: int, what: str) -> str:
    """The job-size check, and how the job's simulations are announced.

    With the bounds, every program is bounded (about a tenth of a simulation's time) and only
    those that can still win are simulated; a ``--budget`` caps the time itself, so the
    simulation limit then does not apply.
    """
    from ..studies.jobsize import plural

    if search["budget"] is None:
        lim.check_simulations(total, what)
    if _bounded(search, model):
        return f"up to {plural(total, 'simulation')} (each program bounded first, simulated only if it can still win)"
    return plural(total, "simulation")


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

    from ..studies.jobsize import announce, plural, program_counts
    from ..studies.orders import compare_orders, orders_agree
    from ..studies.rank import rank_results
    from ..studies.search import run_search
    from ..formalism.placement import count_matrices
    from ..report.orders import comparison_json, comparison_table, comparison_text

    if args.out:
        check_output_dir(args.out, "out")
    topo = topology(args)
    h, p = axes(args, topo.hierarchy)
    names = axis_names(args, len(p))
    red = reduce_axes(args, names)
    nbytes = buffer_bytes(args, topo)
    model = check_model(args.model)
    top = positive_int(args.top, "top")
    algos = algorithms(args.algo)
    proto = check_proto(args.proto)
    profile, max_size = rules(args)
    chosen = order(args)
    form = check_emit(args.emit, args.json)
    search = _search_options(args)
    lim = limits(args)
    if args.matrix is None:
        lim.check_matrices(count_matrices(h, p), f"axes {','.join(map(str, p))} on {topo.spec.name}")
        mats = enumerate_matrices(h, p)
    else:
        mats = [parse_matrix(args.matrix)]
    Placement.of(h, p, mats[0])  # a given matrix is checked before any work
    red = reduces_something(p, red)
    counts = dict(zip(mats, program_counts(mats, red, profile, max_size, lim)))
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
    total = sum(counts[t.matrices[0]] for t in tasks + others)
    what = (f"{plural(len(mats), 'matrix')}, {plural(sum(counts.values()), 'program')}, "
            f"{plural(len(algos), 'algorithm')}" + (f", {plural(len(others), 'task')} in the other order"
                                                     if others else ""))
    size = _check_size(lim, search, model, total, what)
    warn_memory("rank", topo.spec, nbytes, args.bytes is None, topo.node_count)
    with executor(args, len(tasks + others)) as ex:
        announce("rank", f"{what}: {size} in {plural(len(tasks + others), 'task')} "
                         f"{where(args, len(tasks + others))}")
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
    levels = topo.level_names
    best = ranking.entries[0]
    placement_words = describe_placement(best.matrix, names, levels, topo.spec.node_level)
    scope = scope_note(p, red, names)
    header = (f"{topo.spec.name}, {topo.node_count} nodes, {topo.devices} GPUs; axes {axes_text(p, names)} reduce "
              f"{reduce_text(red, names)}{order_label(chosen, red)}; algo {args.algo}, {model} model, "
              f"{format_bytes(nbytes)} per GPU; {search_text(stats, top)}"
              + (f"\n{scope}" if scope else "") + f"\n{matrix_legend(names, levels)}")
    meta = {"system": topo.spec.name, "nodes": topo.node_count, "axes": list(p), "axis_names": list(names),
            "level_names": list(levels), "reduce_axes": sorted(set(red)), "scope": scope,
            "order": chosen.value, "algo": args.algo, "proto": proto, "model": model, "bytes_per_gpu": nbytes,
            "config": ModelConfig.of(topo.spec).to_json(topo.spec),
            "best_placement": {"matrix": [list(r) for r in best.matrix], "placement": placement_words}}
    if form:
        reduction = MeshReduction(tuple(sorted(set(red))), best.algo, best.timing.text, best.seconds)
        choice = MeshChoice(topo.spec.name, topo.node_count, topo.gpus_per_node, Placement.of(h, p, best.matrix),
                            (reduction,), names)
        print(emit_mesh(form, choice), end="")
    elif args.json:
        doc = dict(ranking_json(meta, ranking, top), search=stats.to_json())
        if comparison is not None:
            doc["order_comparison"] = comparison_json(comparison)
        emit(doc)
    else:
        print(ranking_text(header, ranking, top))
        print(f"\nbest placement {format_matrix(best.matrix)}: {placement_words}")
        if comparison is not None:
            print("\n" + comparison_text(comparison))
    if args.out:
        # written after the answer is printed: a late write failure loses no result
        sys.stdout.flush()
        files = ranking_report(f"p2sim rank: {topo.spec.name}", header, ranking, top, topo,
                               Lowering.of(Placement.of(h, p, best.matrix), red, chosen),
                               (comparison_table(comparison),) if comparison is not None else ())
        written = write_report(args.out, files)
        if not (form or args.json):
            print(f"\nreport: {', '.join(str(w) for w in written)}")
    return 0


def cmd_plan(args: argparse.Namespace) -> int:
    from ..studies.plan import build_plans, default_matrix, parse_reduction, plan_scores, plan_tasks
    from ..studies.jobsize import announce, plural, program_counts
    from ..studies.search import run_search
    from ..util.parsing import axis_indices
    from ..formalism.placement import count_matrices

    topo = topology(args)
    h, p = axes(args, topo.hierarchy)
    names = axis_names(args, len(p))
    if not args.reduction:
        raise InputError("reduction: give at least one --reduction AXES:SIZE[ x COUNT]")
    reductions = [parse_reduction(r, names) for r in args.reduction]
    for r in reductions:
        reduces_something(p, r.axes)
    (data_axis, *more) = axis_indices(args.data_axis, names, "data-axis")
    if more:
        raise InputError(f"data-axis: {args.data_axis!r} names {len(more) + 1} axes; give one")
    if not 0 <= data_axis < len(p):
        raise InputError(f"data-axis: {data_axis} is out of range 0..{len(p) - 1}")
    model = check_model(args.model)
    algos = algorithms(args.algo)
    profile, max_size = rules(args)
    chosen = order(args)
    form = check_emit(args.emit, args.json)
    proto = check_proto(args.proto)
    search = _search_options(args)
    lim = limits(args)
    lim.check_matrices(count_matrices(h, p), f"axes {','.join(map(str, p))} on {topo.spec.name}")
    mats = enumerate_matrices(h, p)
    programs = sum(sum(program_counts(mats, r.axes, profile, max_size, lim)) for r in reductions)
    total = programs * len(algos)
    what = (f"{plural(len(mats), 'matrix')}, {plural(len(reductions), 'reduction')} with {plural(programs, 'program')}"
            f" in all, {plural(len(algos), 'algorithm')}")
    size = _check_size(lim, search, model, total, what)
    base = SweepTask(topo.spec, topo.nodes, p, (0,), algos[0], model, 1.0, None, profile.value, max_size,
                     proto=proto, order=chosen.value)
    tasks = plan_tasks(base, reductions, algos, mats)
    default = default_matrix(mats, data_axis)
    with executor(args, len(tasks)) as ex:
        announce("plan", f"{what}: {size} in {plural(len(tasks), 'task')} {where(args, len(tasks))}")
        # each matrix's best program per reduction: exact, with or without the bounds
        results, stats = run_search(tasks, ex, 0, score=plan_scores(reductions), always=frozenset([default]),
                                    label="planning", **search)
    mats = [m for m in mats if m in {r.task.matrices[0] for r in results}]
    plans = build_plans(reductions, results, mats)
    dplan = next(pl for pl in plans if pl.matrix == default)
    best = plans[0]
    levels = topo.level_names
    words = describe_placement(best.matrix, names, levels, topo.spec.node_level)
    savings = {
        "vs_default_placement": 1 - best.total_seconds / dplan.total_seconds,
        "vs_default_allreduce": 1 - best.total_seconds / dplan.allreduce_total_seconds,
        "vs_best_placement_allreduce": 1 - best.total_seconds / min(pl.allreduce_total_seconds for pl in plans),
    }
    if form:
        choice = MeshChoice(topo.spec.name, topo.node_count, topo.gpus_per_node, Placement.of(h, p, best.matrix),
                            tuple(MeshReduction(c.reduction.axes, c.algo, c.program, c.seconds) for c in best.choices),
                            names)
        print(emit_mesh(form, choice), end="")
        return 0
    if args.json:
        emit({"system": topo.spec.name, "nodes": topo.node_count, "axes": list(p), "axis_names": list(names),
              "level_names": list(levels), "data_axis": data_axis,
              "order": chosen.value, "algo": args.algo, "model": model,
              "reductions": [{"axes": list(r.axes), "bytes": r.bytes, "count": r.count} for r in reductions],
              "plans": [pl.to_json() for pl in plans], "best": best.to_json(), "default": dplan.to_json(),
              "best_placement": words,
              "default_placement": describe_placement(default, names, levels, topo.spec.node_level),
              "savings": savings, "search": stats.to_json()})
        return 0

    def reduction_text(r) -> str:
        return f"{reduce_text(r.axes, names)} {format_bytes(r.bytes)} x {r.count}"

    print(f"{topo.spec.name}, {topo.node_count} nodes, {topo.devices} GPUs; axes {axes_text(p, names)} "
          f"(data axis {f'{names[data_axis]}' if not is_default(names) else data_axis})"
          f"{order_label(chosen, *(r.axes for r in reductions))}; algo {args.algo}, {model} model")
    print("reductions: " + "; ".join(f"axes {reduction_text(r)}" for r in reductions))
    print(search_text(stats))
    print(matrix_legend(names, levels))
    print(f"\n{'rank':>4}  {'step time':>10}  {'AllReduce only':>14}  matrix")
    for i, pl in enumerate(plans, 1):
        mark = "  <- default placement" if pl.matrix == default else ""
        print(f"{i:4d}  {format_seconds(pl.total_seconds):>10}  {format_seconds(pl.allreduce_total_seconds):>14}  "
              f"{format_matrix(pl.matrix)}{mark}")
    print(f"\nbest plan {format_matrix(best.matrix)}: {words}")
    for c in best.choices:
        print(f"  axes {reduction_text(c.reduction)}: {format_seconds(c.seconds)} each ({c.algo}) {c.program}")
    print(f"\nsaves {savings['vs_default_placement']:.1%} over the default placement {format_matrix(default)} "
          f"with its best programs, {savings['vs_default_allreduce']:.1%} over the default placement with plain "
          f"AllReduce, and {savings['vs_best_placement_allreduce']:.1%} over the best placement with plain AllReduce")
    return 0


def cmd_whatif(args: argparse.Namespace) -> int:
    from ..studies.rank import rank_results
    from ..studies.search import run_search
    from ..studies.sweep import ConfigResult
    from ..studies.whatif import parse_vary, points, resolve_axes, winner_key
    from ..studies.jobsize import announce, plural, program_counts
    from ..formalism.placement import count_matrices
    from ..report.whatif import whatif_plot
    from ..topology import Topology, find_spec

    if args.out:
        check_output_dir(args.out, "out")
    spec = find_spec(args.system)
    nodes = spec.default_nodes if args.nodes is None else positive_int(args.nodes, "nodes")
    if not args.vary:
        raise InputError("vary: give at least one --vary CLASS.bandwidth=V,.. or nodes=N,..")
    variations = [parse_vary(v, spec) for v in args.vary]
    pts = points(spec, nodes, variations)
    model = check_model(args.model)
    algos = algorithms(args.algo)
    profile, max_size = rules(args)
    chosen = order(args)
    proto = check_proto(args.proto)
    lim = limits(args)
    tasks, owners, point_bytes = [], [], []
    simulations, largest = 0, None
    counted: dict[int, tuple[tuple[int, ...], list, list[int]]] = {}  # per node count: axes, matrices, programs
    for k, pt in enumerate(pts):
        topo = Topology(pt.spec, pt.nodes)
        if pt.nodes not in counted:
            p = resolve_axes(args.axes, topo.devices)
            names = axis_names(args, len(p))
            red = reduces_something(p, reduce_axes(args, names))
            lim.check_matrices(count_matrices(topo.hierarchy, p),
                               f"axes {','.join(map(str, p))} on {spec.name} with {pt.nodes} nodes")
            mats = enumerate_matrices(topo.hierarchy, p)
            counted[pt.nodes] = (p, mats, program_counts(mats, red, profile, max_size, lim))
        p, mats, counts = counted[pt.nodes]
        nbytes = buffer_bytes(args, topo)
        point_bytes.append(nbytes)
        if largest is None or nbytes > largest[0]:
            largest = (nbytes, topo)
        simulations += sum(counts) * len(algos)
        for algo in algos:
            base = SweepTask(pt.spec, pt.nodes, p, tuple(red), algo, model, nbytes, None, profile.value, max_size,
                             proto=proto, order=chosen.value)
            split = split_by_matrix(base, mats)
            tasks += split
            owners += [k] * len(split)
    what = f"{plural(len(pts), 'point')}, {plural(len(algos), 'algorithm')}"
    search = {"exhaustive": args.exhaustive, "budget": None}
    size = _check_size(lim, search, model, simulations, what)
    warn_memory("whatif", largest[1].spec, largest[0], args.bytes is None, largest[1].node_count)
    per_point: list[list[ConfigResult]] = [[] for _ in pts]
    stats = []
    with executor(args, len(tasks)) as ex:
        announce("whatif", f"{what}: {size} in {plural(len(tasks), 'task')} {where(args, len(tasks))}")
        for k in range(len(pts)):  # each point's winner and matrices' bests: exact, with or without the bounds
            mine = [t for t, o in zip(tasks, owners) if o == k]
            per_point[k], st = run_search(mine, ex, 1, exhaustive=args.exhaustive, label="what-if")
            stats.append(st)
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
                     "best_per_matrix": [s.to_json() for s in ranking.matrices], "search": stats[k].to_json()})
    if args.json:
        emit({"system": spec.name, "vary": [{"target": v.target, "values": list(v.values)} for v in variations],
              "axis_names": list(names), "level_names": list(largest[1].level_names), "order": chosen.value,
              "algo": args.algo, "model": model, "points": rows})
        if args.out:
            sys.stdout.flush()
            write_report(args.out, {"whatif.png": whatif_plot(variations, rows)})
        return 0
    # the axes as given: a '*' resolves per point
    given = "one axis over all GPUs" if args.axes is None else f"axes {args.axes} reduce {reduce_text(red, names)}"
    print(f"{spec.name}: what if {'; '.join(args.vary)}  ({given}; algo {args.algo}, {model} model"
          f"{order_label(chosen, red)})")
    print(matrix_legend(names, largest[1].level_names))
    print(_whatif_search_line(stats))
    for r in rows:
        mark = "  <- winner changes" if r["winner_changed"] else ""
        print(f"  {r['label']:<32} {format_bytes(r['bytes_per_gpu']):>9} {format_seconds(r['seconds']):>10}  "
              f"{r['algo']:<4} {format_matrix(tuple(tuple(x) for x in r['matrix'])):<18} {r['program']}{mark}")
    if args.out:
        sys.stdout.flush()  # the answer stands even if the plot cannot be written
        written = write_report(args.out, {"whatif.png": whatif_plot(variations, rows)})
        print(f"\nplot: {written[0]}")
    return 0


def _whatif_search_line(stats) -> str:
    """How many programs the points simulated, of how many (the bounded search skips the rest)."""
    programs, simulated = sum(s.programs for s in stats), sum(s.simulated for s in stats)
    if simulated == programs:
        return f"all points: every one of their {programs} programs simulated"
    return (f"all points: {simulated} of {programs} programs simulated, {programs - simulated} bounded out "
            "(lower bound above the point's best time and their matrix's best)")


def _fitted_model(model: str, why: str) -> str:
    """validate and calibrate run the event-driven or the analytic model, never the baseline alone."""
    if check_model(model) == "baseline":
        raise InputError(f"model: 'baseline' is not one of des, analytic here ({why})")
    return model


def _validation_size(rows, cal, model: str, folds: int, lim) -> tuple[str, int]:
    """What validate simulates, in words, and the simulations of its prediction passes (checked against the limit)."""
    from ..studies.jobsize import plural, program_counts
    from ..measurements.predict import groups_of
    from ..measurements.validation_run import BASELINE
    from ..formalism.placement import count_matrices
    from ..topology import find_spec

    groups = groups_of(rows)
    per_pass = 0
    for (system, nodes, p, red, *_), _rows in groups.items():
        h = find_spec(system).hierarchy(nodes)
        lim.check_matrices(count_matrices(h, p), f"axes {','.join(map(str, p))} on {system} with {nodes} nodes")
        per_pass += sum(program_counts(enumerate_matrices(h, p), red, "paper", 5, lim))
    models = len(dict.fromkeys((model, BASELINE)))
    total = per_pass * models
    what = (f"{plural(len(rows), 'row')} in {plural(len(groups), 'group')}: {plural(models, 'model')} x "
            f"{plural(per_pass, 'simulation')} to predict")
    lim.check_simulations(total, what)
    if cal is not None:
        per_eval = sum(sum(program_counts(tuple(dict.fromkeys(r.matrix for r in g)), key[3], "paper", 5, lim))
                       for key, g in groups_of(cal).items())
        fits = len({r.system for r in rows}) * models * folds
        what += (f"; calibration: {plural(fits, 'fit')}, each evaluation {plural(per_eval, 'simulation')} (a fit "
                 "takes tens to a few hundred evaluations)")
    return what, total


def cmd_validate(args: argparse.Namespace) -> int:
    from ..measurements.collective_validation import validate_collectives
    from ..measurements.emulated import emulated_warnings, refuse_emulated
    from ..measurements.inputs import load_inputs
    from ..studies.jobsize import announce, plural
    from ..measurements.predict import groups_of
    from ..measurements.validation_run import validate
    from ..report.collectives import collectives_report, collectives_text
    from ..report.validate import validation_report, validation_text

    if args.out:
        check_output_dir(args.out, "out")
    data = load_inputs(args.measurements, args.system)
    cal = None if args.calibrate_on is None else load_inputs(args.calibrate_on, args.system)
    model = _fitted_model(args.model, "the baseline is scored beside the model anyway")
    folds = positive_int(args.folds, "folds")
    # validate() and validate_collectives() check these too, but only after the job-size line
    if data.programs:
        if folds > 1 and cal is None:
            raise InputError("folds: cross-validation needs --calibrate-on")
        configs = len({r.group[:4] for r in data.programs})
        if folds > configs:
            raise InputError(f"folds: {folds} folds but only {configs} measured configurations")
    if data.collectives and cal is not None and not cal.collectives:
        raise InputError("calibrate-on: no single-collective measurements to calibrate the collectives on")
    warnings = [] if args.allow_emulated else emulated_warnings(data.programs + data.collectives)
    if cal is not None and not args.allow_emulated:
        refuse_emulated(cal.programs + cal.collectives, "calibrates on them")
    parts, tasks = [], None
    if data.programs:
        what, _ = _validation_size(list(data.programs), None if cal is None else list(cal.programs), model, folds,
                                   limits(args))
        parts.append(what)
        tasks = None if data.collectives else len(groups_of(data.programs))
    if data.collectives:
        parts.append(plural(len(data.collectives), "single-collective row"))
    if args.json:  # the text output ends with them
        for w in warnings:
            print(f"p2sim validate: warning: {w}", file=sys.stderr, flush=True)
    doc: dict = {}
    with executor(args, tasks) as ex:
        announce("validate", f"{'; '.join(parts)}; {where(args, tasks)}")
        if data.programs:
            result = validate(list(data.programs), ex, model, None if cal is None else list(cal.programs), folds)
            doc = result.to_json()
        if data.collectives:
            doc["collectives"] = validate_collectives(data.collectives, ex, model,
                                                      None if cal is None else cal.collectives)
    doc["warnings"] = warnings
    if args.json:
        emit(doc)
    else:
        texts = ([validation_text(doc)] if data.programs else []) + (
            [collectives_text(doc["collectives"])] if data.collectives else [])
        print("\n\n".join(texts))
        for w in warnings:
            print(f"WARNING {w}")
    if args.out:
        sys.stdout.flush()  # the scores stand even if the report cannot be written
        files: dict[str, bytes] = {}
        if data.programs:
            files.update(validation_report(doc))
        if data.collectives:
            files.update(collectives_report(doc["collectives"]))
        written = write_report(args.out, files)
        if not args.json:
            print(f"\nreport: {', '.join(str(w) for w in written)}")
    return 0


def cmd_calibrate(args: argparse.Namespace) -> int:
    from ..measurements.calibrate import calibrate
    from ..measurements.emulated import refuse_emulated
    from ..measurements.inputs import load_inputs
    from ..studies.jobsize import Limits, announce, plural, program_counts
    from ..measurements.predict import groups_of
    from ..report.validate import calibration_lines
    from ..topology import find_spec
    from ..topology.toml_out import spec_to_toml

    out = check_output_file(args.out, "out", (".toml",))
    spec = find_spec(args.system)
    data = load_inputs(args.measurements, spec.name)
    model = _fitted_model(args.model, "the baseline has no per-channel rates to fit")
    mine = [r for r in data.programs if r.system == spec.name]
    singles = [r for r in data.collectives if r.system == spec.name]
    if not args.allow_emulated:
        refuse_emulated(mine + singles, "calibrates on them")
    per_eval = sum(sum(program_counts(tuple(dict.fromkeys(r.matrix for r in g)), key[3], "paper", 5, Limits.of(True)))
                   for key, g in groups_of(mine).items())
    tasks = len(groups_of(mine)) if mine and not singles else None
    parts = ([f"{plural(len(mine), 'program row')}: each evaluation {plural(per_eval, 'simulation')}"] if mine else []
             ) + ([plural(len(singles), "single-collective row")] if singles else [])
    with executor(args, tasks) as ex:
        if parts:
            announce("calibrate", f"{spec.name}: {'; '.join(parts)}; {where(args, tasks)} (a fit takes tens to a few "
                                  "hundred evaluations)")
        fit = calibrate(list(data.programs), spec.name, ex, model, base=spec, collectives=data.collectives)
    text = spec_to_toml(fit.after, f"Calibrated by p2sim calibrate from {spec.source}\n"
                                   f"on {args.measurements} ({fit.rows} rows, {model} model).")
    doc = dict(fit.to_json(), out=str(out))
    if args.json:
        emit(doc)
    else:
        print(calibration_lines([doc])[0])
        for w in doc["warnings"]:
            print(f"WARNING {w}")
    sys.stdout.flush()  # the fit stands even if the file cannot be written
    with writing("out", out):
        out.write_text(text)
    if not args.json:
        print(f"wrote {out}")
    return 0
