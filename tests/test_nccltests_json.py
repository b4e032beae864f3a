"""nccl-tests' JSON output (-J) as measurements: the rows of its text log, and every malformed case."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from p2sim.measurements.nccltests import is_nccltests_log, parse_nccltests, read_nccltests
from p2sim.util.errors import MeasurementError

DATA = Path(__file__).resolve().parent / "data" / "nccltests"
MPI = DATA / "all_reduce_perf_mpi_2x8.json"


def fails(data, name: str, match: str, **kw) -> str:
    with pytest.raises(MeasurementError) as e:
        parse_nccltests(data, name, system=kw.pop("system", "dgx-h100"), **kw)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(name + ":"), msg
    assert match in msg, msg
    return msg


def edited(path: Path, change) -> str:
    doc = json.loads(path.read_text())
    change(doc)
    return json.dumps(doc)


def _printed_unit(us: float) -> float:
    """The last printed digit of nccl-tests' 7-wide time (getFloatStr in src/util.cu)."""
    return 0.01 if us < 9999.995 else 0.1 if us < 99999.95 else 1.0


@pytest.mark.parametrize("stem, collective, nodes, per_node, groups", [
    ("all_reduce_perf_mpi_2x8", "AllReduce", 2, 8, 1),  # 16 MPI processes: 16 device records
    ("all_gather_perf_g8_iter", "AllGather", 1, 8, 1),  # one process, -g 8: one record; -I 1, -c 0
    ("all_reduce_perf_split_and7_2x8", "AllReduce", 2, 1, 8),  # NCCL_TESTS_SPLIT="AND 0x7"
])
def test_json_and_text_of_one_run_agree(stem, collective, nodes, per_node, groups):
    js = read_nccltests(DATA / f"{stem}.json", system="dgx-h100")
    tx = read_nccltests(DATA / f"{stem}.txt", system="dgx-h100")
    assert len(js) == len(tx) > 0
    same = ("system", "nodes", "gpus_per_node", "collective", "algo", "proto", "size_bytes", "in_place", "gpu", "hca",
            "concurrent_groups", "rank_places", "split")
    for j, t in zip(js, tx):
        assert [getattr(j, f) for f in same] == [getattr(t, f) for f in same]
        # the text prints the JSON's time (six decimals) to two: they agree to the printed digit
        assert abs(j.seconds - t.seconds) * 1e6 <= _printed_unit(t.seconds * 1e6) / 2 + 1e-6
    assert {(r.collective, r.nodes, r.gpus_per_node, r.groups) for r in js} == {(collective, nodes, per_node, groups)}
    assert {r.ident for r in js} == {f"{stem}.json"}
    # a JSON row's line is its record's place in "results" (the 0-byte records give no rows)
    doc = json.loads((DATA / f"{stem}.json").read_text())
    assert [doc["results"][r.line - 1]["size"] for r in js] == [r.size_bytes for r in js]
    assert [doc["results"][r.line - 1]["in_place" if r.in_place else "out_of_place"]["time"] * 1e-6
            for r in js] == [pytest.approx(r.seconds, rel=1e-12) for r in js]


def test_json_file_versions():
    # version 1 (nccl-tests 2.17.3): "average_bus_bandwidith", no per-iteration keys; one process, -g 4
    rows = read_nccltests(DATA / "reduce_scatter_perf_v1.json", system="h100")
    assert {(r.collective, r.nodes, r.gpus_per_node, r.algo) for r in rows} == {("ReduceScatter", 1, 4, "auto")}
    assert len(rows) == 2 * 15  # 1 KiB .. 16 MiB
    # the writer's NCCL_ALGO reaches the rows from "env", as the text's NCCL INFO line does
    assert {r.algo for r in read_nccltests(MPI, system="dgx-h100")} == {"ring"}
    # -C 1: "cpu_time" where the time goes, as the text's "cputime" column
    cpu = MPI.read_text().replace('"time":', '"cpu_time":')
    assert [r.seconds for r in parse_nccltests(cpu, "c.json", system="h")] == \
        [r.seconds for r in read_nccltests(MPI, system="h")]


def test_sniffing_json(tmp_path):
    for p in DATA.glob("*.json"):
        assert is_nccltests_log(p)
    pretty = tmp_path / "pretty.json"
    pretty.write_text(json.dumps(json.loads(MPI.read_text()), indent=2))  # through jq, say
    assert is_nccltests_log(pretty)
    assert [r.seconds for r in read_nccltests(pretty, system="h")] == [r.seconds for r in read_nccltests(MPI, system="h")]
    (tmp_path / "sweep.jsonl").write_text('{"kind": "sweep", "system": "h100"}\n')
    (tmp_path / "other.json").write_text('{"version": 2, "results": []}')
    assert not is_nccltests_log(tmp_path / "sweep.jsonl") and not is_nccltests_log(tmp_path / "other.json")


def _drop(doc, *path):
    obj = doc
    for k in path[:-1]:
        obj = obj[k]
    del obj[path[-1]]


def _set(doc, value, *path):
    obj = doc
    for k in path[:-1]:
        obj = obj[k]
    obj[path[-1]] = value


def test_malformed_json_is_one_message_naming_the_field():
    raw = MPI.read_text()
    fails(raw[: len(raw) // 2], "x.json", "x.json:1: JSON: the file ends before its object closes")
    fails(raw.replace('"alg_bw":', '"alg_bw":inf,"x":', 1), "x.json", "(nccl-tests writes an infinite figure as inf")
    fails(raw.encode().replace(b"dgx-h100-02", b"dgx-h100-\xff2", 1), "x.json", "x.json:1: encoding: byte 0xff at column")
    fails('{"kind": "sweep"}', "x.json", "x.json: JSON: not nccl-tests' JSON output")
    cases = [
        (lambda d: _drop(d, "config"), "x.json: config: missing (nccl-tests' run record expected"),
        (lambda d: _set(d, [], "config", "devices"), "x.json: config.devices: empty"),
        (lambda d: _set(d, 3, "config", "devices", 1, "rank"),
         "x.json: config.devices[1].rank: 3, but process 1 of 1 rank(s) each (nthreads x ngpus) starts at rank 1"),
        (lambda d: _set(d, "8", "config", "ngpus"), "x.json: config.ngpus: '8' is not a GPU count"),
        (lambda d: _set(d, "mpirun", "args", 0), "x.json: args: cannot tell which nccl-tests program wrote this file"),
        (lambda d: _set(d, "/x/scatter_perf", "args", 0),
         "x.json: args: scatter_perf (args[0] '/x/scatter_perf') is not one of the collectives p2sim models"),
        (lambda d: _drop(d, "out_of_bounds"), "x.json: out_of_bounds: missing: the run stopped before"),
        (lambda d: _set(d, 3, "out_of_bounds", "count"), "x.json: out_of_bounds.count: 3: nccl-tests found wrong"),
        (lambda d: _set(d, "abc", "results", 4, "size"), "x.json: results[4].size: 'abc' is not a whole number"),
        (lambda d: _set(d, "nan", "results", 4, "in_place", "time"),
         "x.json: results[4].in_place.time: 'nan' is not a valid value"),
        (lambda d: _drop(d, "results", 4, "in_place"), "x.json: results[4].in_place: missing (a record cut short?)"),
        (lambda d: _drop(d, "results", 4, "in_place", "bus_bw"), "x.json: results[4].in_place.bus_bw: missing"),
        (lambda d: _set(d, 5.0, "results", 20, "out_of_place", "nwrong"),
         "x.json: results[20].out_of_place.nwrong: 5.0 wrong elements"),
        (lambda d: _set(d, 1.0, "results", 20, "out_of_place", "bus_bw"),
         "x.json: results[20].out_of_place.bus_bw: 1.0 GB/s is not algbw x 1.875"),
        (lambda d: _set(d, "none", "results", 20, "redop"), "x.json: results[20].redop: 'none' does not fit AllReduce"),
        (lambda d: _set(d, "int3", "results", 20, "type"), "x.json: results[20].type: 'int3' is not an nccl-tests"),
        (lambda d: _set(d, 7, "results", 20), "x.json: results[20]: 7 is not a result record"),
    ]
    for change, match in cases:
        fails(edited(MPI, change), "x.json", match)


def test_split_json_checks_its_env_against_the_groups():
    split = DATA / "all_reduce_perf_split_and7_2x8.json"
    bad = split.read_text().replace("NCCL_TESTS_SPLIT=AND 0x7", "NCCL_TESTS_SPLIT=AND 0x3")
    fails(bad, "s.json", "s.json: config.devices[4].group: rank 4 is in group 4, but NCCL_TESTS_SPLIT=AND 0x3 (env) "
          "puts its process 4 in group 0")
    # groups of two shapes: rank 15 joins group 6
    two = edited(split, lambda d: _set(d, 6, "config", "devices", 15, "group")).replace("NCCL_TESTS_SPLIT=", "X=")
    fails(two, "s.json", "s.json: config.devices[6].group: group 6 runs different rank counts on its hosts")
