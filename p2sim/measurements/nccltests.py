"""nccl-tests logs: the standard text output of ``all_reduce_perf`` and friends as measurements.

`nccl-tests <https://github.com/NVIDIA/nccl-tests>`_ (2.x) prints, per run: a parameter
line (``# nThread 1 nGpus 1 minBytes ...``), one line per rank saying its host and
device (``#  Rank  3 Group  0 Pid  1190 on node-01 device  3 [0x5d] NVIDIA H100 ...``),
and a table with one row per message size: ``size count type redop root``, then
``time algbw busbw #wrong`` out of place and again in place, closed by
``# Out of bounds values`` and ``# Avg bus bandwidth``.  Each (size, in/out of place)
becomes one :class:`~p2sim.measurements.collective_rows.CollectiveRow`; the rank lines give
the rank count, the nodes (distinct hosts) and the GPUs per node; the user names the
p2sim system.  A table published alone (a README's code block: no rank lines, no closing
lines) is read when its nodes and GPUs per node are given beside it (``nodes``,
``gpus_per_node``); the bus factor between algbw and busbw checks them.

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

nccl-tests' JSON output (``-J run.json``, 2.17.3 and later) gives the same rows, read by
:mod:`~p2sim.measurements.nccltests_json` whenever the data starts with ``{``.

**Split runs.**  With ``NCCL_TESTS_SPLIT`` (``"AND 0x7"``, ``"MOD 8"``, ``"DIV 8"``, ...; the
older ``NCCL_TESTS_SPLIT_MASK=<hex>`` is ``AND``) an MPI build gives each process a color
(:func:`split_color`: ``proc AND 7`` ...), printed as the rank lines' ``Group``, and the
ranks of one color form one communicator (``MPI_Comm_split(color, proc)`` in
src/common.cu's ``run()``).  All of them run each size at once, between world-wide barriers;
a row's ``size``, ``count`` and bus factor are one communicator's (``setupArgs`` and
``getBw`` take ``args->nProcs``, the communicator's processes), its time the mean over all
processes of the world (``-a 1``, the default).  Such a run becomes rows of one
communicator (``nodes``, ``gpus_per_node``: its hosts and ranks per host) with every
communicator's ranks in ``concurrent_groups`` and each rank's (node, CUDA device) in
``rank_places``; the communicators must all have one shape.  ``split`` records the setting
when a line before the table shows it (``-x NCCL_TESTS_SPLIT="AND 0x7"``, a JSON file's
``env``), and the ``Group`` column is checked against it.

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

The same table from 4 processes on 2 nodes split by ``NCCL_TESTS_SPLIT="MOD 2"``: ranks 0
and 2, 1 and 3 are two communicators of 2 ranks, one on each node.

>>> ranks = "".join(f"#  Rank {r:2d} Group {r % 2:2d} Pid {r:6d} on {'node' + str(r // 2):>10} device {r % 2:2d} "
...                 f"[0x07] NVIDIA A100-SXM4-80GB\\n" for r in range(4))
>>> head, rest = text.split("#  Rank  0", 1)
>>> split = ("mpirun -np 4 -x NCCL_TESTS_SPLIT='MOD 2' all_reduce_perf -g 1\\n" + head.replace("nGpus 2", "nGpus 1")
...          + ranks + rest.split("\\n", 2)[2])
>>> r = parse_nccltests(split, "all_reduce_perf.txt", system="a100")[0]
>>> r.nodes, r.gpus_per_node, r.concurrent_groups, r.rank_places, r.split
(2, 1, ((0, 2), (1, 3)), ((0, 0), (0, 1), (1, 0), (1, 1)), 'NCCL_TESTS_SPLIT=MOD 2')
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ..util.errors import MeasurementError
from ..util.fileio import read_bytes
from .collective_rows import ALGO_NAMES, PROTO_NAMES, CollectiveRow
from .nccltests_common import (_PROGRAM, PROGRAMS, _check_args, _emit, _fail, _forced, _name_collective, _point,
                               _Rank, _ranks, _Shape, split_color)
from .nccltests_json import parse_nccltests_json

__all__ = ["parse_nccltests", "read_nccltests", "is_nccltests_log", "split_color", "PROGRAMS"]


_PREFIX = re.compile(r"^(?:\[\d+,\d+\]<std(?:out|err)>:|\d+: )")
_RANK = re.compile(r"^#\s+Rank\s+(\d+)\s+(?:Group\s+(\d+)\s+)?(?:Pid\s+(\d+)\s+)?on\s+(\S+)\s+device\s+(\d+)\s+"
                   r"\[([^\]]*)\]\s*(.*?)\s*$")
_HEADER = re.compile(r"^#\s*(?:size|bytes)\s+(?:count|N)\s+type\b.*\bbusbw\b")
_STARTING = re.compile(r"^#\s*Collective test starting:\s*(\S+)")
_PARAMS = re.compile(r"^#\s*nThread\s+(\d+)\s+nGpus\s+(\d+)")
# the parameter line's range: "minBytes 8 maxBytes 2147483648 step: 2(factor)" (src/common.cu, run())
_RANGE = re.compile(r"\bmaxBytes\s+(\d+)\s+step:\s*(\d+)\((factor|bytes)\)")
_WRONG_TOTAL = re.compile(r"^#\s*Out of bounds values\s*:\s*(\S+)")
_AVG = re.compile(r"^#\s*Avg bus bandwidth\s*:")
_ENV = re.compile(r"NCCL INFO (NCCL_ALGO|NCCL_PROTO) set by environment to (\S+)")
# the split as a launch line sets it: NCCL_TESTS_SPLIT="AND 0x7", NCCL_TESTS_SPLIT=MOD8,
# NCCL_TESTS_SPLIT_MASK=0x7 (an unquoted "AND 0x7", as `env` prints it, keeps its number)
_SPLIT_SET = re.compile(r"\b(NCCL_TESTS_SPLIT(?:_MASK)?)=(\"[^\"]*\"|'[^']*'|"
                        r"(?i:(?:AND|OR|MOD|DIV)\s+|[&|%/]\s*)[+-]?\w+|\S+)")
_LEADING = {"size", "count", "type", "redop", "root"}
_ALIASES = {"bytes": "size", "N": "count", "op": "redop", "cputime": "time", "res": "error"}


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
    per_proc: int = 0  # ranks per process (nThread x nGpus of the parameter line); 0: not printed
    split: tuple[str, str] | None = None  # ("NCCL_TESTS_SPLIT=...", "line N") named before the table
    max_bytes: int = 0  # the parameter line's maxBytes; 0: not printed
    step: tuple[int, str] = (0, "")  # its step: (2, "factor") or (1048576, "bytes"); (0, ""): not printed
    stray: int = 0  # the first line after the rows that is neither a row, a "#" line nor NCCL's output


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


def _split_setting(text: str, n: int) -> tuple[str, str] | None:
    """The split a line sets (``NCCL_TESTS_SPLIT_MASK`` wins, as in nccl-tests), and where."""
    found = {m.group(1): m.group(2).strip("\"'") for m in _SPLIT_SET.finditer(text)}
    for name in ("NCCL_TESTS_SPLIT_MASK", "NCCL_TESTS_SPLIT"):
        if name in found:
            return f"{name}={found[name]}", f"line {n}"
    return None


def _scan(data: str | bytes, src: str, open_ok: bool = False) -> tuple[list[_Run], dict[str, str]]:
    """Split a log into runs; collect ``NCCL_ALGO``/``NCCL_PROTO`` settings.

    ``open_ok``: a table without nccl-tests' closing lines is read (a table published alone, its
    layout given beside it) up to the first line that is not one of its rows; otherwise it is a
    cut log.
    """
    runs: list[_Run] = []
    env: dict[str, str] = {}
    cur: _Run | None = None
    pending_program: str | None = None
    pending_mentions: set[str] = set()
    pending_split: tuple[str, str] | None = None
    pending_start = 0

    def new_run(n: int) -> _Run:
        nonlocal pending_program, pending_mentions, pending_split
        if cur is not None and cur.header is not None and not cur.closed:
            _end_open(src, cur, open_ok)
        run = _Run(start=pending_start or n, program=pending_program, mentioned=pending_mentions, split=pending_split)
        pending_program, pending_mentions, pending_split = None, set(), None
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
                        _end_open(src, cur, open_ok)
                    pending_program, pending_start = m.group(1), n
                    cur = None
                continue
            if (m := _PARAMS.match(s)) is not None:
                if cur is None or cur.header is not None or cur.ranks:
                    cur = new_run(n)
                cur.per_proc = int(m.group(1)) * int(m.group(2))
                if (r := _RANGE.search(s)) is not None:
                    cur.max_bytes, cur.step = int(r.group(1)), (int(r.group(2)), r.group(3))
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
        before = cur is None or cur.closed
        for name in _PROGRAM.findall(text):
            if before:
                pending_mentions.add(name)
            elif cur is not None and cur.header is None:
                cur.mentioned.add(name)
        if "NCCL_TESTS_SPLIT" in text and (setting := _split_setting(text, n)) is not None:
            if before:
                pending_split = setting
            elif cur is not None and cur.header is None:
                cur.split = setting
        if not s or cur is None or cur.header is None or cur.closed:
            continue
        first = s.split(None, 1)[0]
        if first.isdigit():
            cur.rows.append((n, s.split()))
        elif not cur.stray and "NCCL " not in text:
            cur.stray = n  # where a table published without its closing lines ends (a code fence, prose)
        # anything else inside a table is another process's output (NCCL INFO, warnings): skipped
    if cur is not None and cur.header is not None and not cur.closed:
        _end_open(src, cur, open_ok)
    return [r for r in runs if r.header is not None], env


def _end_open(src: str, run: _Run, open_ok: bool) -> None:
    """End a table that has no closing ``# Avg bus bandwidth`` line: a cut log, unless ``open_ok``
    (then its rows are those before its first stray line, and must reach the parameter line's
    maxBytes where it is printed)."""
    if not open_ok:
        last = run.rows[-1][0] if run.rows else run.header_line
        raise _fail(src, last, "table", "the table stops here without nccl-tests' closing '# Avg bus bandwidth' line "
                    "(the run was cut short, or the log truncated; a table published without it is read when the "
                    "log's nodes and gpus_per_node are given)")
    if run.stray:
        run.rows = [r for r in run.rows if r[0] < run.stray]
    run.closed = True
    if not run.rows or not run.max_bytes or not run.step[0] or not run.rows[-1][1][0].isdigit():
        return
    line, last = run.rows[-1][0], int(run.rows[-1][1][0])
    # nccl-tests' next size (src/common.cu: size * stepFactor, or size + stepBytes); any size up to
    # maxBytes is run, so a table that stops below the next one was cut
    after = last * run.step[0] if run.step[1] == "factor" else last + run.step[0]
    if after > last and after <= run.max_bytes:
        raise _fail(src, line, "table", f"the table stops at {last} B, without nccl-tests' closing lines, but the "
                    f"parameter line's maxBytes is {run.max_bytes} (the next size, {after} B, is missing: a cut log)")


def _collective(src: str, run: _Run, given: str | None, file_name: str) -> tuple[str, str]:
    """(collective, how it was named) of one run of a text log."""
    program = None if run.program is None else (run.program, f"'Collective test starting: {run.program}'")
    return _name_collective(lambda msg: _fail(src, run.header_line, "collective", msg), given, program,
                            run.mentioned, file_name, "table: no 'Collective test starting' line, no program named "
                            "before it")


def _text_name(key: str, place: bool | None) -> str:
    return key if place is None else f"{key} ({'in-place' if place else 'out-of-place'})"


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
    for line, tok in run.rows:
        if len(tok) < want:
            i = len(tok)
            fld = "timestamp" if i >= len(names) else names[i] if i < blocks[0] else \
                f"{names[i]} ({'out-of-place' if i < blocks[1] else 'in-place'})"
            raise _fail(src, line, fld, f"missing: the row has {len(tok)} fields, the header {want} (a cut line?)")
        if len(tok) > want:
            raise _fail(src, line, "row", f"{len(tok)} fields, more than the header's {want}")
        places = [(place, dict(zip(names[start:start + width], tok[start:start + width])))
                  for place, start in ((False, blocks[0]), (True, blocks[1]))]
        fail = lambda fld, msg, line=line: _fail(src, line, fld, msg)  # noqa: E731
        for size, seconds, place in _point(fail, _text_name, collective, n, dict(zip(lead, tok)), places):
            yield line, size, seconds, place


def _is_json(data: str | bytes) -> bool:
    head = data[:64].lstrip()
    return head[:1] in ("{", b"{")  # nccl-tests' JSON is one object; no text log starts with "{"


def _layout(source: str, nodes: int | None, gpus_per_node: int | None) -> tuple[int, int] | None:
    """The (nodes, GPUs per node) given beside a log, checked: both or neither, whole numbers >= 1."""
    if nodes is None and gpus_per_node is None:
        return None
    for fld, v in (("nodes", nodes), ("gpus_per_node", gpus_per_node)):
        if v is None:
            other = "gpus_per_node" if fld == "nodes" else "nodes"
            raise MeasurementError(f"{source}: {fld}: missing; {other} is given, and a log's layout needs both")
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise MeasurementError(f"{source}: {fld}: {v!r} is not a whole number >= 1")
    return nodes, gpus_per_node  # type: ignore[return-value]


def _given_shape(source: str, run: _Run, shape: _Shape | None, layout: tuple[int, int] | None) -> _Shape:
    """A run's shape: its rank lines' (checked against the layout given beside the log), else the layout."""
    if shape is None:
        if layout is None:
            raise _fail(source, run.header_line, "Rank", "no '#  Rank N ... on HOST device D' lines before this "
                        "table; nccl-tests prints them under '# Using devices' (is the head of the log missing? A "
                        "table published without them is read when the log's nodes and gpus_per_node are given)")
        return _Shape(layout[0], layout[1], "")
    if layout is not None and (shape.nodes, shape.per_node) != layout:
        raise _fail(source, run.ranks[0].line if run.ranks else run.header_line, "nodes",
                    f"the rank lines say {shape.nodes} x {shape.per_node} ranks (nodes x per node), but "
                    f"{layout[0]} x {layout[1]} is given for this log")
    return shape


def parse_nccltests(data: str | bytes, source: str = "<text>", *, system: str, collective: str | None = None,
                    algo: str | None = None, proto: str | None = None, origin: str | None = None,
                    nodes: int | None = None, gpus_per_node: int | None = None) -> list[CollectiveRow]:
    """The measurements of one nccl-tests log (its text or bytes) or JSON file (``-J``).

    Parameters
    ----------
    data : str or bytes
        The log or the JSON (recognised by its first character, ``{``).  Bytes must be
        UTF-8 (nccl-tests prints ASCII).
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
        set by environment`` lines (a JSON file's ``env``), else ``"auto"``.
    origin : str, optional
        Where the figures come from (default: ``source``).
    nodes, gpus_per_node : int, optional
        The run's layout, for a table published without its rank lines (and without its
        closing ``# Out of bounds`` / ``# Avg bus bandwidth`` lines: such a table ends at
        its first line that is no row, and must reach the parameter line's ``maxBytes``
        where that line is printed).  Both or neither; where the log has rank lines they
        must agree.

    Returns
    -------
    list of CollectiveRow
        Two per measured size (out of place, then in place), in the log's order.  Sizes
        of 0 bytes are skipped.  ``ident`` is the file name, with ``#k`` for the k-th run
        of a file holding several.  A split run's rows are one communicator's, with all
        of them in ``concurrent_groups``.

    Raises
    ------
    MeasurementError
        A malformed log: one message naming the file, the line (a JSON file: the field's
        path) and the field (a table cut short, wrong results, several collectives in one
        file, no rank lines and no layout given, bytes that are not UTF-8, a row that does
        not fit the collective, a split into communicators of different shapes).
    """
    _check_args(source, collective, algo, proto)
    layout = _layout(source, nodes, gpus_per_node)
    if _is_json(data):
        # the JSON reader reuses this module's checks: imported here, where both are loaded
        rows = parse_nccltests_json(data, source, system=system, collective=collective, algo=algo, proto=proto,
                                    origin=origin)
        wrong = next((r for r in rows if layout is not None and (r.nodes, r.gpus_per_node) != layout), None)
        if wrong is not None:
            raise MeasurementError(f"{source}: nodes: the file's devices say {wrong.nodes} x {wrong.gpus_per_node} "
                                   f"ranks (nodes x per node), but {layout[0]} x {layout[1]} is given for it")
        return rows
    runs, env = _scan(data, source, open_ok=layout is not None)
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
        shape = _given_shape(source, run, _ranks(source, run.ranks, run.per_proc, run.split) if run.ranks else None,
                             layout)
        ident = name if len(runs) == 1 else f"{name}#{k}"
        out += _emit(source, ident, system, coll, shape, algo, proto, origin,
                     _rows(source, run, coll, shape.nodes * shape.per_node))
    return out


def read_nccltests(path: str | Path, *, system: str, collective: str | None = None, algo: str | None = None,
                   proto: str | None = None, origin: str | None = None, nodes: int | None = None,
                   gpus_per_node: int | None = None) -> list[CollectiveRow]:
    """:func:`parse_nccltests` of a file (a text log or a ``-J`` JSON file).

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
    return parse_nccltests(data, str(p), system=system, collective=collective, algo=algo, proto=proto, origin=origin,
                           nodes=nodes, gpus_per_node=gpus_per_node)


# the head of nccl-tests' JSON (jsonOutputInit in src/util.cu writes "version" then "start_time"),
# with the whitespace a pretty-printer adds
_JSON_HEAD = re.compile(rb'^\s*\{\s*"version"\s*:\s*\d+\s*,\s*"start_time"\s*:')


def is_nccltests_log(path: str | Path, limit: int = 1 << 18) -> bool:
    """Whether a file looks like nccl-tests output (sniffs its first ``limit`` bytes).

    True when it holds nccl-tests' table header, its parameter line or its
    ``Collective test starting`` line, or starts as nccl-tests' JSON does
    (``{"version":N,"start_time":``); never raises for unreadable or binary files.

    Examples
    --------
    >>> import tempfile, os
    >>> fd, name = tempfile.mkstemp(suffix=".txt"); os.close(fd)
    >>> _ = open(name, "w").write("#       size         count      type   redop    root     time   algbw   busbw #wrong\\n")
    >>> is_nccltests_log(name), is_nccltests_log(__file__)
    (True, False)
    >>> _ = open(name, "w").write('{"version":3,"start_time":"2026-03-02 10:11:12","args":[')
    >>> is_nccltests_log(name)
    True
    """
    try:
        with open(path, "rb") as f:
            head = f.read(limit)
    except OSError:
        return False
    if _JSON_HEAD.match(head):
        return True
    for raw in head.split(b"\n"):
        text = _PREFIX.sub("", raw.decode("utf-8", "replace").strip(), count=1)
        if _HEADER.match(text) or _PARAMS.match(text) or _STARTING.match(text):
            return True
    return False
