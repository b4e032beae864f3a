"""What nccl-tests' text and JSON outputs share: its programs and types, rank lines, split colors, rows.

:mod:`p2sim.measurements.nccltests` reads the text output and
:mod:`p2sim.measurements.nccltests_json` the ``-J`` JSON; both describe a run by its rank lines
(hosts, devices, split colors: :func:`_ranks`), name its collective (:func:`_name_collective`),
check each size's row (:func:`_point`) and make the rows (:func:`_emit`) here.

>>> [split_color("NCCL_TESTS_SPLIT=DIV 8", p) for p in (0, 7, 8, 15)]
[0, 0, 1, 1]
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from ..util.algorithms import by_nccl_name
from ..util.errors import MeasurementError
from ..collectives.busbw import SIMULATED
from .collective_rows import ALGO_NAMES, PROTO_NAMES, CollectiveRow, bus_factor, busbw_of

__all__ = ["PROGRAMS", "TYPE_BYTES", "split_color"]


# nccl-tests' program names of the collectives p2sim models: the five reductions, and alltoall / sendrecv
# (grouped sends and receives, collectives/p2p.py)
PROGRAMS = {"all_reduce": "AllReduce", "reduce_scatter": "ReduceScatter", "all_gather": "AllGather",
            "broadcast": "Broadcast", "reduce": "Reduce", "alltoall": "AllToAll", "sendrecv": "SendRecv"}


_OTHER_PROGRAMS = ("alltoallv", "scatter", "gather", "hypercube")


# element sizes of nccl-tests' type names (test_typenames in src/common.cu; "char".."uint64"
# are the NCCL 1 era names, "f8e4m3"/"f8e5m2" arrived with FP8)
TYPE_BYTES = {"int8": 1, "uint8": 1, "char": 1, "int32": 4, "uint32": 4, "int": 4, "int64": 8, "uint64": 8,
              "half": 2, "float16": 2, "bfloat16": 2, "float": 4, "float32": 4, "double": 8, "float64": 8,
              "f8e4m3": 1, "f8e5m2": 1}


# largest per-element deviation nccl-tests < 2.13 tolerated, times (ranks - 1)
# (DeltaMaxValue in src/common.cu at nccl-tests 2.11; integers must be exact)
_DELTA_MAX = {"half": 1e-2, "float16": 1e-2, "bfloat16": 1e-2, "float": 1e-5, "float32": 1e-5, "double": 1e-12,
              "float64": 1e-12}


_PROGRAM = re.compile(r"\b(all_reduce|reduce_scatter|all_gather|broadcast|reduce|alltoallv|alltoall|sendrecv|"
                      r"scatter|gather|hypercube)_perf(?:_mpi)?\b")


_FILE_PROGRAM = re.compile(r"(?:^|[^a-z])(all_reduce|reduce_scatter|all_gather|broadcast|reduce|allreduce|"
                           r"reducescatter|allgather)(?:[^a-z]|$)")


def _strtoul(text: str, base: int) -> int | None:
    """C's ``strtoul(text, &end, base)`` for base 0, 2 and 16: the value, or None when no digit converts."""
    t = text.lstrip()
    sign = -1 if t[:1] == "-" else 1
    t = t[1:] if t[:1] in "+-" else t
    if base in (0, 16) and t[:2].lower() == "0x" and t[2:3] and t[2:3] in "0123456789abcdefABCDEF":
        t, base = t[2:], 16
    elif base == 0:
        base = 8 if t[:1] == "0" else 10
    digits = re.match({2: "[01]*", 8: "[0-7]*", 10: "[0-9]*", 16: "[0-9a-fA-F]*"}[base], t).group(0)
    return sign * int(digits, base) if digits else None


def split_color(spec: str, proc: int) -> int | None:
    """The color nccl-tests gives MPI process ``proc`` under a split: its communicator's number.

    ``spec`` is ``NCCL_TESTS_SPLIT=<op><value>`` (op ``AND OR MOD DIV`` or ``& | % /``, the
    value decimal, ``0x`` hex or ``0b`` binary) or ``NCCL_TESTS_SPLIT_MASK=<hex>`` (``AND``),
    read as nccl-tests' ``run()`` in src/common.cu reads it (an op it does not know: color 0,
    no split).  None: nccl-tests divides by zero there (``MOD 0``), so no log has it.

    Examples
    --------
    >>> [split_color("NCCL_TESTS_SPLIT=AND 0x7", p) for p in (0, 7, 8, 13)]
    [0, 7, 0, 5]
    >>> [split_color(s, 11) for s in ("NCCL_TESTS_SPLIT=DIV 8", "NCCL_TESTS_SPLIT=%0b11",
    ...                               "NCCL_TESTS_SPLIT_MASK=1", "NCCL_TESTS_SPLIT=XOR 1")]
    [1, 2, 1, 0]
    """
    name, _, value = spec.partition("=")
    if name == "NCCL_TESTS_SPLIT_MASK":
        return proc & (_strtoul(value, 16) or 0)
    for words, op in ((("AND", "&"), int.__and__), (("OR", "|"), int.__or__), (("MOD", "%"), int.__mod__),
                      (("DIV", "/"), int.__floordiv__)):
        word = next((w for w in words if value[:len(w)].upper() == w), None)
        if word is None:
            continue
        rest = value[len(word):].lstrip()
        # parseInt: "0b" binary, else strtoul's base 0; nothing converted: color 0
        num = _strtoul(rest[2:], 2) if rest[:2].lower() == "0b" else _strtoul(rest, 0)
        if num is None:
            return 0
        if op in (int.__mod__, int.__floordiv__) and num == 0:
            return None
        return op(proc, num)
    return 0


@dataclass
class _Rank:
    line: int
    rank: int
    group: int | None
    host: str
    device: int
    gpu: str
    at: str = ""  # a JSON file's record of the rank's process ("config.devices[3]"); "" in a text log


@dataclass(frozen=True)
class _Shape:
    """What a run's rank lines say: one communicator's nodes and ranks per node, and the split."""

    nodes: int
    per_node: int
    gpu: str
    groups: tuple[tuple[int, ...], ...] = ()  # a split run: every communicator's ranks
    places: tuple[tuple[int, int], ...] = ()  # a split run: (node, device) of every rank
    split: str = ""


def _fail(src: str, line: int, fld: str, msg: str) -> MeasurementError:
    return MeasurementError(f"{src}:{line}: {fld}: {msg}")


def _name_collective(fail: Callable[[str], MeasurementError], given: str | None, program: tuple[str, str] | None,
                     mentioned: set[str], file_name: str, nothing: str) -> tuple[str, str]:
    """(collective, how it was named) of one run: the argument, the program the run names
    (``program``: its name and how the run names it), the one named before it, the file name.
    ``nothing`` says where no name was found."""
    if given is not None:
        return given, "the collective argument"
    if program is not None:
        base, how = re.sub(r"(_perf)?(_mpi)?$", "", program[0]), program[1]
    elif len(mentioned) == 1:
        (base,) = mentioned
        how = f"{base}_perf named before the table"
    elif len(mentioned) > 1:
        raise fail(f"the lines before this table name several nccl-tests programs "
                   f"({', '.join(sorted(p + '_perf' for p in mentioned))}); one collective per file")
    elif (m := _FILE_PROGRAM.search(file_name.lower())) is not None:
        base = {"allreduce": "all_reduce", "reducescatter": "reduce_scatter", "allgather": "all_gather"}.get(
            m.group(1), m.group(1))
        how = f"the file name {file_name!r}"
    else:
        raise fail(f"cannot tell which nccl-tests program wrote this {nothing}, none in the file name; name the file "
                   "after it (all_reduce_perf.log, ...) or pass the collective")
    if base not in PROGRAMS:
        raise fail(f"{base}_perf ({how}) is not one of the collectives p2sim models "
                   f"({', '.join(p + '_perf' for p in PROGRAMS)})")
    return PROGRAMS[base], how


_JSON_RANK_KEYS = {"Rank": "rank", "Group": "group", "hosts": "hostname", "device": "device"}


def _rank_fail(src: str, r: _Rank, fld: str, msg: str) -> MeasurementError:
    if r.at:
        return MeasurementError(f"{src}: {r.at}.{_JSON_RANK_KEYS.get(fld, fld)}: {msg}")
    return _fail(src, r.line, fld, msg)


def _where(r: _Rank) -> str:
    return r.at or f"line {r.line}"


def _ranks(src: str, ranks: list[_Rank], per_proc: int = 0, split: tuple[str, str] | None = None) -> _Shape:
    """One communicator's shape (and, split, all of them) from a run's ranks (not empty).

    ``per_proc`` (ranks per process, 0 unknown) and ``split`` (the setting and where the log
    names it) let the ``Group`` column be checked against the split.
    """
    seen: dict[int, _Rank] = {}
    for r in ranks:
        if r.rank in seen:
            raise _rank_fail(src, r, "Rank", f"rank {r.rank} is listed twice (also {_where(seen[r.rank])})")
        seen[r.rank] = r
    missing = [i for i in range(len(seen)) if i not in seen]
    if missing:
        raise _rank_fail(src, ranks[-1], "Rank", f"ranks are not 0..{len(seen) - 1}: rank {missing[0]} is "
                         "missing (a cut log?)")
    per_host, uneven = _hosts(ranks)
    if uneven:
        raise _rank_fail(src, ranks[0], "hosts", f"the hosts run different rank counts ({uneven}); a p2sim system "
                         "has the same GPU count on every node")
    gpu = " / ".join(sorted({r.gpu for r in ranks if r.gpu}))
    if len({r.group for r in ranks}) == 1:
        return _Shape(len(per_host), len(ranks) // len(per_host), gpu)
    return _split_shape(src, [seen[i] for i in range(len(seen))], per_proc, split, gpu)


def _hosts(ranks: Iterable[_Rank]) -> tuple[Counter[str], str]:
    """Ranks per host (in order of appearance), and ``""`` or the counts in words when hosts differ."""
    counts = Counter(r.host for r in ranks)
    uneven = len(set(counts.values())) > 1
    return counts, ", ".join(f"{h} {c}" for h, c in counts.items()) if uneven else ""


def _plural(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def _split_shape(src: str, ranks: list[_Rank], per_proc: int, split: tuple[str, str] | None, gpu: str) -> _Shape:
    """A split run's communicators: nccl-tests' MPI_Comm_split(color, proc) (src/common.cu) puts the
    ranks of one ``Group`` (color) in one communicator, in rank order."""
    if split is not None and per_proc > 0:
        for r in ranks:
            want = split_color(split[0], r.rank // per_proc)
            if want is not None and want != r.group:
                raise _rank_fail(src, r, "Group", f"rank {r.rank} is in group {r.group}, but {split[0]} ({split[1]}) "
                                 f"puts its process {r.rank // per_proc} in group {want}: the log's split and its "
                                 "rank lines disagree")
    nodes: dict[str, int] = {}
    places: dict[tuple[int, int], _Rank] = {}
    groups: dict[int | None, list[_Rank]] = {}
    for r in ranks:
        node = nodes.setdefault(r.host, len(nodes))
        if (node, r.device) in places:
            raise _rank_fail(src, r, "device", f"rank {r.rank} runs on {r.host} device {r.device}, as rank "
                             f"{places[node, r.device].rank} ({_where(places[node, r.device])}) does: one GPU per "
                             "rank")
        places[node, r.device] = r
        groups.setdefault(r.group, []).append(r)
    shapes = []
    for color, members in groups.items():
        hosts, uneven = _hosts(members)
        if uneven:
            raise _rank_fail(src, members[0], "Group", f"group {color} runs different rank counts on its hosts "
                             f"({uneven}); p2sim reads communicators with the same GPU count on each of their nodes")
        shapes.append((len(hosts), len(members) // len(hosts), color, members[0]))
    first = shapes[0]
    for s in shapes[1:]:
        if s[:2] != first[:2]:
            raise _rank_fail(src, s[3], "Group", f"group {s[2]} is {_plural(s[0], 'node')} x {_plural(s[1], 'rank')} "
                             f"but group {first[2]} is {_plural(first[0], 'node')} x {_plural(first[1], 'rank')} "
                             "(NCCL_TESTS_SPLIT gave communicators of different shapes); p2sim reads one shape per "
                             "run")
    return _Shape(first[0], first[1], gpu, tuple(tuple(r.rank for r in g) for g in groups.values()),
                  tuple((nodes[r.host], r.device) for r in ranks), split[0] if split else "")


def _shown(raw: Any) -> str:
    """A value as its source wrote it: a printed field quoted, a JSON value as JSON."""
    return repr(raw) if isinstance(raw, str) else json.dumps(raw) if raw is None or isinstance(raw, bool) else repr(raw)


def _num(fail: Callable[[str, str], MeasurementError], fld: str, raw: Any, kind: type = float,
         signed: bool = False) -> float:
    """A figure as printed (text) or written (JSON: a number, nccl-tests' "nan", or null)."""
    if isinstance(raw, bool) or raw is None or isinstance(raw, (list, dict)):
        raise fail(fld, f"{_shown(raw)} is not a {'number' if kind is float else 'whole number'}")
    try:
        v = kind(raw) if isinstance(raw, str) or kind is float else (int(raw) if float(raw).is_integer() else None)
    except (ValueError, OverflowError):
        v = None
    if v is None:
        raise fail(fld, f"{_shown(raw)} is not a {'number' if kind is float else 'whole number'}")
    if v != v or v < 0 and not signed:
        raise fail(fld, f"{_shown(raw)} is not a valid value")
    return v


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 0.02 * max(abs(a), abs(b))  # printed to 2 decimals at >= 1 GB/s: well inside 2 %


def _point(fail: Callable[[str, str], MeasurementError], name: Callable[[str, bool | None], str], collective: str,
           n: int, lead: dict[str, Any], places: Iterable[tuple[bool, dict[str, Any]]]
           ) -> Iterator[tuple[float, float, bool]]:
    """(size, seconds, in place) of one checked row of a run on ``n`` ranks (none for 0 bytes).

    ``lead`` holds the raw size, count, type and (when printed) redop and root; ``places`` the
    raw time, algbw, busbw and #wrong or error of each place; ``name(key, in_place or None)``
    says how the source names a field, ``fail(field, message)`` makes the error.
    """
    size = _num(fail, name("size", None), lead["size"], int)
    count = _num(fail, name("count", None), lead["count"], int)
    typ = lead["type"]
    if not isinstance(typ, str) or typ not in TYPE_BYTES:
        raise fail(name("type", None), f"{_shown(typ)} is not an nccl-tests data type")
    if size == 0:
        return  # nccl-tests prints sizes that round to 0 elements per rank; nothing is measured
    # count is per rank (ReduceScatter, AllGather) or per peer (alltoall.cu prints count / nranks)
    scatter = collective in ("ReduceScatter", "AllGather", "AllToAll")
    moved = count * TYPE_BYTES[typ] * (n if scatter else 1)
    if moved != size:
        raise fail(name("count", None), f"{count} x {typ} {'per rank on ' + str(n) + ' ranks ' if scatter else ''}"
                   f"is {moved} B, not the size {size} B: not the layout of {collective} on {n} ranks (another "
                   "collective's table, or other ranks than the rank lines say?)")
    # sendrecv.cu prints its nominal sum (the data is only moved): either fits it
    if ("redop" in lead and collective != "SendRecv"
            and (lead["redop"] == "none") == (collective in ("AllReduce", "ReduceScatter", "Reduce"))):
        raise fail(name("redop", None), f"{_shown(lead['redop'])} does not fit {collective}")
    if "root" in lead:
        root = _num(fail, name("root", None), lead["root"], int, signed=True)
        rooted = collective in ("Broadcast", "Reduce")
        if (root >= 0) != rooted:
            raise fail(name("root", None), f"{str(lead['root']).strip()} does not fit {collective} "
                       f"({'a root rank' if rooted else '-1: no root'} expected)")
    bf = bus_factor(collective, n)
    for place, cells in places:
        us = _num(fail, name("time", place), cells["time"])
        if us <= 0:
            raise fail(name("time", place), f"{cells['time']} us is not a duration")
        algbw = _num(fail, name("algbw", place), cells.get("algbw", "0"))
        busbw = _num(fail, name("busbw", place), cells.get("busbw", "0"))
        wrong = cells.get("#wrong", "N/A")
        if wrong not in ("N/A", None) and _num(fail, name("#wrong", place), wrong) != 0:
            raise fail(name("#wrong", place), f"{wrong} wrong elements: nccl-tests found wrong results at this "
                       "size; its time measures nothing")
        if cells.get("error", "N/A") != "N/A":
            err = _num(fail, name("error", place), cells["error"])
            if err > _DELTA_MAX.get(typ, 0.0) * max(n - 1, 0):
                raise fail(name("error", place), f"{cells['error']}: a deviation nccl-tests counts as wrong at this "
                           "size; its time measures nothing")
        if algbw >= 1.0 and not _close(algbw, size / us / 1e3):
            raise fail(name("algbw", place), f"{algbw} GB/s is not size / time = {size / us / 1e3:.2f} GB/s")
        if algbw >= 1.0 and not _close(busbw, algbw * bf):
            raise fail(name("busbw", place), f"{busbw} GB/s is not algbw x {bf:.4g}, the bus factor of {collective} "
                       f"on {n} ranks (another collective's table, or other ranks than the rank lines say?)")
        yield float(size), us * 1e-6, place


def _forced(env: dict[str, str], key: str, names: tuple[str, ...]) -> str:
    raw = env.get(key)
    if raw is None:
        return "auto"
    norm = by_nccl_name(raw) or raw.lower()  # NCCL's spelling (NVLSTree, CollNetDirect) or p2sim's
    match = [n for n in names if n.lower() == norm]
    return match[0] if match else "auto"  # a list or an exclusion: NCCL still chooses


def _check_args(source: str, collective: str | None, algo: str | None, proto: str | None) -> None:
    if collective is not None and collective not in SIMULATED:
        raise MeasurementError(f"{source}: collective: {collective!r} is not one of {', '.join(SIMULATED)}")
    if algo is not None and algo not in ALGO_NAMES:
        raise MeasurementError(f"{source}: algo: {algo!r} is not one of {', '.join(ALGO_NAMES)}")
    if proto is not None and proto not in PROTO_NAMES:
        raise MeasurementError(f"{source}: proto: {proto!r} is not one of {', '.join(PROTO_NAMES)}")


def _emit(source: str, ident: str, system: str, collective: str, shape: _Shape, algo: str, proto: str,
          origin: str | None, points: Iterable[tuple[int, float, float, bool]]) -> list[CollectiveRow]:
    n = shape.nodes * shape.per_node
    return [CollectiveRow(source=source, line=line, ident=ident, system=system, nodes=shape.nodes,
                          gpus_per_node=shape.per_node, collective=collective, algo=algo, proto=proto, size_bytes=size,
                          seconds=seconds, busbw=busbw_of(collective, n, size, seconds), in_place=place,
                          origin=origin if origin is not None else source, gpu=shape.gpu,
                          concurrent_groups=shape.groups, rank_places=shape.places, split=shape.split)
            for line, size, seconds, place in points]
