from __future__ import annotations

import pytest

from p2sim.measurements.collective_csv import is_collective_csv, load_collective_csv, read_collective_csv
from p2sim.util.errors import MeasurementError

DEV = "validation/collectives/nccl_tests_dev.csv"
HEADER = "id,gpu,gpus_per_node,nodes,collective,algo,size_bytes,time_us,algbw_GBps,busbw_GBps,place,system"


def test_the_dev_set_loads_with_its_mapping():
    rows = load_collective_csv(DEV)
    assert len(rows) == 25
    r = {x.ident: x for x in rows}
    assert r["36"].system == "dgx-h100" and r["36"].hca == ("nic0", "nic2", "nic4", "nic6") and r["36"].algo == "ring"
    # busbw given: time derived with the bus factor; 8 GPUs AllReduce, 1 GiB at 228.1 GB/s
    assert r["21"].seconds == pytest.approx(2**30 / (228.1e9 / 1.75))
    # time given: bus bandwidth derived (2 ranks AllGather: half the algorithm bandwidth... here 64 MiB / 1568.3 us / 2)
    assert r["46"].seconds == pytest.approx(1568.3e-6) and r["46"].busbw == pytest.approx(2**26 / 1568.3e-6 / 2)
    assert is_collective_csv(__import__("pathlib").Path(DEV))


def write(tmp_path, *lines):
    f = tmp_path / "m.csv"
    f.write_text("\n".join((HEADER,) + lines) + "\n")
    return f


@pytest.mark.parametrize("line,field", [
    ("1,A100,8,1,AllToAllv,auto,1024,10,,,out,dgx-a100", ":2: collective"),
    ("1,A100,8,1,AllReduce,auto,-5,10,,,out,dgx-a100", ":2: size_bytes"),
    ("1,A100,8,1,AllReduce,auto,1024,,,,out,dgx-a100", ":2: time_us"),
    ("1,A100,8,1,AllReduce,fastest,1024,10,,,out,dgx-a100", ":2: algo"),
    ("1,A100,9,1,AllReduce,auto,1024,10,,,out,dgx-a100", ":2: gpus_per_node"),
    ("1,A100,8,1,AllReduce,auto,1024,10,,,out,z100", ":2: system"),
    ("1,A100,1,1,AllReduce,auto,1024,10,,,out,dgx-a100", ":2: nodes"),
    ("1,A100,8,1,AllReduce,auto,1024,10,,,out,", ":2: system"),
])
def test_bad_rows_name_file_line_and_field(tmp_path, line, field):
    with pytest.raises(MeasurementError, match=field):
        load_collective_csv(write(tmp_path, line))


def test_repeated_ids_and_non_utf8(tmp_path):
    with pytest.raises(MeasurementError, match=":3: id"):
        load_collective_csv(write(tmp_path, "1,A,8,1,AllReduce,auto,1024,10,,,out,dgx-a100",
                                  "1,A,8,1,AllReduce,auto,2048,10,,,out,dgx-a100"))
    f = tmp_path / "bad.csv"
    f.write_bytes(HEADER.encode() + b"\n1,\xff\xfe,8,1,AllReduce,auto,1,1,,,out,dgx-a100\n")
    with pytest.raises(MeasurementError, match="UTF-8"):
        load_collective_csv(f)


FABRIC = "validation/collectives/fabric"


@pytest.mark.parametrize("name", ["nccl_tests_fabric_dev", "nccl_tests_fabric_public"])
def test_the_fabric_rows_load_with_their_mappings_and_sources(name):
    import csv

    path = f"{FABRIC}/{name}.csv"
    with open(path, newline="", encoding="utf-8") as f:
        recs = list(csv.DictReader(f))
    with open(f"{FABRIC}/{name}.systems.csv", newline="", encoding="utf-8") as f:
        mapped = {r["id"] for r in csv.DictReader(f)}
    assert all(r["source"].strip() for r in recs)  # every published number says where it comes from
    assert {r["id"] for r in recs} == mapped
    rows, skipped = read_collective_csv(path)
    assert len(rows) + len(skipped) == len(recs)
    # a system this p2sim does not ship is a reason, not an error; nothing else is left out
    assert all(": system: " in s.reason for s in skipped)
    racks = [r for r in rows if r.system == "gb200-nvl72-pod"]
    assert racks and all(r.gpus_per_node == 72 for r in racks)  # '72 (one NVL72 rack = ...)'
    assert {r.nodes for r in racks} >= {1, 2}


def test_a_count_may_carry_a_remark(tmp_path):
    rows = load_collective_csv(write(tmp_path, '1,A100,"8 (one HGX board)",2,AllReduce,auto,1024,10,,,out,dgx-a100'))
    assert rows[0].gpus_per_node == 8 and rows[0].ranks == 16
    with pytest.raises(MeasurementError, match=":2: gpus_per_node: '8 GPUs' is not a whole number"):
        load_collective_csv(write(tmp_path, "1,A100,8 GPUs,2,AllReduce,auto,1024,10,,,out,dgx-a100"))


def test_a_row_with_an_unknown_system_is_reported_and_the_rest_read(tmp_path):
    f = write(tmp_path, "1,A100,8,1,AllReduce,auto,1024,10,,,out,z100", "2,A100,8,1,AllReduce,auto,1024,10,,,out,dgx-a100")
    rows, skipped = read_collective_csv(f)
    assert [r.ident for r in rows] == ["2"]
    assert [(s.ident, s.line) for s in skipped] == [("1", 2)] and ":2: system: " in skipped[0].reason
    with pytest.raises(MeasurementError, match=":2: system"):  # the strict reader stops at it, as before
        load_collective_csv(f)


def test_the_mapping_records_the_jobs_environment_and_refuses_what_it_does_not_know(tmp_path):
    f = write(tmp_path, "1,H100,8,2,AllReduce,,1073741824,10000,,,out,")
    (tmp_path / "m.systems.csv").write_text("id,system,hca,algo,env,note\n"
                                            "1,dgx-h100,,auto,NCCL_NVLS_ENABLE=0 NCCL_DEBUG=INFO,\n")
    row = load_collective_csv(f)[0]
    assert row.env == (("NCCL_DEBUG", "INFO"), ("NCCL_NVLS_ENABLE", "0"))
    (tmp_path / "m.systems.csv").write_text("id,system,hca,algo,env,note\n1,dgx-h100,,auto,NCCL_NVLS_ENABLE=off,\n")
    with pytest.raises(MeasurementError, match=r"m\.systems\.csv:2: env NCCL_NVLS_ENABLE: 'off' must be 0, 1 or 2"):
        load_collective_csv(f)


def test_the_nvl72_rows_carry_the_environment_their_jobs_set():
    """1-2 racks: NCCL 2.25.1 with NVLS on; 20 racks: NVLS and CollNet off (shared/spec/nccl-facts-2.md 1a)."""
    rows, _ = read_collective_csv(f"{FABRIC}/nccl_tests_fabric_public.csv")
    racks = {r.nodes: dict(r.env) for r in rows if r.system == "gb200-nvl72-pod"}
    assert racks[1]["NCCL_NVLS_ENABLE"] == racks[2]["NCCL_NVLS_ENABLE"] == "1"
    assert racks[20]["NCCL_NVLS_ENABLE"] == racks[20]["NCCL_COLLNET_ENABLE"] == "0"
