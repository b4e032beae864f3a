"""Input files read as UTF-8 text, and output paths checked before any work starts.

Every problem is one :class:`~p2sim.util.errors.InputError` naming the file (and, for an
output, the option).  Commands check their outputs first, so a bad ``--out`` costs no
computation, and read their inputs through :func:`read_text`, so bytes that are not
UTF-8 become one message naming the file, line and column instead of a
``UnicodeDecodeError``.

Examples
--------
>>> decode(b"name = 1\\nx = \\xff\\n", "sys.toml", "system file")
Traceback (most recent call last):
...
p2sim.util.errors.InputError: sys.toml:2: encoding: byte 0xff at column 5 is not UTF-8 (is this a system file?)
>>> check_output_file("picture.txt", "draw", (".png", ".svg", ".pdf"))
Traceback (most recent call last):
...
p2sim.util.errors.OutputError: draw: picture.txt should end in .png, .svg or .pdf
"""

from __future__ import annotations

import json
import os
import select
import stat
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

from .errors import InputError, OutputError
from .signals import deferred_signals
from .units import format_bytes

__all__ = ["read_text", "read_bytes", "check_input_file", "decode", "PIPE_WAIT_S", "parse_json", "json_loads", "check_output_dir", "check_output_file",
           "check_output_target", "check_not_input", "writing", "replace_file", "guarded_stdout", "MAX_INPUT_BYTES"]

# inputs larger than this are refused before they are read (the largest real measurement logs
# are tens of MiB; /dev/zero is infinite)
MAX_INPUT_BYTES = 512 * 2**20
# how long a pipe that may be read (a system file, ``--system <(...)``) may stay silent before it is refused:
# a named pipe nobody writes would otherwise block the command for ever
PIPE_WAIT_S = 10.0


def decode(data: bytes, source: str, what: str = "text file", error: type[InputError] = InputError) -> str:
    """``data`` as UTF-8 text (a leading byte-order mark dropped), or ``error`` naming line and column."""
    try:
        # utf-8-sig: spreadsheets write a byte-order mark before CSV headers
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        body, start = e.object, e.start  # the bytes after any byte-order mark
        line = body.count(b"\n", 0, start) + 1
        column = start - (body.rfind(b"\n", 0, start) + 1) + 1
        raise error(f"{source}:{line}: encoding: byte 0x{body[start]:02x} at column {column} is not UTF-8 "
                    f"(is this a {what}?)") from None


def check_input_file(path: str | Path, what: str = "text file", error: type[InputError] = InputError,
                     limit: int = MAX_INPUT_BYTES, pipes: bool = False) -> str:
    """What ``path`` is, ``"file"`` or ``"pipe"``, or one ``error``: empty, missing, a directory, a device,
    a socket, a pipe where one cannot be read (``pipes=False``, the default), or a file larger than ``limit``.

    It looks (``stat``) before anything opens the path: opening a named pipe that nobody writes, or a
    device, can block for ever."""
    if isinstance(path, str) and not path.strip():
        # Path("") is ".", the current directory: say what the user gave instead
        raise error(f"{path!r}: an empty name is no {what}: give a file's path")
    p = Path(path)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        raise error(f"{p}: no such {what}") from None
    except OSError as e:
        raise error(f"{p}: cannot read this {what} ({e.strerror or e})") from None
    if stat.S_ISDIR(st.st_mode):
        raise error(f"{p}: is a directory, not a {what}")
    if stat.S_ISREG(st.st_mode):
        if st.st_size > limit:
            raise error(f"{p}: {format_bytes(st.st_size)} is more than a {what} may be ({format_bytes(limit)})")
        return "file"
    if stat.S_ISFIFO(st.st_mode) and pipes:
        return "pipe"
    kind = "a pipe" if stat.S_ISFIFO(st.st_mode) else "a device or socket"
    raise error(f"{p}: is {kind}, not a regular file: a {what} is read from a file")


def _read_pipe(p: Path, limit: int, what: str, error: type[InputError]) -> bytes:
    """At most ``limit + 1`` bytes of a pipe, opened without waiting for a writer (a plain open of a named
    pipe blocks until one comes), then read once something is written; silence for :data:`PIPE_WAIT_S`
    (nobody writes it) is one ``error``."""
    fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK)
    try:
        # Linux reports no hang-up on a pipe that no writer has opened yet: poll waits for data or a writer's close
        # (poll, not select: a descriptor above 1023 is fine)
        waiting = select.poll()
        waiting.register(fd, select.POLLIN)
        if not waiting.poll(PIPE_WAIT_S * 1000):
            raise error(f"{p}: is a pipe and nothing was written to it in {PIPE_WAIT_S:g} s: give a file, or "
                        "start what writes the pipe first")
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read(limit + 1)
    finally:
        os.close(fd)


def read_bytes(path: str | Path, what: str = "text file", error: type[InputError] = InputError,
               limit: int = MAX_INPUT_BYTES, pipes: bool = False) -> bytes:
    """The bytes of a regular file (or, with ``pipes``, of a pipe read once), at most ``limit`` of them (else
    ``error``); the path is looked at before it is opened (:func:`check_input_file`)."""
    kind = check_input_file(path, what, error, limit, pipes)
    p = Path(path)
    try:
        if kind == "pipe":
            data = _read_pipe(p, limit, what, error)
        else:
            with p.open("rb") as f:
                data = f.read(limit + 1)
    except OSError as e:
        raise error(f"{p}: cannot read this {what} ({e.strerror or e})") from None
    if len(data) > limit:  # a pipe, or a file that grew meanwhile
        raise error(f"{p}: more than a {what} may be ({format_bytes(limit)}){' (a pipe)' if kind == 'pipe' else ''}")
    return data


def read_text(path: str | Path, what: str = "text file", error: type[InputError] = InputError,
              limit: int = MAX_INPUT_BYTES, pipes: bool = False) -> str:
    """The text of a UTF-8 file (or, with ``pipes``, a pipe read once); an empty name, a missing, unreadable,
    oversized, special or non-UTF-8 file is one ``error`` naming it."""
    return decode(read_bytes(path, what, error, limit, pipes), str(Path(path)), what, error)


def _no_repeats(source: str, error: type[InputError]) -> Any:
    """A ``json.loads`` ``object_pairs_hook`` that refuses a key given twice in one object (a reader keeps the
    last one, silently: the file says two things)."""
    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        doc: dict[str, Any] = {}
        for key, value in pairs:
            if key in doc:
                raise error(f"{source}: {key}: given twice ({doc[key]!r} and {value!r}): each key once")
            doc[key] = value
        return doc
    return hook


def json_loads(text: str) -> Any:
    """``json.loads``, with its two failures that are not a ``JSONDecodeError`` -- nesting too deep for the
    parser (a ``RecursionError``) and a number of more than 4,300 digits (a ``ValueError``) -- raised as one, so
    that a reader's own handler names the file and line of every bad document alike."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise
    except RecursionError:
        raise json.JSONDecodeError("nested too deeply (arrays or objects within each other, hundreds deep)",
                                   text, 0) from None
    except ValueError as e:
        raise json.JSONDecodeError(f"a number too long to be read ({e})", text, 0) from None


def parse_json(text: str, source: str, what: str = "JSON file", error: type[InputError] = InputError) -> Any:
    """The JSON document ``text``, or one ``error`` naming ``source``: not JSON (with line and column), a key
    given twice in one object, nesting too deep for the parser (a ``RecursionError``), or a number too long to
    be one (Python's limit of 4,300 digits)."""
    try:
        return json.loads(text, object_pairs_hook=_no_repeats(source, error))
    except InputError:  # a key given twice, said by the hook
        raise
    except json.JSONDecodeError as e:
        raise error(f"{source}:{e.lineno}: not JSON: {e.msg} (column {e.colno})") from None
    except RecursionError:
        raise error(f"{source}: nested too deeply to be a {what} (arrays or objects within each other, "
                    "hundreds deep)") from None
    except ValueError as e:  # int("9" * 5000): "Exceeds the limit (4300 digits) for integer string conversion"
        raise error(f"{source}: a number in it is too long to be read ({e})") from None


def _writable_dir(p: Path) -> bool:
    return os.access(p, os.W_OK | os.X_OK)


def check_output_dir(path: str | Path, option: str) -> Path:
    """A directory that a command may create or write into, checked before the work.

    Missing directories are created later (parents too), so the nearest existing
    ancestor must be a writable directory.
    """
    p = Path(path)
    if p.exists():
        if not p.is_dir():
            raise OutputError(f"{option}: {p} exists and is not a directory")
        if not _writable_dir(p):
            raise OutputError(f"{option}: the directory {p} is not writable")
        return p
    above = p.absolute().parent
    while not above.exists():
        above = above.parent
    if not above.is_dir():
        raise OutputError(f"{option}: {above} is a file, so the directory {p} cannot be made")
    if not _writable_dir(above):
        raise OutputError(f"{option}: the directory {above} is not writable, so {p} cannot be made")
    return p


def check_output_target(path: str | Path, option: str) -> None:
    """An output path that exists must be a regular file: devices, pipes and sockets are refused
    (a write to ``/dev/full`` or a pipe nobody reads would fail late or hang)."""
    p = Path(path)
    try:
        st = os.stat(p)
    except OSError:  # missing, or under a non-directory: the checks after this one say which
        return
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
        raise OutputError(f"{option}: {p} is not a regular file (a device, pipe or socket): give a file path")


def check_not_input(path: str | Path, inputs: Sequence[tuple[str, str | Path]], option: str,
                    force: bool = False) -> None:
    """Refuse an output that is (or links to) one of ``inputs`` ((option, path) pairs): writing it would
    replace what the user wrote (a hand-made, commented system file), unless ``force``."""
    out = Path(path)
    if force or not out.exists():
        return
    for what, p in inputs:
        q = Path(p)
        if q.is_dir():
            inside = [f for f in q.rglob("*") if f.is_file()]
        else:
            inside = [q] if q.exists() else []
        for f in inside:
            if os.path.samefile(out, f):
                raise OutputError(f"{option}: {out} is {f}, an input ({what}): writing it would replace it; give "
                                  "another path, or --force")


def check_output_file(path: str | Path, option: str, suffixes: Sequence[str] = ()) -> Path:
    """A file that a command will write, checked before the work: suffix, kind, directory, permissions."""
    p = Path(path)
    check_output_target(p, option)
    if suffixes and p.suffix.lower() not in suffixes:
        names = list(suffixes)
        listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]
        raise OutputError(f"{option}: {p} should end in {listed}")
    if p.is_dir():
        raise OutputError(f"{option}: {p} is a directory, not a file")
    parent = p.absolute().parent
    if not parent.exists():
        raise OutputError(f"{option}: the directory {p.parent} of {p} does not exist")
    if not parent.is_dir():
        raise OutputError(f"{option}: {p.parent} is not a directory, so {p} cannot be written")
    if p.exists() and not os.access(p, os.W_OK):
        raise OutputError(f"{option}: {p} is not writable")
    if not p.exists() and not _writable_dir(parent):
        raise OutputError(f"{option}: the directory {p.parent} is not writable, so {p} cannot be written")
    return p


@contextmanager
def writing(option: str, path: str | Path) -> Iterator[None]:
    """Turn an ``OSError`` while writing ``path`` (a full disk, a path removed meanwhile) into one message."""
    try:
        yield
    except OSError as e:
        raise OutputError(f"{option}: cannot write {path} ({e.strerror or e})") from None


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def replace_file(path: str | Path, data: bytes, option: str) -> None:
    """Write ``data`` to ``path`` as a whole or not at all: into a temporary file beside it, then
    one rename (with Ctrl-C and ``SIGTERM`` held back), the temporary file removed on any failure."""
    p = Path(path)
    with writing(option, p):
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".p2sim-tmp", dir=p.absolute().parent)
        try:
            # mkstemp makes the file private; give it the mode the file had, or a new file's
            os.chmod(fd, p.stat().st_mode & 0o7777 if p.exists() else 0o666 & ~_umask())
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            with deferred_signals():
                os.replace(tmp, p)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


class _GuardedStream:
    """A text stream whose write or flush failure (a full disk, an I/O error) is one :class:`OutputError`
    naming it; a broken pipe stays a ``BrokenPipeError`` (the reader left: not an error of the command)."""

    def __init__(self, stream: TextIO, name: str) -> None:
        self._stream = stream
        self._name = name
        self.failed = False

    def _fail(self, e: OSError) -> None:
        self.failed = True
        if isinstance(e, BrokenPipeError):
            raise e
        raise OutputError(f"{self._name}: cannot write ({e.strerror or e})") from None

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except OSError as e:
            self._fail(e)
            raise  # unreachable: _fail raises

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as e:
            self._fail(e)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _discard(stream: TextIO) -> None:
    """Point ``stream``'s file descriptor at the null device: what it still buffers is dropped when the
    interpreter flushes it at exit, instead of failing again there with an ``Exception ignored`` report."""
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):  # not a file (a test's capture): nothing flushes it at exit
        return
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, fd)
    finally:
        os.close(null)


@contextmanager
def guarded_stdout() -> Iterator[None]:
    """Inside: a failure to write ``sys.stdout`` is one :class:`OutputError` (``stdout: cannot write
    (No space left on device)``), not an ``OSError`` traceback.  Stdout is flushed on the way out, so that a
    failure shows here rather than at the interpreter's exit; after a failure the rest of the output is
    dropped (the answer is lost anyway, and a second report of it would only repeat the first).  A closed
    stdout (``>&-``: Python's ``sys.stdout`` is ``None``) is refused here, before any work."""
    real = sys.stdout
    if real is None:
        raise OutputError("stdout: is closed (started with >&-?): the answer is printed there; send it to a file "
                          "(or to /dev/null to drop it)")
    guard = _GuardedStream(real, "stdout")
    sys.stdout = guard  # type: ignore[assignment]
    try:
        yield
        guard.flush()
    except BaseException:
        if not guard.failed:  # an error of its own: what was printed before it still goes out if it can
            try:
                guard.flush()
            except (OutputError, BrokenPipeError):
                pass
        if guard.failed:
            _discard(real)
        raise
    finally:
        sys.stdout = real
