"""p2sim.measurements.program_predict: one configuration task per measured configuration."""

from __future__ import annotations

from pathlib import Path

from p2sim.formalism.hierarchy import Order
from p2sim.measurements.program_predict import P2, group_task, groups_of
from p2sim.measurements.program_rows import load_measurements
from p2sim.topology import find_spec

CSV = Path(__file__).resolve().parents[1] / "validation" / "data" / "measurements_2node.csv"


def test_a_groups_task_carries_the_rows_order_and_settings_as_read():
    """The task's order is the row's Order itself, not its text parsed again."""
    groups = groups_of(load_measurements(CSV))
    key, rows = next(iter(groups.items()))
    task = group_task(key, find_spec(key[0]), "analytic", False, rows)
    assert task.settings.order is rows[0].order is Order.P2
    assert (task.settings.algo, task.settings.engine, task.settings.rules) == (rows[0].algo, "analytic", P2)
    assert task.matrices == tuple(dict.fromkeys(r.matrix for r in rows))
