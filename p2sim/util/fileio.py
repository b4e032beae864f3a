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

import os
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from .errors import InputError, OutputError
from .signals import deferred_signals

__all__ = ["read_text", "decode", "check_output_dir", "check_output_file", "writing", "replace_file"]


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


def read_text(path: str | Path, what: str = "text file", error: type[InputError] = InputError) -> str:
    """The text of a UTF-8 file; a missing, unreadable or non-UTF-8 file is one ``error`` naming it."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise error(f"{p}: no such {what}") from None
    except IsADirectoryError:
        raise error(f"{p}: is a directory, not a {what}") from None
    except OSError as e:
        raise error(f"{p}: cannot read this {what} ({e.strerror or e})") from None
    return decode(data, str(p), what, error)


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


def check_output_file(path: str | Path, option: str, suffixes: Sequence[str] = ()) -> Path:
    """A file that a command will write, checked before the work: suffix, directory, permissions."""
    p = Path(path)
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
