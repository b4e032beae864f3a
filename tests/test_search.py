from __future__ import annotations

import json

import pytest

from p2sim.studies.executor import SerialExecutor
from p2sim.studies.ranking import rank_results, split_by_matrix
from p2sim.studies.search import bound_all, matrix_bounds, run_search, search
from p2sim.studies.requests import Settings
from p2sim.studies.config_task import ConfigTask
from p2sim.cli import main
from p2sim.formalism.placement import enumerate_matrices
from p2sim.sim import SimSettings, Simulator
from p2sim.sim.simulator import BOUND_SLACK
from p2sim.formalism.synthesis import synthesize_placements
from p2sim.topology import load_system

# (system, nodes, axes, reduce axes, buffer per GPU): node counts and sizes where the bound
# decides differently -- NIC-bound steps, steps inside nodes, small buffers where LL wins
CASES = [("a100", 2, (4, 8), (0,), 2.0**32), ("a100", 4, (4, 2, 8), (0, 2), 2.0**33), ("v100", 2, (4, 4), (1,), 2.0**20),
         ("h100", 2, (2, 8), (1,), 2.0**32), ("dgx-h100", 2, (4, 2, 2), (0, 2), 2.0**24), ("p2-16gpu", 2, (4, 4), (0,), 2.0**30)]


@pytest.mark.slow  # simulates every program
@pytest.mark.parametrize("system,nodes,axes,reduce,nbytes", CASES)
def test_the_bound_is_below_every_simulated_time_and_the_analytic_model_too(system, nodes, axes, reduce, nbytes):
    topo = load_system(system, nodes)
    syn = synthesize_placements(topo.hierarchy, axes, reduce)
    for algo in ("auto", "ring", "tree"):
        des = Simulator(topo, SimSettings(algo, engine="des"))
        analytic = Simulator(topo, SimSettings(algo, engine="analytic"))
        for mp in syn.matrices:
            for p in mp.programs:
                t = des.simulate(mp.lowering, p, nbytes).total_seconds
                assert des.lower_bound(mp.lowering, p, nbytes) * (1 - BOUND_SLACK) <= t
                # the analytic model (each group alone) is a lower bound too: it is one of the bound's terms
                assert analytic.simulate(mp.lowering, p, nbytes).total_seconds * (1 - BOUND_SLACK) <= t


def _ranking(tasks, exhaustive: bool, top: int):
    results, stats = run_search(tasks, SerialExecutor(), top, exhaustive=exhaustive)
    return rank_results(results), stats


@pytest.mark.parametrize("system,nodes,axes,reduce,nbytes", CASES)
@pytest.mark.parametrize("algos", [("auto",), ("ring", "tree")])
def test_the_bounded_search_finds_what_simulating_everything_finds(system, nodes, axes, reduce, nbytes, algos):
    topo = load_system(system, nodes)
    tasks = [t for a in algos for t in split_by_matrix(
        ConfigTask(spec=topo.spec, nodes=nodes, axes=axes, reduce_axes=reduce, bytes_per_gpu=nbytes,
                  settings=Settings(algo=a)), enumerate_matrices(topo.hierarchy, axes))]
    full, all_stats = _ranking(tasks, True, 5)
    found, stats = _ranking(tasks, False, 5)
    assert all_stats.simulated == all_stats.programs and stats.programs == all_stats.programs and stats.exact
    key = [(e.matrix, e.algo, e.timing.text, e.seconds, e.speedup) for e in full.top(5)]
    assert [(e.matrix, e.algo, e.timing.text, e.seconds, e.speedup) for e in found.top(5)] == key
    summary = [(s.matrix, s.algo, s.allreduce.seconds, s.best.text, s.best.seconds) for s in full.matrices]
    assert [(s.matrix, s.algo, s.allreduce.seconds, s.best.text, s.best.seconds) for s in found.matrices] == summary


def test_a_search_simulates_fewer_programs_on_many_matrices():
    topo = load_system("a100", 4)
    axes = (4, 2, 8)
    tasks = split_by_matrix(ConfigTask(spec=topo.spec, nodes=4, axes=axes, reduce_axes=(0, 2),
                                      bytes_per_gpu=2.0**33),
                            enumerate_matrices(topo.hierarchy, axes))
    _, stats = search(bound_all(tasks, SerialExecutor()), SerialExecutor(), top=1)
    assert stats.exact and stats.simulated < stats.programs / 2


def test_top_matrices_and_budget_say_what_they_left_out():
    topo = load_system("a100", 4)
    axes = (4, 2, 8)
    tasks = split_by_matrix(ConfigTask(spec=topo.spec, nodes=4, axes=axes, reduce_axes=(0, 2),
                                      bytes_per_gpu=2.0**33),
                            enumerate_matrices(topo.hierarchy, axes))
    results, stats = run_search(tasks, SerialExecutor(), 3, top_matrices=2)
    assert len({p.matrix for r in results for p in r.programs}) == 2 and stats.searched == 2 and not stats.exact
    # the two matrices kept hold the exhaustive search's best program
    full, _ = _ranking(tasks, True, 1)
    assert rank_results(results).top(1)[0].timing.text == full.top(1)[0].timing.text
    _, stats = run_search(tasks, SerialExecutor(), 3, budget=1e-9)
    assert stats.stopped_by_budget and not stats.exact and stats.next_bound is not None


def _json(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.slow  # every command twice
@pytest.mark.parametrize("argv", [
    ["rank", "--system", "a100", "--axes", "4,8", "--reduce", "0", "--algo", "both", "--top", "5"],
    ["rank", "--system", "a100", "--nodes", "4", "--axes", "8,2,4", "--reduce", "0,2", "--compare-orders", "--top", "3"],
    ["plan", "--system", "a100", "--axes", "2,16", "--reduction", "0:8GiB", "--reduction", "1:64MiB x 24"],
    ["whatif", "--system", "h100", "--vary", "nic.bandwidth=12.5,200", "--vary", "nodes=2,4"],
])
def test_commands_answer_alike_with_and_without_the_bounds(capsys, argv):
    a = _json(capsys, argv + ["--json", "--workers", "1"])
    b = _json(capsys, argv + ["--json", "--workers", "1", "--exhaustive"])
    for doc in (a, b):
        doc.pop("search", None)
        doc.pop("simulations", None)
        for point in doc.get("points", ()):  # whatif: what each point's search simulated
            point.pop("search")
    assert a == b


def test_pruning_options_are_checked(capsys):
    base = ["rank", "--system", "a100", "--axes", "4,8", "--reduce", "0", "--workers", "1"]
    for extra, field in ((["--budget", "soon"], "budget"), (["--budget", "-1"], "budget"),
                         (["--top-matrices", "0"], "top-matrices"), (["--engine", "analytic", "--budget", "5"], "budget")):
        assert main(base + extra) == 2
        assert field in capsys.readouterr().err
    out = _json(capsys, base + ["--json", "--top-matrices", "1"])
    assert out["search"]["searched_matrices"] == 1 and not out["search"]["exact"] and len(out["matrices"]) == 1


def test_a_serial_rank_builds_one_topology_and_one_context(monkeypatch):
    # the job's topology is the one its tasks run on, found again by the spec's value in this
    # process; the answer's bounds reuse its context (issue 31)
    import p2sim
    from p2sim.sim import context as sim_context
    from p2sim.topology import graph

    built = {"topology": 0, "context": 0}
    for cls, what in ((graph.Topology, "topology"), (sim_context.SimulationContext, "context")):
        original = cls.__init__

        def counting(self, *args, _original=original, _what=what, **kwargs):
            built[_what] += 1
            _original(self, *args, **kwargs)

        monkeypatch.setattr(cls, "__init__", counting)
    from p2sim.studies import contexts

    monkeypatch.setattr(contexts, "_CONTEXTS", contexts._Contexts())  # none built before in this process
    r = p2sim.rank(system="v100", nodes=2, axes={"data": 4, "tensor": 4}, reduce=["data"], algo="both", workers=1)
    assert r.best_bindings and r.stats.simulated > 2
    assert built == {"topology": 1, "context": 1}


@pytest.mark.parametrize("system,nodes,axes,reduce,nbytes", CASES)
@pytest.mark.parametrize("top", [0, 1, 3])
def test_bounds_cut_for_a_search_simulate_the_same_programs_as_whole_bounds(system, nodes, axes, reduce, nbytes, top):
    # issue 34: a search bounds each program only as far as it can still win (bound_all's top: BoundJob); the
    # programs simulated, every result and the statistics must be those of whole bounds, and each matrix's least
    # bound (plan's --top-matrices score) too
    topo = load_system(system, nodes)
    tasks = split_by_matrix(ConfigTask(spec=topo.spec, nodes=nodes, axes=axes, reduce_axes=reduce, bytes_per_gpu=nbytes),
                            enumerate_matrices(topo.hierarchy, axes))
    whole, cut = bound_all(tasks, SerialExecutor()), bound_all(tasks, SerialExecutor(), top=top)
    assert matrix_bounds(cut) == matrix_bounds(whole)
    partial = 0
    for w, c in zip(whole, cut):
        assert [(m, t) for m, t, _ in w.programs] == [(m, t) for m, t, _ in c.programs]
        assert [(a.matrix, a.seconds) for a in w.allreduce] == [(a.matrix, a.seconds) for a in c.allreduce]
        for (_, _, full), (_, _, part) in zip(w.programs, c.programs):
            assert part <= full  # a partial bound is part of the same sum
            partial += part < full
    assert partial > 0 or top > 1  # every case cuts some programs short with the top 0 or 1
    a, b = (search(x, SerialExecutor(), top) for x in (whole, cut))
    assert a[1] == b[1]
    assert [[(p.matrix, p.text, p.seconds) for p in r.programs] for r in a[0]] == \
        [[(p.matrix, p.text, p.seconds) for p in r.programs] for r in b[0]]


def test_a_cut_bound_stops_at_a_partial_sum_past_the_cut_and_is_whole_below_it(monkeypatch):
    # Simulator.lower_bound's cut: below it, the full sum in step order (the same number); past it, a partial sum
    # of bounded steps, itself past the cut, and fewer steps bounded
    topo = load_system("a100", 2)
    syn = synthesize_placements(topo.hierarchy, (4, 8), (0,))
    mp = syn.matrices[0]
    prog = max(mp.programs, key=len)
    full = Simulator(topo).lower_bound(mp.lowering, prog, 2.0**32)
    assert len(prog) > 1 and full > 0
    assert Simulator(topo).lower_bound(mp.lowering, prog, 2.0**32, cut=full * 2) == full
    built = []
    sim = Simulator(topo)
    original = type(sim)._step_bound
    monkeypatch.setattr(type(sim), "_step_bound", lambda self, s, v: built.append(s) or original(self, s, v))
    part = sim.lower_bound(mp.lowering, prog, 2.0**32, cut=0.0)
    assert 0 < part < full and part * (1 - BOUND_SLACK) > 0.0 and len(built) == 1
    # steps bounded before are summed first: a program whose known steps already pass the cut builds nothing
    built.clear()
    assert sim.lower_bound(mp.lowering, prog, 2.0**32, cut=0.0) == part and not built


@pytest.mark.parametrize("system,nodes,axes,reduce,nbytes", CASES[:3])
def test_bounding_the_tasks_backwards_changes_nothing(system, nodes, axes, reduce, nbytes):
    # whatif bounds every other point's tasks last to first (to start with the structures the point before
    # built last): a task's bounds are its own whatever ran before it, so results and statistics are the same
    topo = load_system(system, nodes)
    tasks = split_by_matrix(ConfigTask(spec=topo.spec, nodes=nodes, axes=axes, reduce_axes=reduce, bytes_per_gpu=nbytes),
                            enumerate_matrices(topo.hierarchy, axes))
    (fwd, a), (back, b) = (run_search(tasks, SerialExecutor(), 3, backwards=x) for x in (False, True))
    assert a == b and len(tasks) > 1
    assert [[(p.matrix, p.text, p.seconds) for p in r.programs] for r in fwd] == \
        [[(p.matrix, p.text, p.seconds) for p in r.programs] for r in back]


@pytest.mark.parametrize("system,nodes,axes,reduce,nbytes", CASES[:3])
def test_lists_searched_together_answer_as_each_searched_alone(system, nodes, axes, reduce, nbytes):
    # whatif bounds its points' tasks in turn (run_searches): each list's results and statistics are its own search's
    from p2sim.studies.search import run_searches

    topo = load_system(system, nodes)
    lists = [split_by_matrix(ConfigTask(spec=topo.spec, nodes=nodes, axes=axes, reduce_axes=reduce, bytes_per_gpu=b),
                             enumerate_matrices(topo.hierarchy, axes)) for b in (nbytes, nbytes / 64)]
    lists[1] = lists[1][:-1]  # lists of different lengths
    together = run_searches(lists, SerialExecutor(), 2)
    alone = [run_search(tasks, SerialExecutor(), 2) for tasks in lists]
    assert [s for _, s in together] == [s for _, s in alone] and len(lists[1]) > 0
    assert [[[(p.matrix, p.text, p.seconds) for p in r.programs] for r in res] for res, _ in together] == \
        [[[(p.matrix, p.text, p.seconds) for p in r.programs] for r in res] for res, _ in alone]
