from __future__ import annotations

import pytest

from p2sim.collectives import Expander
from p2sim.collectives.caches import CollectiveCaches
from p2sim.collectives.choice import Choice
from p2sim.collectives.decisions import MISSING, Decisions, same
from p2sim.topology import load_system


def test_same_compares_what_a_computation_could_tell_apart():
    assert same(1.5, 1.5) and same((1, "a", (2.0, None)), (1, "a", (2.0, None))) and same([1, 2], [1, 2])
    assert not same(0.0, -0.0)  # equal, but 1 / x tells them apart
    assert not same(1, 1.0) and not same((1,), [1]) and not same((1, 2), (1, 2, 3))
    assert same(float("nan"), float("nan"))
    assert not same(MISSING, None) and same(MISSING, MISSING)
    assert not same({"a": 1}, {"a": 1})  # other types only as the same object


def test_a_choice_replays_where_its_reads_hold_and_is_worked_out_where_they_do_not():
    log, shape, group = Decisions(), {}, {}

    def choose():  # reads a per-shape value (decided here when absent) and writes the group's answer
        seen = log.read(shape, "k")
        v = log.write(shape, "k", 3) if seen is MISSING else seen
        return log.write(group, "g", v + 1)

    assert log.replay("g") is MISSING  # nothing kept yet
    assert log.record("g", choose) == 4 and log.recorded == 1
    shape.clear(), group.clear()  # a new task: nothing decided
    assert log.replay("g") == 4 and (shape, group) == ({"k": 3}, {"g": 4}) and log.replayed == 1
    shape.clear(), group.clear()
    shape["k"] = 7  # another group of the shape decided first: the kept answer no longer holds
    assert log.replay("g") is MISSING and log.refused == 1 and group == {}
    assert log.record("g", choose) == 8  # worked out, and its log replaces the old one
    assert log.replay("g") == 8 and log.replayed == 2


def _groups(topo):
    gpn = topo.gpus_per_node
    nodes = topo.node_count
    return [tuple(range(n * gpn, (n + 1) * gpn)) for n in range(nodes)] + [
        tuple(range(0, nodes * gpn, gpn)), tuple(range(1, nodes * gpn, gpn)), tuple(range(0, 4 * gpn, 2))]


@pytest.mark.parametrize("system", ["superpod-h100", "h100"])
def test_choices_replayed_in_a_later_task_are_those_worked_out_afresh(monkeypatch, system):
    """Tasks on one set of caches, forget_order between them: the later tasks replay the earlier's choices
    (counted), and every choice equals a fresh expander's (no caches) and that of working every one out."""
    topo = load_system(system, 8)
    caches = CollectiveCaches(topo)
    sizes = (2.0**12, 2.0**20, 2.0**30)
    tasks = [[(op, g, v) for g in _groups(topo) for v in sizes] for op in ("AllReduce", "ReduceScatter")]
    tasks.append(list(reversed(tasks[0])))  # the same groups met in the other order
    answers = []
    for task in tasks * 2:
        caches.forget_order()
        exp = Expander(topo, caches=caches)
        answers.append([exp.choose(op, g, v) for op, g, v in task])
    log = caches.expansions(Expander(topo).rates).decisions
    assert log.replayed > 0 and log.recorded > 0
    fresh = [[Expander(topo).choose(op, g, v) for op, g, v in task] for task in tasks * 2]
    assert answers == fresh
    monkeypatch.setattr(Choice, "replay", False)
    worked = []
    off = CollectiveCaches(topo)
    for task in tasks * 2:
        off.forget_order()
        exp = Expander(topo, caches=off)
        worked.append([exp.choose(op, g, v) for op, g, v in task])
    assert worked == answers and off.expansions(Expander(topo).rates).decisions.replayed == 0


def test_a_replay_writes_what_working_the_choice_out_writes():
    """After a replay the per-shape stores hold what working the choice out leaves there, value for value."""
    topo = load_system("superpod-h100", 8)
    group = tuple(range(0, 64, 8))
    stores = []
    for replay in (True, False):
        caches = CollectiveCaches(topo)
        Expander(topo, caches=caches).choose("AllReduce", group, 2.0**26)
        caches.forget_order()
        Choice.replay = replay
        try:
            Expander(topo, caches=caches).choose("AllReduce", group, 2.0**26)
        finally:
            Choice.replay = True
        shared = caches.expansions(Expander(topo).rates)
        stores.append((dict(shared.choice), dict(shared.chosen), dict(shared.settings),
                       {k: v for k, v in shared.by_shape.items() if k[0] in ("channels", "available", "estimate")}))
        assert shared.decisions.replayed == (1 if replay else 0)
    assert all(same(tuple(a.items()), tuple(b.items())) for a, b in zip(*stores))


def test_the_logs_kept_are_dropped_past_their_budget(monkeypatch):
    from p2sim.collectives import decisions

    log, store = Decisions(), {}
    monkeypatch.setattr(decisions, "DECISIONS_BYTES", 40 * 8 + 200 * 2)  # one log of a group of 8 and 2 events
    group = ("AllReduce", tuple(range(8)), 1.0)
    assert log.record(group, lambda: log.write(store, "k", 1)) == 1 and log.held == 40 * 8 + 200
    other = ("AllReduce", tuple(range(8, 16)), 1.0)
    log.record(other, lambda: log.write(store, "j", 2) + log.write(store, "i", 3))  # past the budget: all dropped
    assert list(log.kept) == [other] and log.held == 40 * 8 + 400
    log.clear()
    assert not log.kept and log.held == 0
