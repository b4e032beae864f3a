"""nccl-tests logs: the standard text output of ``all_reduce_perf`` and friends as measurements.

`nccl-tests <https://github.com/NVIDIA/nccl-tests>`_ (2.x) prints, per run: a parameter
line (``# nThread 1 nGpus 1 minBytes ...``), one line per rank saying its host and
device (``#  Rank  3 Group  0 Pid  1190 on node-01 device  3 [0x5d] NVIDIA H100 ...``),
and a table with one row per message size: ``size count type redop root``, then
``time algbw busbw #wrong`` out of place and again in place, closed by
``# Out of bounds values`` and ``# Avg bus bandwidth``.  Each (size, in/out of place)
becomes one :class:`~p2sim.measurements.collective_rows.CollectiveRow`; the rank lines give
the rank count, the nodes (distinct hosts) and the GPUs per node; the user names the
p2sim system.

The layouts read (from nccl-tests' ``src/common.cu`` and ``src/util.cu`` over its history):

* 2.13 and later: ``size count type redop root`` leading columns, ``#wrong`` counts
  (or ``N/A`` with ``-c 0``); rank lines with ``Group`` (2.13.x and later) or without;
  PCI ids as ``[0x5d]`` or ``[0000:5d:00]`` (2.17.4 and later); the optional
  ``# Collective test starting: all_reduce_perf`` line (2.17 and later), per-iteration
  columns (``-I 1``) and timestamps (``-T``);
* before 2.13: per-test leading columns (``all_gather_perf`` has no ``redop``,
  ``broadcast_perf`` has ``root`` only, ...) and an ``error`` column holding the largest
  deviation, judged as nccl-tests judged it (above ``DeltaMaxValue(type) x (ranks - 1)``
  is wrong).

Lines that are no part of nccl-tests' report are skipped: launcher banners, ``NCCL INFO``
lines, the prefixes ``[1,0]<stdout>:`` of ``mpirun --tag-output`` and ``0: `` of
``srun --label``.  A file may hold several runs of one collective, one after the other
(each run keeps its own rank lines); ``NCCL_ALGO`` / ``NCCL_PROTO set by environment``
lines (``NCCL_DEBUG=INFO``) say what NCCL was forced to use.

The collective is named by, in order: the ``collective`` argument; the run's
``Collective test starting`` line; the one nccl-tests program named in the lines before the
run's table (a command line, say); the file name (``all_gather_perf.log``).  Every row is
then checked against it (counts per rank, ``redop`` and ``root``, the bus factor between
algbw and busbw), which also catches a table of another collective under a wrong name.

Examples
--------
>>> text = '''# nThread 1 nGpus 2 minBytes 1048576 maxBytes 1048576 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
... # Using devices
... #  Rank  0 Group  0 Pid   4242 on      node0 device  0 [0x07] NVIDIA A100-SXM4-80GB
... #  Rank  1 Group  0 Pid   4242 on      node0 device  1 [0x0b] NVIDIA A100-SXM4-80GB
... #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
...      1048576        262144     float     sum      -1    20.00   52.43   52.43      0    19.00   55.19   55.19      0
... # Out of bounds values : 0 OK
... # Avg bus bandwidth    : 53.81
... '''
>>> rows = parse_nccltests(text, "all_reduce_perf.txt", system="a100")
>>> [(r.collective, r.nodes, r.gpus_per_node, r.size_bytes, round(r.seconds * 1e6, 6), r.in_place) for r in rows]
[('AllReduce', 1, 2, 1048576.0, 20.0, False), ('AllReduce', 1, 2, 1048576.0, 19.0, True)]
>>> round(rows[0].busbw / 1e9, 2)   # bytes/s, from size and time, not the printed two decimals
52.43
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ..util.errors import MeasurementError
from ..util.fileio import read_bytes
from .collective_rows import ALGO_NAMES, COLLECTIVES, PROTO_NAMES, CollectiveRow, bus_factor, busbw_of

__all__ = ["parse_nccltests", "read_nccltests", "is_nccltests_log", "PROGRAMS"]

# nccl-tests' program names of the five collectives p2sim models
PROGRAMS = {"all_reduce": "AllReduce", "reduce_scatter": "ReduceScatter", "all_gather": "AllGather",
            "broadcast": "Broadcast", "reduce": "Reduce"}
_OTHER_PROGRAMS = ("alltoall", "alltoallv", "sendrecv", "scatter", "gather", "hypercube")

# element sizes of nccl-tests' type names (test_typenames in src/common.cu; "char".."uint64"
# are the NCCL 1 era names, "f8e4m3"/"f8e5m2" arrived with FP8)
TYPE_BYTES = {"int8": 1, "uint8": 1, "char": 1, "int32": 4, "uint32": 4, "int": 4, "int64": 8, "uint64": 8,
              "half": 2, "float16": 2, "bfloat16": 2, "float": 4, "float32": 4, "double": 8, "float64": 8,
              "f8e4m3": 1, "f8e5m2": 1}
# largest per-element deviation nccl-tests < 2.13 tolerated, times (ranks - 1)
# (DeltaMaxValue in src/common.cu at nccl-tests 2.11; integers must be exact)
_DELTA_MAX = {"half": 1e-2, "float16": 1e-2, "bfloat16": 1e-2, "float": 1e-5, "float32": 1e-5, "double": 1e-12,
              "float64": 1e-12}

_PREFIX = re.compile(r"^(?:\[\d+,\d+\]<std(?:out|err)>:|\d+: )")
_RANK = re.compile(r"^#\s+Rank\s+(\d+)\s+(?:Group\s+(\d+)\s+)?(?:Pid\s+(\d+)\s+)?on\s+(\S+)\s+device\s+(\d+)\s+"
                   r"\[([^\]]*)\]\s*(.*?)\s*$")
_HEADER = re.compile(r"^#\s*(?:size|bytes)\s+(?:count|N)\s+type\b.*\bbusbw\b")
_STARTING = re.compile(r"^#\s*Collective test starting:\s*(\S+)")
_PARAMS = re.compile(r"^#\s*nThread\s+\d+\s+nGpus\s+\d+")
_WRONG_TOTAL = re.compile(r"^#\s*Out of bounds values\s*:\s*(\S+)")
_AVG = re.compile(r"^#\s*Avg bus bandwidth\s*:")
_ENV = re.compile(r"NCCL INFO (NCCL_ALGO|NCCL_PROTO) set by environment to (\S+)")
_PROGRAM = re.compile(r"\b(all_reduce|reduce_scatter|all_gather|broadcast|reduce|alltoallv|alltoall|sendrecv|"
                      r"scatter|gather|hypercube)_perf(?:_mpi)?\b")
_FILE_PROGRAM = re.compile(r"(?:^|[^a-z])(all_reduce|reduce_scatter|all_gather|broadcast|reduce|allreduce|"
                           r"reducescatter|allgather)(?:[^a-z]|$)")
_LEADING = {"size", "count", "type", "redop", "root"}
_ALIASES = {"bytes": "size", "N": "count", "op": "redop", "cputime": "time", "res": "error"}


@dataclass
class _Rank:
    line: int
    rank: int
    group: int | None
    host: str
    device: int
    gpu: str


@dataclass
class _Run:
    start: int  # first line of the run (its parameter line, or its first rank line)
    program: str | None = None  # from "# Collective test starting:"
    mentioned: set[str] = field(default_factory=set)  # nccl-tests programs named before the table
    ranks: list[_Rank] = field(default_factory=list)
    header: list[str] | None = None
    header_line: int = 0
    rows: list[tuple[int, list[str]]] = field(default_factory=list)
    closed: bool = False


def _fail(src: str, line: int, fld: str, msg: str) -> MeasurementError:
    return MeasurementError(f"{src}:{line}: {fld}: {msg}")


def _lines(data: str | bytes, src: str) -> Iterator[tuple[int, str]]:
    if isinstance(data, str):
        raw: list = data.split("\n")
    else:
        raw = data.split(b"\n")
    for n, text in enumerate(raw, 1):
        if isinstance(text, bytes):
            try:
                text = text.decode("utf-8")
            except UnicodeDecodeError as e:
                raise _fail(src, n, "encoding", f"byte 0x{text[e.start]:02x} at column {e.start + 1} is not UTF-8 "
                            "(nccl-tests prints ASCII: is this a log file?)") from None
        yield n, _PREFIX.sub("", text.rstrip("\r"), count=1)


def _scan(data: str | bytes, src: str) -> tuple[list[_Run], dict[str, str]]:
    """Split a log into runs; collect ``NCCL_ALGO``/``NCCL_PROTO`` settings."""
    runs: list[_Run] = []
    env: dict[str, str] = {}
    cur: _Run | None = None
    pending_program: str | None = None
    pending_mentions: set[str] = set()
    pending_start = 0

    def new_run(n: int) -> _Run:
        nonlocal pending_program, pending_mentions
        if cur is not None and cur.header is not None and not cur.closed:
            raise _truncated(src, cur)
        run = _Run(start=pending_start or n, program=pending_program, mentioned=pending_mentions)
        pending_program, pending_mentions = None, set()
        runs.append(run)
        return run

    for n, text in _lines(data, src):
        s = text.strip()
        m = _ENV.search(text)
        if m:
            env.setdefault(m.group(1), m.group(2))
            continue
        if s.startswith("#"):
            if (m := _STARTING.match(s)) is not None:
                if cur is not None and cur.header is None and not cur.ranks:
                    cur.program = m.group(1)
                else:
                    if cur is not None and cur.header is not None and not cur.closed:
                        raise _truncated(src, cur)
                    pending_program, pending_start = m.group(1), n
                    cur = None
                continue
            if _PARAMS.match(s):
                if cur is None or cur.header is not None or cur.ranks:
                    cur = new_run(n)
                continue
            if (m := _RANK.match(s)) is not None:
                if cur is None or cur.header is not None:
                    cur = new_run(n)
                cur.ranks.append(_Rank(n, int(m.group(1)), None if m.group(2) is None else int(m.group(2)),
                                       m.group(4), int(m.group(5)), m.group(7)))
                continue
            if _HEADER.match(s):
                if cur is None or cur.header is not None:
                    cur = new_run(n)
                cur.header = [_ALIASES.get(t, t) for t in s.lstrip("#").split()]
                cur.header_line = n
                continue
            if cur is not None and cur.header is not None and not cur.closed:
                if (m := _WRONG_TOTAL.match(s)) is not None:
                    if m.group(1) not in ("0", "N/A"):
                        raise _fail(src, n, "Out of bounds values", f"{m.group(1)}: nccl-tests found wrong results "
                                    "in this run; its times measure nothing")
                    continue
                if _AVG.match(s):
                    cur.closed = True
                continue
            continue
        for name in _PROGRAM.findall(text):
            if cur is None or cur.closed:
                pending_mentions.add(name)
            elif cur.header is None:
                cur.mentioned.add(name)
        if not s or cur is None or cur.header is None or cur.closed:
            continue
        first = s.split(None, 1)[0]
        if first.isdigit():
            cur.rows.append((n, s.split()))
        # anything else inside a table is another process's output (NCCL INFO, warnings): skipped
    if cur is not None and cur.header is not None and not cur.closed:
        raise _truncated(src, cur)
    return [r for r in runs if r.header is not None], env


def _truncated(src: str, run: _Run) -> MeasurementError:
    last = run.rows[-1][0] if run.rows else run.header_line
    return _fail(src, last, "table", "the table stops here without nccl-tests' closing '# Avg bus bandwidth' line "
                 "(the run was cut short, or the log truncated)")


def _collective(src: str, run: _Run, given: str | None, file_name: str) -> tuple[str, str]:
    """(collective, how it was named) of one run."""
    if given is not None:
        return given, "the collective argument"
    names: list[tuple[str, str]] = []
    if run.program is not None:
        base = re.sub(r"(_perf)?(_mpi)?$", "", run.program)
        names.append((base, f"'Collective test starting: {run.program}'"))
    elif len(run.mentioned) == 1:
        (base,) = run.mentioned
        names.append((base, f"{base}_perf named before the table"))
    elif len(run.mentioned) > 1:
        raise _fail(src, run.header_line, "collective", "the lines before this table name several nccl-tests "
                    f"programs ({', '.join(sorted(p + '_perf' for p in run.mentioned))}); one collective per file")
    else:
        m = _FILE_PROGRAM.search(file_name.lower())
        if m:
            base = {"allreduce": "all_reduce", "reducescatter": "reduce_scatter", "allgather": "all_gather"}.get(
                m.group(1), m.group(1))
            names.append((base, f"the file name {file_name!r}"))
    if not names:
        raise _fail(src, run.header_line, "collective", "cannot tell which nccl-tests program wrote this table: "
                    "no 'Collective test starting' line, no program named before it, none in the file name; "
                    "name the file after it (all_reduce_perf.log, ...) or pass the collective")
    base, how = names[0]
    if base not in PROGRAMS:
        raise _fail(src, run.header_line, "collective", f"{base}_perf ({how}) is not one of the collectives p2sim "
                    f"models ({', '.join(p + '_perf' for p in PROGRAMS)})")
    return PROGRAMS[base], how


def _ranks(src: str, run: _Run) -> tuple[int, int, str]:
    """(nodes, GPUs per node, GPU model) from a run's rank lines."""
    if not run.ranks:
        raise _fail(src, run.header_line, "Rank", "no '#  Rank N ... on HOST device D' lines before this table; "
                    "nccl-tests prints them under '# Using devices' (is the head of the log missing?)")
    seen: dict[int, _Rank] = {}
    for r in run.ranks:
        if r.rank in seen:
            raise _fail(src, r.line, "Rank", f"rank {r.rank} is listed twice (also line {seen[r.rank].line})")
        seen[r.rank] = r
    missing = [i for i in range(len(seen)) if i not in seen]
    if missing:
        raise _fail(src, run.ranks[-1].line, "Rank", f"ranks are not 0..{len(seen) - 1}: rank {missing[0]} is "
                    "missing (a cut log?)")
    groups = {r.group for r in run.ranks}
    if len(groups) > 1:
        first = next(r for r in run.ranks if r.group != run.ranks[0].group)
        raise _fail(src, first.line, "Group", f"ranks are split into {len(groups)} communicators (NCCL_TESTS_SPLIT): "
                    "p2sim reads one communicator per run")
    per_host: dict[str, int] = {}
    for r in run.ranks:
        per_host[r.host] = per_host.get(r.host, 0) + 1
    if len(set(per_host.values())) > 1:
        detail = ", ".join(f"{h} {c}" for h, c in per_host.items())
        raise _fail(src, run.ranks[0].line, "hosts", f"the hosts run different rank counts ({detail}); a p2sim system "
                    "has the same GPU count on every node")
    gpus = sorted({r.gpu for r in run.ranks if r.gpu})
    return len(per_host), len(run.ranks) // len(per_host), " / ".join(gpus)


def _num(src: str, line: int, fld: str, raw: str, kind: type = float) -> float:
    try:
        v = kind(raw)
    except ValueError:
        raise _fail(src, line, fld, f"{raw!r} is not a {'number' if kind is float else 'whole number'}") from None
    if v != v or v < 0 and not (kind is int and fld == "root"):
        raise _fail(src, line, fld, f"{raw!r} is not a valid value")
    return v


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 0.02 * max(abs(a), abs(b))  # printed to 2 decimals at >= 1 GB/s: well inside 2 %


def _rows(src: str, run: _Run, collective: str, n: int) -> Iterator[tuple[int, float, float, bool]]:
    """(line, size, seconds, in place) of every checked row of a run with ``n`` ranks."""
    header = run.header or []
    stamp = 1 if header and header[-1] == "timestamp" else 0  # "-T": a "%Y-%m-%d %H:%M:%S" column (2 fields)
    names = header[: len(header) - stamp]
    lead = []
    for t in names:
        if t not in _LEADING:
            break
        lead.append(t)
    blocks = [i for i, t in enumerate(names) if t == "time"]
    if len(blocks) != 2 or "size" not in lead or "count" not in lead or "type" not in lead:
        raise _fail(src, run.header_line, "header", "not the nccl-tests layout (size count type ... then time "
                    "algbw busbw for out-of-place and in-place)")
    width = blocks[1] - blocks[0]
    want = len(names) + 2 * stamp
    scatter = collective in ("ReduceScatter", "AllGather")
    rooted = collective in ("Broadcast", "Reduce")
    reducing = collective in ("AllReduce", "ReduceScatter", "Reduce")
    bf = bus_factor(collective, n)
    for line, tok in run.rows:
        if len(tok) < want:
            i = len(tok)
            fld = "timestamp" if i >= len(names) else names[i] if i < blocks[0] else \
                f"{names[i]} ({'out-of-place' if i < blocks[1] else 'in-place'})"
            raise _fail(src, line, fld, f"missing: the row has {len(tok)} fields, the header {want} (a cut line?)")
        if len(tok) > want:
            raise _fail(src, line, "row", f"{len(tok)} fields, more than the header's {want}")
        col = dict(zip(lead, tok))
        size = _num(src, line, "size", col["size"], int)
        count = _num(src, line, "count", col["count"], int)
        typ = col["type"]
        if typ not in TYPE_BYTES:
            raise _fail(src, line, "type", f"{typ!r} is not an nccl-tests data type")
        if size == 0:
            continue  # nccl-tests prints sizes that round to 0 elements per rank; nothing is measured
        moved = count * TYPE_BYTES[typ] * (n if scatter else 1)
        if moved != size:
            raise _fail(src, line, "count", f"{count} x {typ} {'per rank on ' + str(n) + ' ranks ' if scatter else ''}"
                        f"is {moved} B, not the size {size} B: not the layout of {collective} on {n} ranks (another "
                        "collective's table, or other ranks than the rank lines say?)")
        if "redop" in col and (col["redop"] == "none") == reducing:
            raise _fail(src, line, "redop", f"{col['redop']!r} does not fit {collective}")
        if "root" in col:
            root = _num(src, line, "root", col["root"], int)
            if (root >= 0) != rooted:
                raise _fail(src, line, "root", f"{col['root']} does not fit {collective} "
                            f"({'a root rank' if rooted else '-1: no root'} expected)")
        for place, start in ((False, blocks[0]), (True, blocks[1])):
            cells = dict(zip(names[start:start + width], tok[start:start + width]))
            where = "in-place" if place else "out-of-place"
            us = _num(src, line, f"time ({where})", cells["time"])
            if us <= 0:
                raise _fail(src, line, f"time ({where})", f"{cells['time']} us is not a duration")
            algbw = _num(src, line, f"algbw ({where})", cells.get("algbw", "0"))
            busbw = _num(src, line, f"busbw ({where})", cells.get("busbw", "0"))
            if "#wrong" in cells and cells["#wrong"] != "N/A" and _num(src, line, f"#wrong ({where})",
                                                                          cells["#wrong"]) != 0:
                raise _fail(src, line, f"#wrong ({where})", f"{cells['#wrong']} wrong elements: nccl-tests found "
                            "wrong results at this size; its time measures nothing")
            if "error" in cells and cells["error"] != "N/A":
                err = _num(src, line, f"error ({where})", cells["error"])
                if err > _DELTA_MAX.get(typ, 0.0) * max(n - 1, 0):
                    raise _fail(src, line, f"error ({where})", f"{cells['error']}: a deviation nccl-tests counts as "
                                "wrong at this size; its time measures nothing")
            if algbw >= 1.0 and not _close(algbw, size / us / 1e3):
                raise _fail(src, line, f"algbw ({where})", f"{algbw} GB/s is not size / time = "
                            f"{size / us / 1e3:.2f} GB/s")
            if algbw >= 1.0 and not _close(busbw, algbw * bf):
                raise _fail(src, line, f"busbw ({where})", f"{busbw} GB/s is not algbw x {bf:.4g}, the bus factor of "
                            f"{collective} on {n} ranks (another collective's table, or other ranks than the rank "
                            "lines say?)")
            yield line, float(size), us * 1e-6, place


def _forced(env: dict[str, str], key: str, names: tuple[str, ...]) -> str:
    raw = env.get(key)
    if raw is None:
        return "auto"
    norm = {"nvlstree": "nvls_tree"}.get(raw.lower(), raw.lower())
    match = [n for n in names if n.lower() == norm]
    return match[0] if match else "auto"  # a list or an exclusion: NCCL still chooses


def parse_nccltests(data: str | bytes, source: str = "<text>", *, system: str, collective: str | None = None,
                    algo: str | None = None, proto: str | None = None, origin: str | None = None
                    ) -> list[CollectiveRow]:
    """The measurements of one nccl-tests log (its text or bytes).

    Parameters
    ----------
    data : str or bytes
        The log.  Bytes must be UTF-8 (nccl-tests prints ASCII).
    source : str
        The file name used in messages and in each row's ``source`` (and, when the
        log names no program, to find the collective).
    system : str
        The p2sim system the measurements were taken on (the log cannot say).
    collective : str, optional
        One of ``AllReduce ReduceScatter AllGather Broadcast Reduce``, overriding what the
        log says.
    algo, proto : str, optional
        What NCCL was forced to use; default: the log's ``NCCL_ALGO`` / ``NCCL_PROTO
        set by environment`` lines, else ``"auto"``.
    origin : str, optional
        Where the figures come from (default: ``source``).

    Returns
    -------
    list of CollectiveRow
        Two per measured size (out of place, then in place), in the log's order.  Sizes
        of 0 bytes are skipped.  ``ident`` is the file name, with ``#k`` for the k-th run
        of a file holding several.

    Raises
    ------
    MeasurementError
        A malformed log: one message naming the file, the line and the field (a table
        cut short, wrong results, several collectives in one file, no rank lines, bytes
        that are not UTF-8, a row that does not fit the collective).
    """
    if collective is not None and collective not in COLLECTIVES:
        raise MeasurementError(f"{source}: collective: {collective!r} is not one of {', '.join(COLLECTIVES)}")
    if algo is not None and algo not in ALGO_NAMES:
        raise MeasurementError(f"{source}: algo: {algo!r} is not one of {', '.join(ALGO_NAMES)}")
    if proto is not None and proto not in PROTO_NAMES:
        raise MeasurementError(f"{source}: proto: {proto!r} is not one of {', '.join(PROTO_NAMES)}")
    runs, env = _scan(data, source)
    if not runs:
        raise MeasurementError(f"{source}: no nccl-tests table (a line '#  size  count  type ... busbw') in this file")
    algo = algo if algo is not None else _forced(env, "NCCL_ALGO", ALGO_NAMES)
    proto = proto if proto is not None else _forced(env, "NCCL_PROTO", PROTO_NAMES)
    name = Path(source).name
    first: tuple[str, str, int] | None = None
    out: list[CollectiveRow] = []
    for k, run in enumerate(runs, 1):
        coll, how = _collective(source, run, collective, name)
        if first is None:
            first = (coll, how, run.header_line)
        elif coll != first[0]:
            raise _fail(source, run.header_line, "collective", f"this table is {coll} ({how}) but the one at line "
                        f"{first[2]} is {first[0]} ({first[1]}): one collective per file")
        nodes, per_node, gpu = _ranks(source, run)
        ident = name if len(runs) == 1 else f"{name}#{k}"
        for line, size, seconds, place in _rows(source, run, coll, nodes * per_node):
            out.append(CollectiveRow(
                source=source, line=line, ident=ident, system=system, nodes=nodes, gpus_per_node=per_node,
                collective=coll, algo=algo, proto=proto, size_bytes=size, seconds=seconds,
                busbw=busbw_of(coll, nodes * per_node, size, seconds), in_place=place,
                origin=origin if origin is not None else source, gpu=gpu))
    return out


def read_nccltests(path: str | Path, *, system: str, collective: str | None = None, algo: str | None = None,
                   proto: str | None = None, origin: str | None = None) -> list[CollectiveRow]:
    """:func:`parse_nccltests` of a file.

    Examples
    --------
    >>> from pathlib import Path
    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> _ = (d / "x.log").write_bytes(b"#  size count type\\n\\xff\\n")
    >>> read_nccltests(d / "x.log", system="h100")
    Traceback (most recent call last):
    ...
    p2sim.util.errors.MeasurementError: ...x.log:2: encoding: byte 0xff at column 1 is not UTF-8 (nccl-tests prints ASCII: is this a log file?)
    """
    p = Path(path)
    data = read_bytes(p, "nccl-tests log", MeasurementError)
    return parse_nccltests(data, str(p), system=system, collective=collective, algo=algo, proto=proto, origin=origin)


def is_nccltests_log(path: str | Path, limit: int = 1 << 18) -> bool:
    """Whether a file looks like nccl-tests output (sniffs its first ``limit`` bytes).

    True when it holds nccl-tests' table header, its parameter line or its
    ``Collective test starting`` line; never raises for unreadable or binary files.

    Examples
    --------
    >>> import tempfile, os
    >>> fd, name = tempfile.mkstemp(suffix=".txt"); os.close(fd)
    >>> _ = open(name, "w").write("#       size         count      type   redop    root     time   algbw   busbw #wrong\\n")
    >>> is_nccltests_log(name), is_nccltests_log(__file__)
    (True, False)
    """
    try:
        with open(path, "rb") as f:
            head = f.read(limit)
    except OSError:
        return False
    for raw in head.split(b"\n"):
        text = _PREFIX.sub("", raw.decode("utf-8", "replace").strip(), count=1)
        if _HEADER.match(text) or _PARAMS.match(text) or _STARTING.match(text):
            return True
    return False
