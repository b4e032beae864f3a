from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from p2sim.formalism.hierarchy import Order
from p2sim.measurements.duplicates import dedupe_programs
from p2sim.measurements.program_rows import CSV_COLUMNS, load_measurements
from p2sim.util.errors import MeasurementError

DATA = Path(__file__).resolve().parents[1] / "validation" / "data"
CSV = DATA / "measurements_2node.csv"


def test_p2_table_loads():
    rows = load_measurements(CSV)
    assert len(rows) == 60
    r = rows[0]
    assert (r.system, r.nodes, r.axes, r.reduce_axes, r.matrix, r.algo) == ("a100", 2, (32,), (0,), ((2, 16),), "ring")
    assert r.bytes_per_gpu == 2**29 * 2 * 4 and r.allreduce_s == 4.74 and r.programs_better == 9
    assert len({r.group for r in rows}) == 32
    assert len(load_measurements(DATA)) == 60  # a directory reads every file in it
    # P2 lowered through XLA: its rows are predicted with the p2 device order
    assert {r.order for r in rows} == {"p2"} and "P2's CSV" in r.order_from


def test_a_rows_order_is_parsed_once_where_it_is_read(tmp_path):
    """The reader kept the order as text, which the prediction parsed again: it is an Order from the reader on,
    in the row, its group key, and the task predicting it; text only where it is written out."""
    rows = load_measurements(CSV)
    assert all(r.order is Order.P2 and r.group[-1] is Order.P2 for r in rows)
    assert rows[0].ident()["order"] == "p2" and json.dumps(rows[0].ident())  # JSON: the text
    f = _log(tmp_path, [_rec("AllReduce(slice=0, Inside)", 1.0, order="P2"), _rec("AllReduce(slice=0, Inside)", 2.0)])
    assert [r.order for r in load_measurements(f)] == [Order.P2, Order.ALIGNED]
    assert all(type(r.order) is Order for r in load_measurements(f))


def test_a_repeated_rows_message_names_its_order_as_text():
    row = load_measurements(CSV)[0]
    with pytest.raises(MeasurementError, match=r", p2 order\) with other figures"):
        dedupe_programs([row, dataclasses.replace(row, line=99, optimal_s=row.optimal_s * 2)])


def test_csv_order_column(tmp_path):
    f = tmp_path / "o.csv"
    lines = CSV.read_text().splitlines()
    f.write_text("\n".join([lines[0] + ",order", lines[1] + ",aligned", lines[2] + ",XLA"]) + "\n")
    with pytest.raises(MeasurementError) as e:
        load_measurements(f)
    assert str(e.value) == f"{f}:3: order: 'XLA' is not one of aligned, p2"
    f.write_text("\n".join([lines[0] + ",order", lines[1] + ",aligned", lines[2] + ","]) + "\n")
    a, b = load_measurements(f)
    assert (a.order, b.order) == ("aligned", "p2") and a.order_from == "the file's order column"


def _edit(tmp_path, old, new, count=1):
    text = CSV.read_text().replace(old, new, count)
    f = tmp_path / "m.csv"
    f.write_text(text)
    return f


@pytest.mark.parametrize(
    ("old", "new", "where"),
    [
        ("optimal_s,", "best_s,", ":1: optimal_s: missing column"),
        ("4.74,3.18", "4.74,fast", ":2: optimal_s: 'fast' is not a number"),
        ("4.74,3.18", "-4.74,3.18", ":2: allreduce_s: '-4.74' must be positive"),
        ("A100,2,16,32", "Z100,2,16,32", ":2: gpu: unknown system 'z100'"),
        ("[[2 16]]", "[[4 8]]", ":2: matrix"),
        ("[[2 16]]", "[[2 16", ":2: matrix"),
        ("A100,2,16,32,0,", "A100,2,16,32,3,", ":2: reduce_axes"),
        ("A100,2,16,32", "A100,2,8,32", ":2: gpus_per_node"),
        (",ring,4.74", ",mesh,4.74", ":2: algo"),
        (",47,1073741824,\n", ",47\n", ":2: floats_per_gpu: missing value"),
        (",47,1073741824,\n", ",47,1073741824,,extra\n", ":2: line: more fields"),
    ],
)
def test_bad_csv_names_file_line_and_field(tmp_path, old, new, where):
    f = _edit(tmp_path, old, new)
    with pytest.raises(MeasurementError) as e:
        load_measurements(f)
    assert str(e.value).startswith(str(f) + where)


def _log(tmp_path, records):
    f = tmp_path / "run.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in records))
    return f


def _rec(program, seconds, **kw):
    base = {"system": "a100", "nodes": 2, "axes": [2, 16], "reduce_axes": [1], "matrix": [[1, 2], [2, 8]],
            "program": program, "algo": "ring", "bytes": 2**20, "seconds": seconds, "pass": True}
    base.update(kw)
    return base


def test_jsonl_logs_group_programs_and_take_medians(tmp_path):
    blue = "ReduceScatter(slice=1, Inside) ; AllReduce(slice=1, Parallel(0)) ; AllGather(slice=1, Inside)"
    f = _log(tmp_path, [_rec("AllReduce(slice=0, Inside)", s) for s in (3.0, 1.0, 2.0)]
             + [_rec(blue, s) for s in (1.0, 1.5)] + [_rec(blue, 0.1, **{"pass": False})])
    (row,) = load_measurements(f)
    assert row.allreduce_s == 2.0 and row.optimal_s == 1.25
    assert dict(row.programs)[blue] == 1.25  # the failed run is ignored
    assert row.programs_better == 1 and row.speedup == pytest.approx(1.6)


@pytest.mark.parametrize(
    ("record", "where"),
    [
        ("{not json", ":1: record: not valid JSON"),
        (json.dumps({k: v for k, v in _rec("x", 1.0).items() if k != "seconds"}), ":1: seconds: missing"),
        (json.dumps(_rec("AllReduce(slice=0, Inside)", "slow")), ":1: seconds"),
        (json.dumps(_rec("AllReduce(slice=0, Inside)", 1.0, system="tpu")), ":1: system: unknown system"),
        (json.dumps(_rec("AllReduce(slice=0, Inside)", 1.0, order="xla")), ":1: order: 'xla' is not one of"),
    ],
)
def test_bad_logs(tmp_path, record, where):
    f = tmp_path / "bad.jsonl"
    f.write_text(record + "\n")
    with pytest.raises(MeasurementError) as e:
        load_measurements(f)
    assert str(e.value).startswith(str(f) + where)


def test_missing_and_empty(tmp_path):
    with pytest.raises(MeasurementError, match="no such measurement file"):
        load_measurements(tmp_path / "none.csv")
    (tmp_path / "d").mkdir()
    with pytest.raises(MeasurementError, match="no .csv or .jsonl"):
        load_measurements(tmp_path / "d")
    empty = tmp_path / "e.csv"
    empty.write_text(",".join(CSV_COLUMNS) + "\n")
    with pytest.raises(MeasurementError, match="no measurements"):
        load_measurements(empty)


def test_log_orders_group_apart_and_default_to_aligned(tmp_path):
    ar = "AllReduce(slice=0, Inside)"
    f = _log(tmp_path, [_rec(ar, 1.0), _rec(ar, 2.0, order="aligned"), _rec(ar, 3.0, order="p2")])
    a, p = load_measurements(f)
    assert (a.order, a.allreduce_s, p.order, p.allreduce_s) == ("aligned", 1.5, "p2", 3.0)
    assert a.group != p.group and p.order_from == "recorded by bench_nccl"
    (old,) = load_measurements(_log(tmp_path, [_rec(ar, 1.0)]))
    assert old.order == "aligned" and old.order_from.startswith("not recorded")


def test_directory_with_csv_and_log(tmp_path):
    shutil.copy(CSV, tmp_path / "p2.csv")
    _log(tmp_path, [_rec("AllReduce(slice=0, Inside)", 1.0)])
    assert len(load_measurements(tmp_path)) == 61
