"""A small TCP key-value store for the ranks' rendezvous.

Rank 0 serves it; every rank (rank 0 too) is a client.  It listens only on the
address it is given (loopback by default) and answers only requests that carry the
run's random token.  Requests and answers are JSON lines; values are strings (the
callers encode bytes).  ``wait`` blocks until keys exist or a timeout passes, so a
dead peer turns into a clear error rather than a hang.
"""

from __future__ import annotations

import hmac
import json
import socket
import socketserver
import threading
import time
from typing import Any

from .errors import BenchError, PeerLost

__all__ = ["StoreServer", "StoreClient"]


class _Handler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        try:
            self._serve()
        except (OSError, ValueError):
            pass  # a rank that stopped or died closed its connection mid-request

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
            self.wfile.write((json.dumps(server.serve(req)) + "\n").encode())
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

    def serve(self, req: dict[str, Any]) -> dict[str, Any]:
        op = req.get("op")
        with self._cond:
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
                while not all(k in self._data for k in keys):
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return {"timeout": [k for k in keys if k not in self._data]}
                    self._cond.wait(left)
                return {"values": [self._data[k] for k in keys]}
        return {"error": f"unknown op {op!r}"}


class StoreClient:
    """One connection to the store (not shared between threads)."""

    def __init__(self, address: str, port: int, token: str, connect_timeout: float = 60.0) -> None:
        self.token = token
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

    def _call(self, req: dict[str, Any]) -> dict[str, Any]:
        req["token"] = self.token
        try:
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
