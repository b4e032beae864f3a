"""nccl-tests logs as measurements: the layouts of nccl-tests 2.x, and every malformed case."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from p2sim.collectives.busbw import bus_factor
from p2sim.measurements.nccltests import is_nccltests_log, parse_nccltests, read_nccltests
from p2sim.util.errors import MeasurementError

DATA = Path(__file__).resolve().parent / "data" / "nccltests"
ONE = DATA / "all_reduce_perf_1node_h100.txt"
TWO = DATA / "all_reduce_perf_2node_h100.txt"


def text(path: Path) -> str:
    return path.read_text()


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


def line_of(src: list[str], needle: str) -> int:
    return next(i for i, x in enumerate(src, 1) if needle in x)


def fails(data, name: str, match: str, **kw) -> str:
    with pytest.raises(MeasurementError) as e:
        parse_nccltests(data, name, system=kw.pop("system", "h100"), **kw)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(name + ":"), msg
    assert match in msg, msg
    return msg


@pytest.mark.parametrize("name, collective, nodes, per_node, sizes, algo, gpu", [
    ("all_reduce_perf_1node_h100.txt", "AllReduce", 1, 8, 13, "auto", "NVIDIA H100 80GB HBM3"),
    ("all_reduce_perf_2node_h100.txt", "AllReduce", 2, 8, 11, "ring", "NVIDIA H100 80GB HBM3"),
    ("all_gather_perf_v100_nccl28.txt", "AllGather", 1, 8, 11, "auto", "Tesla V100-SXM2-16GB"),  # + one 0 B row
    ("reduce_scatter_perf_v100.log", "ReduceScatter", 1, 8, 8, "auto", "Tesla V100-SXM2-16GB"),
    ("broadcast_perf_2node.txt", "Broadcast", 2, 8, 7, "auto", "NVIDIA H100 80GB HBM3"),
    ("reduce_perf_1node_h100.txt", "Reduce", 1, 8, 6, "auto", "NVIDIA H100 80GB HBM3"),
])
def test_every_layout_reads(name, collective, nodes, per_node, sizes, algo, gpu):
    path = DATA / name
    assert is_nccltests_log(path)
    rows = read_nccltests(path, system="h100")
    assert len(rows) == 2 * sizes
    assert [r.in_place for r in rows] == [False, True] * sizes
    assert {(r.collective, r.nodes, r.gpus_per_node, r.algo, r.proto, r.gpu, r.system, r.ident)
            for r in rows} == {(collective, nodes, per_node, algo, "auto", gpu, "h100", name)}
    assert all(r.origin == str(path) and r.source == str(path) for r in rows)
    n = nodes * per_node
    src = lines(path)
    for r in rows:
        # every row is the line it came from: size and time as printed, busbw = size / time x bus factor
        tok = src[r.line - 1].split("<stdout>:")[-1].split()
        assert float(tok[0]) == r.size_bytes
        assert float(tok[-4 if r.in_place else -8]) * 1e-6 == pytest.approx(r.seconds, rel=1e-12)
        assert r.busbw == pytest.approx(r.size_bytes / r.seconds * bus_factor(collective, n), rel=1e-12)
        printed = float(tok[-2 if r.in_place else -6]) * 1e9
        if r.algbw >= 1e9:
            assert r.busbw == pytest.approx(printed, rel=0.01)


def test_figures_by_hand():
    rows = read_nccltests(ONE, system="h100")
    last = rows[-2]  # 128 MiB out of place: 692.84 us on 8 ranks
    assert (last.size_bytes, last.seconds) == (134217728.0, pytest.approx(692.84e-6))
    assert last.algbw / 1e9 == pytest.approx(134217728 / 692.84e-6 / 1e9)  # 193.72 GB/s
    assert last.busbw / 1e9 == pytest.approx(193.72 * 1.75, rel=1e-4)  # 2 (n - 1) / n = 1.75
    ag = read_nccltests(DATA / "all_gather_perf_v100_nccl28.txt", system="v100")
    assert ag[0].size_bytes == 32.0  # 1 float per rank x 8 ranks; the 0-byte row before it is skipped
    assert ag[-1].busbw / 1e9 == pytest.approx(33554432 / 257.1e-6 / 1e9 * 7 / 8)


def test_collective_from_the_log_the_command_line_the_file_name_or_the_argument():
    # the 2-node log names all_reduce_perf only on its mpirun line; any file name works
    assert parse_nccltests(text(TWO), "x.txt", system="h100")[0].collective == "AllReduce"
    # the old reduce_scatter log names nothing: its file name does
    rs = text(DATA / "reduce_scatter_perf_v100.log")
    fails(rs, "results.txt", "cannot tell which nccl-tests program")
    assert parse_nccltests(rs, "rs.txt", system="v100", collective="ReduceScatter")[0].collective == "ReduceScatter"
    assert parse_nccltests(rs, "run_reducescatter_8gpu.txt", system="v100")[0].collective == "ReduceScatter"
    # a wrong name is caught by the rows: an AllGather table read as AllReduce
    msg = fails(text(DATA / "all_gather_perf_v100_nccl28.txt"), "x.txt", "count:", collective="AllReduce")
    assert f":{line_of(lines(DATA / 'all_gather_perf_v100_nccl28.txt'), '          32             1')}: count:" in msg
    # ReduceScatter and AllReduce have the same columns; the counts tell them apart
    fails(rs, "all_reduce_perf.txt", "count:")
    # programs p2sim does not model
    fails(text(ONE).replace("Collective test starting: all_reduce_perf", "Collective test starting: scatter_perf"),
          "a.txt", "scatter_perf ('Collective test starting: scatter_perf') is not one of")
    # alltoall is modelled now, and its count (per peer: size / ranks / 4) tells an AllReduce table apart
    fails(text(ONE).replace("Collective test starting: all_reduce_perf", "Collective test starting: alltoall_perf"),
          "a.txt", "count:")


def test_several_runs_of_one_collective_and_mixed_collectives():
    two = text(ONE) + "\n==== second case ====\n" + text(ONE)
    rows = parse_nccltests(two, "cases.txt", system="h100")
    assert len(rows) == 52 and {r.ident for r in rows} == {"cases.txt#1", "cases.txt#2"}
    n = len(lines(ONE))
    assert rows[26].line == rows[0].line + n + 2  # an empty line and the banner between the runs
    mixed = text(ONE) + text(DATA / "reduce_perf_1node_h100.txt")
    header2 = n + line_of(lines(DATA / "reduce_perf_1node_h100.txt"), "#       size")
    msg = fails(mixed, "mixed.txt", "one collective per file")
    assert msg.startswith(f"mixed.txt:{header2}: collective: this table is Reduce")


def test_cut_logs():
    src = lines(ONE)
    row = line_of(src, "     2097152 ")
    fails("\n".join(src[:row]), "cut.txt", f"cut.txt:{row}: table: the table stops here")
    fails("\n".join(src[:row - 1] + [src[row - 1][:70]]), "cut.txt", f"cut.txt:{row}: table:")
    # a row cut short inside a complete table
    cut = src[:row - 1] + [src[row - 1][:70]] + src[row:]
    fails("\n".join(cut), "cut.txt", f"cut.txt:{row}: busbw (out-of-place): missing: the row has 7 fields, the header 13")
    fails("\n".join(src[:line_of(src, "Using devices")]), "head.txt", "no nccl-tests table")


def test_wrong_results():
    src = lines(ONE)
    row = line_of(src, "      524288 ")
    bad = src[:]
    bad[row - 1] = bad[row - 1][:-7] + "     12"
    fails("\n".join(bad), "w.txt", f"w.txt:{row}: #wrong (in-place): 12 wrong elements")
    bad = [x.replace("Out of bounds values : 0 OK", "Out of bounds values : 3 FAILED") for x in src]
    fails("\n".join(bad), "w.txt", f"w.txt:{line_of(src, 'Out of bounds')}: Out of bounds values: 3")
    # before nccl-tests 2.13: the largest deviation, wrong above 1e-5 x (ranks - 1) for float
    old = lines(DATA / "reduce_scatter_perf_v100.log")
    row = line_of(old, "       16384 ")
    ok, bad = old[:], old[:]
    ok[row - 1] = ok[row - 1][:-5] + "7e-05"
    bad[row - 1] = bad[row - 1][:-5] + "8e-05"
    assert parse_nccltests("\n".join(ok), "reduce_scatter_perf.txt", system="v100")
    fails("\n".join(bad), "reduce_scatter_perf.txt", f":{row}: error (in-place): 8e-05")
    # -c 0: nothing was checked, the times stand
    na = "\n".join(x.replace("      0\n", "    N/A\n") for x in [y + "\n" for y in src])
    assert len(parse_nccltests(na, "na.txt", system="h100")) == 26


def test_rank_lines():
    src = lines(ONE)
    header = line_of(src, "#       size")
    no_ranks = [x for x in src if "#  Rank" not in x]
    fails("\n".join(no_ranks), "r.txt", f"r.txt:{header - 8}: Rank: no '#  Rank N ... on HOST device D' lines")
    uneven = [x.replace("on dgx-h100-07 device  7", "on dgx-h100-08 device  7") for x in src]
    fails("\n".join(uneven), "r.txt", "hosts: the hosts run different rank counts (dgx-h100-07 7, dgx-h100-08 1)")
    twice = [x.replace("#  Rank  7 Group", "#  Rank  6 Group") for x in src]
    fails("\n".join(twice), "r.txt", "Rank: rank 6 is listed twice")
    # a split (NCCL_TESTS_SPLIT) into communicators of different shapes: 7 ranks and 1
    split = [x.replace("#  Rank  7 Group  0", "#  Rank  7 Group  1") for x in src]
    fails("\n".join(split), "r.txt", f"r.txt:{line_of(src, '#  Rank  7')}: Group: group 1 is 1 node x 1 rank but "
          "group 0 is 1 node x 7 ranks")


def test_bytes_that_are_not_utf8():
    data = ONE.read_bytes().replace(b"NVIDIA H100 80GB HBM3\n#  Rank  5", b"NVIDIA H100 \xe9GB\n#  Rank  5", 1)
    row = line_of(lines(ONE), "#  Rank  4")
    fails(data, "b.txt", f"b.txt:{row}: encoding: byte 0xe9 at column")


def test_launcher_prefixes_and_foreign_lines_are_skipped():
    plain = parse_nccltests(text(ONE), "a.txt", system="h100")
    labelled = "\n".join("0: " + x for x in lines(ONE))  # srun --label
    assert [(r.size_bytes, r.seconds) for r in parse_nccltests(labelled, "a.txt", system="h100")] == \
        [(r.size_bytes, r.seconds) for r in plain]
    noisy = text(ONE).replace("           8             2", "node:1:2 [0] NCCL INFO Channel 00/32 :    0   1\n"
                                                            "           8             2")
    assert len(parse_nccltests(noisy, "a.txt", system="h100")) == len(plain)


def test_per_iteration_and_timestamp_columns():
    # nccl-tests 2.19 with -I 1 -T 1 (util.cu writeResultHeader / writeBenchmarkLineBody / writePerIterReport)
    head = ("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %7s  %7s  %7s  %7s  %6s  %6s  %6s  %7s  %7s  %7s"
            "  %7s %*s" % ("size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "i_min",
                           "i_max", "i_p99", "i_cv%", "time", "algbw", "busbw", "#wrong", "i_min", "i_max", "i_p99",
                           "i_cv%", 19, "timestamp"))
    row = ("%12li  %12li  %8s  %6s  %6s" % (1048576, 262144, "float", "sum", "%6i" % -1)
           + "  %7s  %6s  %6s  %6g" % ("  20.00", " 52.43", " 91.75", 0) + "  %7s  %7s  %7s  %7s" % (
               "  19.10", "  24.80", "  24.80", "   6.10")
           + "  %7s  %6s  %6s  %6g" % ("  21.00", " 49.93", " 87.38", 0) + "  %7s  %7s  %7s  %7s" % (
               "  20.00", "  25.10", "  25.10", "   5.90") + "%21s" % "2026-03-02 10:11:12")
    ranks = "\n".join(f"#  Rank {r:2d} Group  0 Pid {100 + r:6d} on      node0 device {r:2d} [0000:{r:02x}:00] "
                      "NVIDIA H100 80GB HBM3" for r in range(8))
    log = (f"# Collective test starting: all_reduce_perf\n# Using devices\n{ranks}\n#\n{head}\n{row}\n"
           "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 89.565 \n")
    rows = parse_nccltests(log, "i.txt", system="h100")
    assert [(r.seconds * 1e6, r.in_place) for r in rows] == [(pytest.approx(20.0), False), (pytest.approx(21.0), True)]


def test_arguments_are_checked():
    fails(text(ONE), "a.txt", "collective: 'Allreduce' is not one of", collective="Allreduce")
    fails(text(ONE), "a.txt", "algo: 'Ring' is not one of", algo="Ring")
    assert {r.algo for r in parse_nccltests(text(TWO), "b.txt", system="h100", algo="tree")} == {"tree"}
    assert {r.proto for r in parse_nccltests(text(TWO).replace("NCCL_ALGO", "NCCL_PROTO"), "b.txt",
                                              system="h100")} == {"auto"}  # "Ring" is no protocol
    with pytest.raises(MeasurementError, match="none.txt: no such nccl-tests log"):
        read_nccltests(DATA / "none.txt", system="h100")


def test_sniffing(tmp_path):
    for p in DATA.iterdir():
        assert is_nccltests_log(p) == (p.suffix != ".py")
    (tmp_path / "a.csv").write_text("gpu,nodes\nA100,2\n")
    (tmp_path / "b.jsonl").write_text('{"system": "a100"}\n')
    (tmp_path / "c.bin").write_bytes(bytes(range(256)) * 4)
    assert not any(is_nccltests_log(tmp_path / n) for n in ("a.csv", "b.jsonl", "c.bin", "missing.txt"))
    (tmp_path / "tagged.out").write_text("[1,0]<stdout>:# nThread 1 nGpus 1 minBytes 8 maxBytes 8\n")
    assert is_nccltests_log(tmp_path / "tagged.out")


def _format_row(size: int, count: int, redop: str, root: int, times: tuple[float, float], bf: float) -> str:
    out = "%12li  %12li  %8s  %6s  %6s" % (size, count, "float", redop, "%6i" % root)
    for us in times:
        alg = size / us / 1e3
        out += "  %7.2f  %6.2f  %6.2f  %5g" % (us, alg, alg * bf, 0)
    return out


@settings(max_examples=40, deadline=None)
@given(coll=st.sampled_from(["AllReduce", "ReduceScatter", "AllGather", "Broadcast", "Reduce"]),
       nodes=st.integers(1, 4), per_node=st.sampled_from([1, 2, 4, 8]),
       counts=st.lists(st.integers(1, 1 << 22), min_size=1, max_size=6),
       times=st.lists(st.floats(1.0, 9999.0), min_size=2, max_size=2))
def test_rows_round_trip(coll, nodes, per_node, counts, times):
    """Whatever the collective and ranks, each printed row comes back with its size and time."""
    n = nodes * per_node
    scatter = coll in ("ReduceScatter", "AllGather")
    redop = "none" if coll in ("AllGather", "Broadcast") else "sum"
    root = 0 if coll in ("Broadcast", "Reduce") else -1
    ranks = "\n".join(f"#  Rank {r:2d} Group  0 Pid {r:6d} on {'host' + str(r // per_node):>10} device "
                      f"{r % per_node:2d} [0x{r:02x}] GPU" for r in range(n))
    head = ("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s" %
            ("size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw",
             "busbw", "#wrong"))
    body = [_format_row(c * 4 * (n if scatter else 1), c, redop, root, (round(times[0], 2), round(times[1], 2)),
                        bus_factor(coll, n)) for c in counts]
    log = "\n".join(["# Using devices", ranks, head, *body, "# Out of bounds values : 0 OK",
                     "# Avg bus bandwidth    : 1"])
    rows = parse_nccltests(log, "p.txt", system="s", collective=coll)
    assert [r.size_bytes for r in rows] == [float(c * 4 * (n if scatter else 1)) for c in counts for _ in (0, 1)]
    assert [r.seconds for r in rows] == [pytest.approx(round(t, 2) * 1e-6) for _ in counts for t in times]
    assert all((r.nodes, r.gpus_per_node) == (nodes, per_node) for r in rows)
    assert all(r.busbw == pytest.approx(r.algbw * bus_factor(coll, n)) for r in rows)


# split runs (NCCL_TESTS_SPLIT): nccl-tests colors each MPI process (src/common.cu run()),
# and the ranks of one "Group" form one communicator; all run the collective at once
SPLIT = {name: DATA / f"all_reduce_perf_split_{name}_2x8.txt" for name in ("and7", "div8", "mod2")}
PLACES = tuple((node, dev) for node in (0, 1) for dev in range(8))  # node-major: 8 ranks on each host


@pytest.mark.parametrize("name, spec, nodes, per_node, groups", [
    # AND 0x7 (= MOD 8): rank r and r + 8, one GPU of each node: 8 communicators over the network
    ("and7", "NCCL_TESTS_SPLIT=AND 0x7", 2, 1, tuple((c, c + 8) for c in range(8))),
    # DIV 8: one communicator per node
    ("div8", "NCCL_TESTS_SPLIT=DIV 8", 1, 8, (tuple(range(8)), tuple(range(8, 16)))),
    # MOD 2: even and odd ranks, 4 GPUs of each node
    ("mod2", "NCCL_TESTS_SPLIT=MOD 2", 2, 4, (tuple(range(0, 16, 2)), tuple(range(1, 16, 2)))),
])
def test_split_runs(name, spec, nodes, per_node, groups):
    rows = read_nccltests(SPLIT[name], system="dgx-h100")
    assert len(rows) == 2 * 19  # 1 KiB .. 256 MiB
    assert {(r.nodes, r.gpus_per_node, r.concurrent_groups, r.rank_places, r.split, r.groups) for r in rows} == \
        {(nodes, per_node, groups, PLACES, spec, len(groups))}
    # nccl-tests' counts and bus factor are the communicator's (setupArgs / getBw with args->nProcs)
    n = nodes * per_node
    assert all(r.busbw == pytest.approx(r.algbw * bus_factor("AllReduce", n), rel=1e-12) for r in rows)
    # without the launch line the Group column says the same; only the setting is unknown
    bare = parse_nccltests("\n".join(lines(SPLIT[name])[1:]), "s.txt", system="dgx-h100")
    assert {(r.concurrent_groups, r.split) for r in bare} == {(groups, "")}


def test_split_settings_as_logs_show_them():
    src = text(SPLIT["and7"])
    for shown, spec in (('-x NCCL_TESTS_SPLIT_MASK=0x7', "NCCL_TESTS_SPLIT_MASK=0x7"),
                        ("-x NCCL_TESTS_SPLIT='&7'", "NCCL_TESTS_SPLIT=&7"),
                        ("-x NCCL_TESTS_SPLIT=mod8", "NCCL_TESTS_SPLIT=mod8")):
        log = src.replace('-x NCCL_TESTS_SPLIT="AND 0x7"', shown)
        assert {r.split for r in parse_nccltests(log, "s.txt", system="h100")} == {spec}
    # as `env` prints it: unquoted, the number kept
    log = "NCCL_TESTS_SPLIT=AND 0x7\n" + "\n".join(lines(SPLIT["and7"])[1:])
    assert {r.split for r in parse_nccltests(log, "s.txt", system="h100")} == {"NCCL_TESTS_SPLIT=AND 0x7"}


def test_split_color_as_nccl_tests_computes_it():
    from p2sim.measurements.nccltests import split_color
    cases = {"NCCL_TESTS_SPLIT=&7": 5, "NCCL_TESTS_SPLIT=and 7": 5, "NCCL_TESTS_SPLIT=/8": 1,
             "NCCL_TESTS_SPLIT=%0b10": 1, "NCCL_TESTS_SPLIT=OR 0x8": 13, "NCCL_TESTS_SPLIT=| 16": 29,
             "NCCL_TESTS_SPLIT=MOD 010": 5,  # strtoul base 0: a leading 0 is octal (8)
             "NCCL_TESTS_SPLIT_MASK=7": 5, "NCCL_TESTS_SPLIT_MASK=0x10": 0, "NCCL_TESTS_SPLIT=AND x": 0,
             "NCCL_TESTS_SPLIT=MOD 0": None}
    assert {k: split_color(k, 13) for k in cases} == cases


def test_split_errors():
    src = lines(SPLIT["and7"])
    # the launch line's split and the Group column disagree
    bad = [x.replace('"AND 0x7"', '"AND 0x3"') for x in src]
    fails("\n".join(bad), "s.txt", f"s.txt:{line_of(src, '#  Rank  4 ')}: Group: rank 4 is in group 4, but "
          "NCCL_TESTS_SPLIT=AND 0x3 (line 1) puts its process 4 in group 0")
    # a communicator with 1 rank on one host and 2 on the other
    bad = [x.replace("#  Rank 15 Group  7", "#  Rank 15 Group  6") for x in src[1:]]
    fails("\n".join(bad), "s.txt", f"s.txt:{line_of(src, '#  Rank  6 ') - 1}: Group: group 6 runs different rank "
          "counts on its hosts (dgx-h100-01 1, dgx-h100-02 2)")
    # communicators of two shapes: 4 ranks, 4 ranks, 8 ranks
    div = lines(SPLIT["div8"])[1:]
    bad = [x if not any(f"#  Rank  {r} Group  0" in x for r in (4, 5, 6, 7)) else x.replace("Group  0", "Group  2")
           for x in div]
    fails("\n".join(bad), "s.txt", f"s.txt:{line_of(div, '#  Rank  8 ')}: Group: group 1 is 1 node x 8 ranks but "
          "group 0 is 1 node x 4 ranks")
    # two ranks on one GPU
    bad = [x.replace("#  Rank  9 Group  1 Pid   4109 on dgx-h100-02 device  1",
                     "#  Rank  9 Group  1 Pid   4109 on dgx-h100-02 device  0") for x in src]
    fails("\n".join(bad), "s.txt", f"s.txt:{line_of(src, '#  Rank  9 ')}: device: rank 9 runs on dgx-h100-02 "
          f"device 0, as rank 8 (line {line_of(src, '#  Rank  8 ')}) does")


def test_rows_of_a_split_are_checked_at_the_communicator_size():
    # the table of a 2-rank communicator read as if the 16 ranks were one: caught by the rows
    src = [x for x in lines(SPLIT["and7"])[1:]]
    one = [re.sub(r"Group +\d+", "Group  0", x) for x in src]
    fails("\n".join(one), "s.txt", "busbw (out-of-place):")


def test_split_rows_need_consistent_groups():
    from dataclasses import replace
    row = read_nccltests(SPLIT["and7"], system="dgx-h100")[0]
    with pytest.raises(MeasurementError, match=r"concurrent_groups: \[0, 8, 1\] is not a communicator of 2"):
        replace(row, concurrent_groups=((0, 8, 1),))
    with pytest.raises(MeasurementError, match=r"concurrent_groups: \[8, 1\] is not"):
        replace(row, concurrent_groups=((0, 8), (8, 1)))
    with pytest.raises(MeasurementError, match=r"concurrent_groups: \[3, 3\] is not"):
        replace(row, concurrent_groups=((3, 3),))
    with pytest.raises(MeasurementError, match=r"concurrent_groups: \[0, 16\] is not .* among the 16 placed"):
        replace(row, concurrent_groups=((0, 16),))
    assert replace(row, concurrent_groups=row.concurrent_groups[:1]).groups == 1  # one communicator, placed


# a table as a README publishes it: srun --label prefixes, no parameter line, no rank lines, no
# closing lines, inside a code fence with prose after it (2 nodes x 8 GPUs: busbw = algbw x 1.875)
_BARE = """All_reduce performance test on 2 nodes, the output should look as below.
```txt
0: #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
0: #        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
0:            8             2     float     sum      -1    164.3    0.00    0.00      0    163.3    0.00    0.00      0
0:      1048576        262144     float     sum      -1    309.4    3.39    6.35      0    307.3    3.41    6.40      0
0:   2147483648     536870912     float     sum      -1    51406   41.78   78.33      0    51406   41.77   78.33      0
```

1. To change the collective, edit the sbatch file.
"""


def test_a_table_without_rank_lines_and_closing_lines_reads_with_its_layout():
    rows = parse_nccltests(_BARE, "all_reduce_perf.md", system="p4d", nodes=2, gpus_per_node=8)
    assert [(r.nodes, r.gpus_per_node, r.size_bytes, r.in_place) for r in rows[::2]] == [
        (2, 8, 8.0, False), (2, 8, 1048576.0, False), (2, 8, 2147483648.0, False)]  # the prose's "1." is no row
    assert rows[-1].seconds == pytest.approx(51406e-6) and rows[-1].collective == "AllReduce" and rows[-1].gpu == ""
    # without the layout: refused, naming the line and the missing field
    header = line_of(_BARE.splitlines(), "#       size")
    fails(_BARE.replace("```\n\n1.", "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 1\n```\n\n1."),
          "all_reduce.md", f"all_reduce.md:{header}: Rank: no '#  Rank N ... on HOST device D' lines before this table; nccl-tests "
          "prints them under '# Using devices' (is the head of the log missing? A table published without them is "
          "read when the log's nodes and gpus_per_node are given)")
    last = line_of(_BARE.splitlines(), "2147483648 ")
    fails(_BARE, "all_reduce.md", f"all_reduce.md:{last}: table: the table stops here without nccl-tests' closing '# Avg bus "
          "bandwidth' line")
    # the wrong layout: the bus factor of 4 ranks is not the table's
    fails(_BARE, "all_reduce.md", "busbw (out-of-place): 6.35 GB/s is not algbw x 1.5, the bus factor of AllReduce on 4 ranks",
          nodes=2, gpus_per_node=2)


def test_a_layout_given_beside_a_log_is_checked():
    fails(_BARE, "all_reduce.md", "all_reduce.md: gpus_per_node: missing; nodes is given, and a log's layout needs both", nodes=2)
    fails(_BARE, "all_reduce.md", "all_reduce.md: nodes: 0 is not a whole number >= 1", nodes=0, gpus_per_node=8)
    # a log with rank lines: they must agree with the layout
    src = lines(TWO)
    fails(text(TWO), "two.txt", f"two.txt:{line_of(src, '#  Rank  0')}: nodes: the rank lines say 2 x 8 ranks (nodes "
          "x per node), but 1 x 16 is given for this log", nodes=1, gpus_per_node=16)
    assert parse_nccltests(text(TWO), "two.txt", system="h100", nodes=2, gpus_per_node=8) == \
        parse_nccltests(text(TWO), "two.txt", system="h100")


def test_a_table_without_closing_lines_must_reach_the_parameter_lines_max_bytes():
    params = "# nThread 1 nGpus 1 minBytes 8 maxBytes 4294967296 step: 2(factor) warmup iters: 5 iters: 20\n"
    bare = _BARE.replace("```txt\n", "```txt\n" + params)
    last = line_of(bare.splitlines(), "2147483648 ")
    fails(bare, "all_reduce.md", f"all_reduce.md:{last}: table: the table stops at 2147483648 B, without nccl-tests' closing lines, but "
          "the parameter line's maxBytes is 4294967296 (the next size, 4294967296 B, is missing: a cut log)",
          nodes=2, gpus_per_node=8)
    whole = bare.replace("maxBytes 4294967296", "maxBytes 2147483648")
    assert len(parse_nccltests(whole, "all_reduce.md", system="p4d", nodes=2, gpus_per_node=8)) == 6


_P2P_LOG = """# nccl-tests version 2.17.6 nccl-headers=22807 nccl-library=22807
# Collective test starting: {program}
# nThread 1 nGpus 1 minBytes 1048576 maxBytes 2097152 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid   1001 on      hostA device  0 [0000:18:00] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid   1002 on      hostA device  1 [0000:2a:00] NVIDIA H100 80GB HBM3
#  Rank  2 Group  0 Pid   1003 on      hostA device  2 [0000:3a:00] NVIDIA H100 80GB HBM3
#  Rank  3 Group  0 Pid   1004 on      hostA device  3 [0000:5d:00] NVIDIA H100 80GB HBM3
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
     1048576        {c1:>6}     float {redop:>7}      -1    20.00   52.43   {b1:>5}      0    20.00   52.43   {b1:>5}    N/A
     2097152        {c2:>6}     float {redop:>7}      -1    30.00   69.91   {b2:>5}      0    30.00   69.91   {b2:>5}    N/A
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 50
#
"""


def test_alltoall_and_sendrecv_logs_are_read():
    """alltoall_perf prints the count per peer (size / ranks / 4) and busbw = algbw (n-1)/n; sendrecv_perf the
    count per rank and busbw = algbw, with its nominal 'sum' redop (nccl-tests src/alltoall.cu, sendrecv.cu)."""
    a2a = _P2P_LOG.format(program="alltoall_perf", c1=65536, c2=131072, redop="none", b1="39.32", b2="52.43")
    rows = parse_nccltests(a2a, "a2a.txt", system="h100")
    assert [r.collective for r in rows] == ["AllToAll"] * 4
    assert rows[0].busbw == pytest.approx(1048576 / 20e-6 * 3 / 4)
    sr = _P2P_LOG.format(program="sendrecv_perf", c1=262144, c2=524288, redop="sum", b1="52.43", b2="69.91")
    rows = parse_nccltests(sr, "sr.txt", system="h100")
    assert [r.collective for r in rows] == ["SendRecv"] * 4 and rows[0].busbw == pytest.approx(1048576 / 20e-6)
    # an alltoall table whose counts are per rank (an AllReduce's) is not alltoall's layout
    fails(a2a.replace(" 65536 ", "262144 "), "a2a.txt", "count:")
