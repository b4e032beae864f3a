"""nccl-tests' JSON output (``-J file.json``) as measurements: the rows its text log gives.

nccl-tests 2.17.3 and later write, with ``-J <file>.json`` (only a ``.json`` suffix selects
JSON), one object (src/util.cu: ``jsonOutputInit``, ``writeDeviceReport``,
``writeResultHeader``, ``writeBenchmarkLine*``, ``writePerIterReport``,
``writeResultFooter``, ``writeErrors``; ``JSON_FILE_VERSION`` 1 to 3), without whitespace::

    {"version":3, "start_time":"2026-03-02 10:11:12", "args":[argv...], "env":["K=V",...],
     "nccl_version":22703,
     "config":{"nthreads":1, "ngpus":1, "minimum_bytes":8, "maximum_bytes":134217728,
               "step_factor":2 (or "step_bytes"), "warmup_iters", "iterations", "aggregated_iterations",
               "validation", "graph", "blocking_collectives":"false", "per_iter_timing" (2+),
               "per_iter_skip" (3), "parallel_init":"false",
               "devices":[{"rank":0, "group":0, "pid":4242, "hostname":"node-01", "device":0,
                           "device_hex":"0000:18:00", "device_info":"NVIDIA H100 80GB HBM3"}, ...]},
     "results":[{"size":1048576, "count":262144, "type":"float", "redop":"sum", "root":"    -1",
                 "out_of_place":{"time":20.123457, "alg_bw":52.1, "bus_bw":91.2, "nwrong":0.000000},
                 "out_of_place_per_iter":{...} (-I 1), "in_place":{...}, "in_place_per_iter":{...},
                 "actual_iterations":20, "experiment_name":""}, ...],
     "out_of_bounds":{"count":0, "okay":"true"},
     "average_bus_bandwidth":{"bandwidth":53.8, "okay":"unchecked"}, "errors":[""], "end_time":"..."}

Doubles are ``%lf`` (six decimals; NaN as the string ``"nan"``), booleans the strings
``"true"``/``"false"``, ``root`` the row's ``%6i`` string, ``nwrong`` null without a data
check (``-c 0``), ``time`` is ``cpu_time`` with ``-C 1``, and ``/`` is escaped as ``\\/``.
Before 2.19 ``average_bus_bandwidth`` was spelt ``average_bus_bandwidith``.  ``devices`` holds
one record per *process*, its first rank's (the text log's first rank line of it): a process
runs ``nthreads x ngpus`` ranks, numbered from its record's ``rank``, on devices
``device``, ``device + 1``, ...  A file whose run stopped early has no ``out_of_bounds``.

Each result gives the rows the text log's line gives (same checks, same values, the time
with more decimals); ``line`` is the result's place in ``results`` (1-based), and messages
name fields by their path (``results[3].in_place.time``).  The collective comes from
``args[0]`` (the program, as the text's ``Collective test starting`` line), ``NCCL_ALGO``,
``NCCL_PROTO`` and ``NCCL_TESTS_SPLIT`` / ``NCCL_TESTS_SPLIT_MASK`` from ``env``.

Examples
--------
>>> doc = ('{"version":3,"start_time":"2026-03-02 10:11:12","args":[".\\\\/all_reduce_perf","-g","2"],'
...        '"env":["NCCL_ALGO=Ring"],"nccl_version":22703,"config":{"nthreads":1,"ngpus":2,'
...        '"devices":[{"rank":0,"group":0,"pid":4242,"hostname":"node0","device":0,"device_hex":"0000:07:00",'
...        '"device_info":"NVIDIA A100-SXM4-80GB"}]},"results":[{"size":1048576,"count":262144,"type":"float",'
...        '"redop":"sum","root":"    -1","out_of_place":{"time":20.004000,"alg_bw":52.417516,"bus_bw":52.417516,'
...        '"nwrong":0.000000},"in_place":{"time":19.002000,"alg_bw":55.181520,"bus_bw":55.181520,"nwrong":0.000000},'
...        '"actual_iterations":20,"experiment_name":""}],"out_of_bounds":{"count":0,"okay":"true"}}')
>>> rows = parse_nccltests_json(doc, "ar.json", system="a100")
>>> [(r.collective, r.algo, r.nodes, r.gpus_per_node, r.line, round(r.seconds * 1e6, 3), r.in_place) for r in rows]
[('AllReduce', 'ring', 1, 2, 1, 20.004, False), ('AllReduce', 'ring', 1, 2, 1, 19.002, True)]
>>> parse_nccltests_json(doc.replace('"time":19.002000', '"time":"nan"'), "ar.json", system="a100")
Traceback (most recent call last):
...
p2sim.util.errors.MeasurementError: ar.json: results[0].in_place.time: 'nan' is not a valid value
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..util.fileio import json_loads
from ..util.errors import MeasurementError
from .collective_rows import ALGO_NAMES, PROTO_NAMES, CollectiveRow
from .nccltests_common import _PROGRAM, _Rank, _check_args, _emit, _forced, _name_collective, _point, _ranks, _shown

__all__ = ["parse_nccltests_json"]

_MISSING = object()
# the text table's fields as nccl-tests' JSON names them (writeBenchmarkLineBody in src/util.cu)
_PLACE_KEYS = {"algbw": "alg_bw", "busbw": "bus_bw", "#wrong": "nwrong"}


class _Doc:
    """The parsed file and its name, for messages naming a field by its path."""

    def __init__(self, src: str) -> None:
        self.src = src

    def fail(self, path: str, msg: str) -> MeasurementError:
        return MeasurementError(f"{self.src}: {path}: {msg}")

    def get(self, obj: dict, key: str, path: str, kind: type | tuple[type, ...], what: str) -> Any:
        """``obj[key]`` of the JSON type ``kind`` (``what`` names it in messages)."""
        v = obj.get(key, _MISSING)
        where = f"{path}.{key}" if path else key
        if v is _MISSING:
            raise self.fail(where, f"missing ({what} expected, as nccl-tests writes it)")
        if isinstance(v, bool) or not isinstance(v, kind):  # nccl-tests writes its booleans as strings
            raise self.fail(where, f"{_shown(v)} is not {what}")
        return v


def _load(data: str | bytes, src: str) -> dict:
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as e:
            line = data.count(b"\n", 0, e.start) + 1
            col = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
            raise MeasurementError(f"{src}:{line}: encoding: byte 0x{data[e.start]:02x} at column {col} is not UTF-8 "
                                   "(nccl-tests writes ASCII: is this its JSON?)") from None
    try:
        doc = json_loads(data)
    except json.JSONDecodeError as e:
        if not data[e.pos:].strip():
            raise MeasurementError(f"{src}:{e.lineno}: JSON: the file ends before its object closes (the run was cut "
                                   "short, or the file truncated)") from None
        hint = " (nccl-tests writes an infinite figure as inf, which JSON has not)" \
            if data[e.pos:e.pos + 4].lstrip("-").startswith("inf") else ""
        raise MeasurementError(f"{src}:{e.lineno}: JSON: column {e.colno}: {e.msg}{hint}") from None
    if not isinstance(doc, dict) or "results" not in doc and "config" not in doc:
        raise MeasurementError(f"{src}: JSON: not nccl-tests' JSON output (an object with 'config' and 'results', "
                               "as all_reduce_perf -J writes)")
    return doc


def _ranks_of(d: _Doc, config: dict, per_proc: int) -> list[_Rank]:
    """Every rank: each process's record stands for its ``per_proc`` ranks (writeDeviceReport
    parses the first of a process's rank lines only)."""
    devices = d.get(config, "devices", "config", list, "a list of nccl-tests' rank records")
    if not devices:
        raise d.fail("config.devices", "empty: no rank records (nccl-tests writes one per process)")
    out = []
    for p, rec in enumerate(devices):
        at = f"config.devices[{p}]"
        if not isinstance(rec, dict):
            raise d.fail(at, f"{_shown(rec)} is not a rank record")
        rank = d.get(rec, "rank", at, int, "a rank number")
        if rank != p * per_proc:
            raise d.fail(f"{at}.rank", f"{rank}, but process {p} of {per_proc} rank(s) each (nthreads x ngpus) "
                         f"starts at rank {p * per_proc}")
        group = d.get(rec, "group", at, int, "a group number")
        host = d.get(rec, "hostname", at, str, "a host name")
        device = d.get(rec, "device", at, int, "a CUDA device number")
        gpu = rec.get("device_info", "")
        gpu = gpu.strip() if isinstance(gpu, str) else ""
        out += [_Rank(0, rank + i, group, host, device + i, gpu, at) for i in range(per_proc)]
    return out


def _program(d: _Doc, doc: dict) -> tuple[str, str] | None:
    """The nccl-tests program of ``args[0]`` (as the text log's ``Collective test starting`` names it)."""
    args = doc.get("args")
    if not isinstance(args, list) or not args or not isinstance(args[0], str):
        return None
    base = args[0].replace("\\", "/").rsplit("/", 1)[-1]
    m = _PROGRAM.fullmatch(base)
    return None if m is None else (base, f"args[0] {args[0]!r}")


def _env(doc: dict) -> dict[str, str]:
    out: dict[str, str] = {}
    env = doc.get("env")
    for item in env if isinstance(env, list) else ():
        if isinstance(item, str) and "=" in item:
            k, v = item.split("=", 1)
            out.setdefault(k, v)
    return out


def _points(d: _Doc, results: list, collective: str, n: int):
    for i, rec in enumerate(results):
        at = f"results[{i}]"
        if not isinstance(rec, dict):
            raise d.fail(at, f"{_shown(rec)} is not a result record")
        lead = {k: d.get(rec, k, at, (int, float, str), "a value") for k in ("size", "count", "type")}
        lead.update({k: rec[k] for k in ("redop", "root") if k in rec})
        places, timekey = [], {}
        for key, place in (("out_of_place", False), ("in_place", True)):
            v = rec.get(key, _MISSING)
            if v is None:
                continue  # a place nccl-tests did not run (writeBenchMarkLineNullBody)
            if v is _MISSING or not isinstance(v, dict):
                raise d.fail(f"{at}.{key}", "missing (a record cut short?)" if v is _MISSING else
                             f"{_shown(v)} is not a timing record")
            # "cpu_time" with -C 1, as the text's "cputime" column, which the text reader reads as the time
            timekey[place] = "time" if "time" in v or "cpu_time" not in v else "cpu_time"
            cells = {"time": d.get(v, timekey[place], f"{at}.{key}", (int, float, str), "a time in us"),
                     "algbw": d.get(v, "alg_bw", f"{at}.{key}", (int, float, str), "a bandwidth in GB/s"),
                     "busbw": d.get(v, "bus_bw", f"{at}.{key}", (int, float, str), "a bandwidth in GB/s"),
                     "#wrong": v.get("nwrong")}
            places.append((place, cells))

        def name(key: str, place: bool | None, at: str = at, timekey: dict = timekey) -> str:
            if place is None:
                return f"{at}.{key}"
            return f"{at}.{'in_place' if place else 'out_of_place'}." + (
                timekey[place] if key == "time" else _PLACE_KEYS.get(key, key))

        for size, seconds, place in _point(d.fail, name, collective, n, lead, places):
            yield i + 1, size, seconds, place


def parse_nccltests_json(data: str | bytes, source: str = "<json>", *, system: str, collective: str | None = None,
                         algo: str | None = None, proto: str | None = None, origin: str | None = None
                         ) -> list[CollectiveRow]:
    """The measurements of one nccl-tests JSON file (see the module docstring).

    Arguments and rows as :func:`~p2sim.measurements.nccltests.parse_nccltests`; every
    malformed file is one :class:`MeasurementError` naming it and the field's path.
    """
    _check_args(source, collective, algo, proto)
    d = _Doc(source)
    doc = _load(data, source)
    config = d.get(doc, "config", "", dict, "nccl-tests' run record")
    per_proc = d.get(config, "nthreads", "config", int, "a thread count") * \
        d.get(config, "ngpus", "config", int, "a GPU count")
    if per_proc < 1:
        raise d.fail("config.ngpus", f"{per_proc} ranks per process (nthreads x ngpus)")
    name = Path(source).name
    coll, _ = _name_collective(lambda msg: d.fail("args", msg), collective, _program(d, doc), set(), name,
                               "file: args[0] is no nccl-tests program")
    ranks = _ranks_of(d, config, per_proc)
    results = d.get(doc, "results", "", list, "a list of result records")
    bounds = doc.get("out_of_bounds", _MISSING)
    if bounds is _MISSING:
        raise d.fail("out_of_bounds", "missing: the run stopped before nccl-tests wrote its summary (cut short by an "
                     "error or a timeout?)")
    wrong = d.get(bounds, "count", "out_of_bounds", int, "a count") if isinstance(bounds, dict) else None
    if wrong != 0:
        raise d.fail("out_of_bounds.count", f"{_shown(wrong)}: nccl-tests found wrong results in this run; its times "
                     "measure nothing")
    env = _env(doc)
    split = next(((f"{k}={env[k]}", "env") for k in ("NCCL_TESTS_SPLIT_MASK", "NCCL_TESTS_SPLIT") if k in env), None)
    shape = _ranks(source, ranks, per_proc, split)
    algo = algo if algo is not None else _forced(env, "NCCL_ALGO", ALGO_NAMES)
    proto = proto if proto is not None else _forced(env, "NCCL_PROTO", PROTO_NAMES)
    return _emit(source, name, system, coll, shape, algo, proto, origin,
                 _points(d, results, coll, shape.nodes * shape.per_node))
