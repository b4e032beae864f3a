"""A small TCP key-value store for the ranks' rendezvous.

Rank 0 serves it; every rank (rank 0 too) is a client.  It listens only on the
address it is given (loopback by default) and answers only requests that carry the
run's random token.  Requests and answers are JSON lines; values are strings (the
callers encode bytes).  ``wait`` blocks until keys exist or a timeout passes, so a
dead peer turns into a clear error rather than a hang.  Once a rank has failed (the key
:data:`ABORT` is set), the waits go on while any rank still works -- one computing, or
reporting a result late on a loaded machine, may still set what the others wait for, so what
every rank measured before the failure is still collected and logged -- and end, with the
failure, when every rank still connected waits for a key that is not there: then none can
come.
"""

from __future__ import annotations

import hmac
import json
import socket
import socketserver
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .errors import BenchError, PeerLost, StoppedByPeer

__all__ = ["StoreServer", "StoreClient", "ABORT"]

ABORT = "abort"  # the key a failing rank (or the launcher) sets: "rank N: why"


class _Handler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        try:
            self._serve()
        except (OSError, ValueError):
            pass  # a rank that stopped or died closed its connection mid-request
        finally:
            self.server.owner.leave(self)  # type: ignore[attr-defined]

    def _serve(self) -> None:
        server: StoreServer = self.server.owner  # type: ignore[attr-defined]
        for line in self.rfile:
            try:
                req = json.loads(line)
            except json.JSONDecodeError:
                return
            if not isinstance(req, dict) or not hmac.compare_digest(str(req.get("token", "")), server.token):
                self.wfile.write(b'{"error": "bad token"}\n')
                return  # a peer without the token gets nothing and is dropped
            self.wfile.write((json.dumps(server.serve(req, self)) + "\n").encode())
            self.wfile.flush()


class _TCPServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address) -> None:  # type: ignore[override]
        pass  # a peer's broken connection is reported by the peers that wait for it, not here


class StoreServer:
    """The store; ``start()`` serves it on a background thread."""

    def __init__(self, address: str, port: int, token: str) -> None:
        if not token:
            raise BenchError("store: a run needs a token (P2SIM_BENCH_TOKEN)")
        self.token = token
        self._data: dict[str, str] = {}
        self._cond = threading.Condition()
        # connections that take part (set or wait for keys; a watchdog's or a reader's gets do not), and those of
        # them waiting for a key that is not there: when all are, after a failure, none can go on
        self._members: set[object] = set()
        self._blocked: set[object] = set()
        self._stuck_seen = False  # once every rank waited in vain after a failure, no key can come any more
        try:
            self._server = _TCPServer((address, port), _Handler)
        except OSError as e:
            raise BenchError(f"store: cannot listen on {address}:{port} ({e.strerror})") from None
        self._server.owner = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True, name="bench-store")

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    def start(self) -> StoreServer:
        self._thread.start()
        return self

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def leave(self, conn: object) -> None:
        """A connection closed (its rank stopped, ended, or died): the waits look again."""
        with self._cond:
            self._members.discard(conn)
            self._blocked.discard(conn)
            self._cond.notify_all()

    def _stuck(self) -> bool:
        """A rank failed and every rank still connected waits for what is not there: nothing more can come
        (from then on: the first wait answered so stops waiting, and the others must not then wait for it)."""
        self._stuck_seen = self._stuck_seen or ABORT in self._data and self._members <= self._blocked
        return self._stuck_seen

    def serve(self, req: dict[str, Any], conn: object = None) -> dict[str, Any]:
        op = req.get("op")
        with self._cond:
            if op != "get":
                self._members.add(conn)
            if op == "set":
                self._data[req["key"]] = req["value"]
                self._cond.notify_all()
                return {"ok": True}
            if op == "add":
                value = int(self._data.get(req["key"], "0")) + int(req["value"])
                self._data[req["key"]] = str(value)
                self._cond.notify_all()
                return {"value": value}
            if op == "get":
                return {"value": self._data.get(req["key"])}
            if op == "delete":
                for k in req["keys"]:
                    self._data.pop(k, None)
                return {"ok": True}
            if op == "wait":
                keys = req["keys"]
                deadline = time.monotonic() + float(req["timeout"])
                self._blocked.add(conn)
                self._cond.notify_all()  # the other waits look again: this may be the last rank to block
                try:
                    while not all(k in self._data for k in keys):
                        if self._stuck():
                            return {"abort": self._data[ABORT]}
                        left = deadline - time.monotonic()
                        if left <= 0:
                            return {"timeout": [k for k in keys if k not in self._data]}
                        self._cond.wait(left)
                    return {"values": [self._data[k] for k in keys]}
                finally:
                    self._blocked.discard(conn)
        return {"error": f"unknown op {op!r}"}


class StoreClient:
    """One connection to the store (not shared between threads).

    ``calls`` counts the requests made and :attr:`busy` says whether one is under way (or the caller
    marked its work :meth:`active`): the session's watchdog reads them from its thread to tell a rank
    that is working from one stuck in a device call.
    """

    def __init__(self, address: str, port: int, token: str, connect_timeout: float = 60.0) -> None:
        self.token = token
        self.calls = 0
        self._active = 0
        deadline = time.monotonic() + connect_timeout
        while True:
            try:
                self._sock = socket.create_connection((address, port), timeout=5.0)
                break
            except OSError as e:
                if time.monotonic() > deadline:
                    raise BenchError(f"store: cannot reach rank 0 at {address}:{port} ({e.strerror or e})") from None
                time.sleep(0.05)
        self._sock.settimeout(None)
        self._file = self._sock.makefile("rwb")

    @property
    def busy(self) -> bool:
        return self._active > 0

    @contextmanager
    def active(self) -> Iterator[None]:
        """Within the block this rank is working, not stuck (writing the log): the watchdog leaves it be."""
        self._active += 1
        try:
            yield
        finally:
            self._active -= 1
            self.calls += 1

    def _call(self, req: dict[str, Any]) -> dict[str, Any]:
        req["token"] = self.token
        try:
            with self.active():
                self._file.write((json.dumps(req) + "\n").encode())
                self._file.flush()
                line = self._file.readline()
        except OSError as e:
            raise PeerLost(f"store: lost the connection to rank 0 ({e})") from None
        if not line:
            raise PeerLost("store: rank 0 closed the connection (did it die?)")
        try:
            out = json.loads(line)
        except json.JSONDecodeError:
            raise PeerLost("store: a broken answer from rank 0 (did it die?)") from None
        if "error" in out:
            raise BenchError(f"store: {out['error']}")
        return out

    def set(self, key: str, value: str) -> None:
        self._call({"op": "set", "key": key, "value": value})

    def get(self, key: str) -> str | None:
        return self._call({"op": "get", "key": key})["value"]

    def add(self, key: str, value: int) -> int:
        return int(self._call({"op": "add", "key": key, "value": value})["value"])

    def delete(self, keys: list[str]) -> None:
        self._call({"op": "delete", "keys": keys})

    def wait(self, keys: list[str], timeout: float, what: str = "") -> list[str]:
        out = self._call({"op": "wait", "keys": keys, "timeout": timeout})
        if "abort" in out:
            raise StoppedByPeer(f"stopping: {out['abort']}")
        if "timeout" in out:
            raise BenchError(f"timeout: {what or 'peers'} did not arrive within {timeout:g} s "
                             f"(missing {', '.join(out['timeout'][:3])}); a rank has probably died")
        return out["values"]

    def close(self) -> None:
        try:
            self._file.close()
            self._sock.close()
        except OSError:
            pass
