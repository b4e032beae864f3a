"""validation/logs/: the full-range nccl-tests logs parse, map to shipped systems and name their sources;
benchmarks/ramp.py's size classes and halves."""

from __future__ import annotations

import csv
import importlib.util
import sys
from pathlib import Path

import pytest

from p2sim.measurements.inputs import LOG_MAPPING, load_inputs
from p2sim.measurements.nccltests import parse_nccltests
from p2sim.topology import find_spec

ROOT = Path(__file__).resolve().parent.parent
LOGS = ROOT / "validation" / "logs"
LOG_FILES = sorted(p for p in LOGS.iterdir() if p.suffix in (".txt", ".log", ".out"))


def _ramp():
    """benchmarks/ramp.py as a module (the benchmarks folder is no package; ramp imports _measure beside it)."""
    if "ramp_benchmark" in sys.modules:
        return sys.modules["ramp_benchmark"]
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        spec = importlib.util.spec_from_file_location("ramp_benchmark", ROOT / "benchmarks" / "ramp.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod  # its dataclasses look their module up while being built
        spec.loader.exec_module(mod)
        return mod
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


def _mapping() -> dict[str, dict[str, str]]:
    with (LOGS / LOG_MAPPING).open(newline="", encoding="utf-8") as f:
        return {rec["file"]: rec for rec in csv.DictReader(f)}


def test_there_are_logs_and_every_log_is_mapped_to_a_shipped_system():
    assert len(LOG_FILES) >= 2
    mapping = _mapping()
    assert sorted(mapping) == [p.name for p in LOG_FILES]
    for rec in mapping.values():
        assert find_spec(rec["system"]).name == rec["system"]  # a shipped system, by its catalogue name


@pytest.mark.parametrize("path", LOG_FILES, ids=lambda p: p.name)
def test_each_log_parses_with_every_size_from_8_bytes_doubling(path):
    rows = [r for r in load_inputs(LOGS).collectives if Path(r.source).name == path.name]
    sizes = sorted({r.size_bytes for r in rows})
    assert sizes[0] <= 1024 and sizes[-1] >= 2**30  # full range: from 1 KiB or less to GiBs
    assert all(b == 2 * a for a, b in zip(sizes, sizes[1:]))  # no size missing between them
    assert len(rows) == 2 * len(sizes)  # out of place and in place at each size
    assert {r.nodes for r in rows} == {2} and {r.system for r in rows} == {_mapping()[path.name]["system"]}
    ramp = _ramp()
    assert ramp.is_full_range(rows)


def test_the_sources_file_names_a_source_for_every_log():
    text = (LOGS / "SOURCES.md").read_text(encoding="utf-8")
    table = [line for line in text.splitlines() if line.startswith("| `")]
    named = {line.split("`")[1]: line for line in table}
    assert sorted(named) == [p.name for p in LOG_FILES]
    for line in named.values():
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert len(cells) == 9 and all(cells), line  # source, hardware, nodes, transport, NCCL, ... all filled
        assert "github.com" in cells[1] or "@" in cells[1]  # a URL or a repository path@commit


_TINY = """# nThread 1 nGpus 1 minBytes 1024 maxBytes 134217728 step: 1024(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#  Rank  0 Group  0 Pid   1 on node0 device  0 [0x07] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid   2 on node1 device  0 [0x07] NVIDIA H100 80GB HBM3
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
        1024           256     float     sum      -1    20.00    0.05    0.05      0    20.00    0.05    0.05      0
       65532         16383     float     sum      -1    30.00    2.18    2.18      0    30.00    2.18    2.18      0
       65536         16384     float     sum      -1    30.00    2.18    2.18      0    30.00    2.18    2.18      0
    67108860      16777215     float     sum      -1   2000.0   33.55   33.55      0   2000.0   33.55   33.55      0
    67108864      16777216     float     sum      -1   2000.0   33.55   33.55      0   2000.0   33.55   33.55      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 10
"""


def test_size_classes_split_at_64_kib_and_64_mib_on_a_tiny_log():
    ramp = _ramp()
    rows = parse_nccltests(_TINY, "all_reduce_perf.txt", system="dgx-h100")
    got = {int(r.size_bytes): ramp.ramp_class(r.size_bytes) for r in rows}
    # issue 33: small < 64 KiB, medium 64 KiB - 64 MiB, large from 64 MiB
    assert got == {1024: "small", 65532: "small", 65536: "medium", 67108860: "medium", 67108864: "large"}
    assert ramp.is_full_range(rows)
    assert not ramp.is_full_range([r for r in rows if r.size_bytes < 2**26])


def test_halves_alternate_the_distinct_sizes_and_keep_both_placements_together():
    ramp = _ramp()
    rows = parse_nccltests(_TINY, "all_reduce_perf.txt", system="dgx-h100")
    fit, held = ramp.halves(rows)
    assert sorted({int(r.size_bytes) for r in fit}) == [1024, 65536, 67108864]
    assert sorted({int(r.size_bytes) for r in held}) == [65532, 67108860]
    assert len(fit) + len(held) == len(rows) and len(fit) == 6


def test_score_reports_the_median_spread_and_the_row_farthest_from_one():
    ramp = _ramp()
    s = ramp.score([(8.0, 2.0), (16.0, 0.25), (32.0, 1.0)])
    assert s.rows == 3 and s.median == pytest.approx(1.0) and s.worst == pytest.approx(0.25) and s.worst_size == 16.0
    assert ramp.score([]) is None
