from __future__ import annotations

import json
import re
from collections import Counter

import pytest

from p2sim.formalism.hierarchy import Lowering
from p2sim.formalism.placement import Placement
from p2sim.formalism.program import parse_program

from .test_cli import BLUE, run

TRACK = re.compile(r"^step (\d+): (\w+) group (\d+) \[GPUs ([\d,-]+)\]$")


def _expand(ranges: str) -> list[int]:
    out: list[int] = []
    for part in ranges.split(","):
        a, _, b = part.partition("-")
        out += list(range(int(a), int(b or a) + 1))
    return out


def _trace(capsys, tmp_path, *argv: str) -> tuple[dict, list[dict]]:
    path = tmp_path / "t.json"
    rc, out, err = run(capsys, "simulate", *argv, "--json", "--trace", str(path))
    assert rc == 0, err
    return json.loads(out), json.loads(path.read_text())["traceEvents"]


def test_tracks_are_named_by_step_and_group_with_their_gpus(capsys, tmp_path):
    doc, events = _trace(capsys, tmp_path, "--system", "a100", "--axes", "2,16", "--reduce", "1",
                         "--matrix", "[[1 2] [2 8]]", "--program", BLUE, "--bytes", "1GiB")
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["name"] == "thread_name"}
    lowered = Lowering.of(Placement.of((2, 16), (2, 16), ((1, 2), (2, 8))), [1]).lower(parse_program(BLUE))
    assert len(names) == sum(len(s.groups) for s in lowered)  # 4 + 16 + 4 tracks
    (prog,) = doc["programs"]
    for (pid, tid), name in names.items():
        m = TRACK.match(name)
        assert m, name
        n, op, g = int(m[1]), m[2], int(m[3])
        assert op == lowered[n - 1].op.value == prog["steps"][n - 1]["op"]
        assert tuple(_expand(m[4])) == lowered[n - 1].groups[g - 1]
        spans = [e for e in events if e["ph"] == "X" and (e["pid"], e["tid"]) == (pid, tid)]
        assert {e["args"]["step"] for e in spans} == {n} and {e["args"]["group"] for e in spans} == {g}
    # the middle step (Parallel(0)) pairs one GPU of each node
    assert all(len({d // 16 for d in g}) == 2 for g in lowered[1].groups)
    # every step ends when its last group's transfer ends
    offset = 0.0
    for n, step in enumerate(prog["steps"], 1):
        ends = [e["ts"] + e["dur"] for e in events if e["ph"] == "X" and e["args"]["step"] == n]
        assert max(ends) == pytest.approx((offset + step["seconds"]) * 1e6)
        offset += step["seconds"]


def test_track_ids_are_unique_across_programs(capsys, tmp_path):
    doc, events = _trace(capsys, tmp_path, "--system", "h100", "--nodes", "1", "--axes", "8", "--program", "all")
    assert len(doc["programs"]) == 3
    tids = [e["tid"] for e in events if e["name"] == "thread_name"]
    assert len(tids) == len(set(tids)) == sum(len(p["steps"]) for p in doc["programs"])  # one group per step
    processes = Counter(e["args"]["name"].split(":")[0] for e in events if e["name"] == "process_name")
    assert processes == Counter({"links (bytes/s)": 1, "program 1": 1, "program 2": 1, "program 3": 1})


def test_analytic_trace_is_refused_and_nothing_written(capsys, tmp_path):
    path = tmp_path / "t.json"
    rc, out, err = run(capsys, "simulate", "--system", "h100", "--nodes", "1", "--axes", "8", "--engine", "analytic",
                       "--trace", str(path))
    assert rc == 2 and out == "" and len(err.splitlines()) == 1 and "--engine des" in err
    assert not path.exists()
