"""``symbolkg mcp serve`` up to the MCP SDK: the server's settings, its stdio pipes, and ``initialize``.

The SDK takes about a second of CPU to import (its package imports its client side too, and
pydantic models of the whole protocol), more than everything else the server does before
its first tool call, and an MCP client waits for the answer to ``initialize`` before it sends
anything else. So over stdio the server answers ``initialize`` from this module, which imports
no SDK, and only then imports the SDK and the tools (:mod:`symbolkg.jobs.mcp_server`):

1. :func:`claim_stdio` takes the stdin and stdout pipes (fd 0 and 1 then point at the null device
   and stderr, as the SDK's transport does, so that stray output never reaches the protocol);
2. :func:`answer_initialize` reads the first message without consuming it and, if it is an
   ``initialize`` this module can answer exactly as the SDK would (:func:`initialize_result`),
   answers it at once;
3. the SDK then reads the same pipe from its first byte: it gets that ``initialize`` too, so it
   sets up the connection as if it had answered, and its reply is compared with ours and dropped
   (:class:`PipeWriter`); a difference is logged (it would be a bug: the tests compare the two for
   every protocol version).

:func:`symbolkg.jobs.commands.mcp.run` runs these steps, then imports :mod:`symbolkg.jobs.mcp_server`.

Anything else first (another protocol version, which the SDK negotiates; a 2026 per-request
envelope; a batch; a malformed request) is left to the SDK, which then answers it after its import.
The solver pool and the Prolog sessions start later still (the pool on the first ``solve_program``).
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import logging
import os
import select
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import anyio

log = logging.getLogger(__name__)

SERVER_NAME = "symbolkg-prolog"
SERVER_TITLE = "SymbolKG Prolog sessions"
SERVER_VERSION = "1"
INSTRUCTIONS = (
    "Load a Prolog program with consult_text (it returns a load_id), then query it with run_goal. "
    "Errors come back as {ok: false, error: {kind, message, prolog_term}}; the session survives them. "
    "close_session when done."
)
#: What the SDK declares for a server that lists tools and nothing else (checked against it by the tests).
CAPABILITIES: dict[str, Any] = {"tools": {"listChanged": False}}
#: Protocol versions the SDK accepts as the client asks them in ``initialize`` (it answers any other with
#: its latest one): the ones answered early. A subset of the SDK's ``HANDSHAKE_PROTOCOL_VERSIONS`` (tested).
HANDSHAKE_VERSIONS: tuple[str, ...] = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")


@dataclass(frozen=True)
class ServerConfig:
    """Settings of one server process.

    Attributes:
        max_sessions: the most Prolog sessions alive at once; creating one more evicts the
            least recently used (its ``load_id`` then answers ``session_evicted``).
        idle_ttl_s: a session unused this long is closed by the reaper (``session_expired``).
        memory_mb: address-space limit of each session's ``swipl`` process.
        reap_interval_s: how often the reaper looks for idle sessions.
        progress_interval_s: seconds between progress notifications of a long call.
        solver_workers: worker processes of the ``solve_program`` pool (started on first use).
        solver_memory_mb: address-space limit of each solver worker.
    """

    max_sessions: int = 64
    idle_ttl_s: float = 1800.0
    memory_mb: int = 1024
    reap_interval_s: float = 5.0
    progress_interval_s: float = 0.5
    solver_workers: int = 1
    solver_memory_mb: int = 2048

    def __post_init__(self) -> None:
        if self.max_sessions < 1:
            raise ValueError(f"max_sessions must be >= 1, got {self.max_sessions}")
        if not self.idle_ttl_s > 0:
            raise ValueError(f"idle_ttl_s must be > 0 seconds, got {self.idle_ttl_s}")
        if self.memory_mb < 128:
            raise ValueError(f"memory_mb must be >= 128 (a swipl session needs that much), got {self.memory_mb}")
        if not self.reap_interval_s > 0 or not self.progress_interval_s > 0:
            raise ValueError("reap_interval_s and progress_interval_s must be > 0")
        if self.solver_workers < 1:
            raise ValueError(f"solver_workers must be >= 1, got {self.solver_workers}")


def config_from_args(args: argparse.Namespace) -> ServerConfig:
    """The :class:`ServerConfig` of ``symbolkg mcp serve``'s flags. Raises ValueError on a bad value."""
    return ServerConfig(
        max_sessions=args.max_sessions,
        idle_ttl_s=args.idle_ttl,
        memory_mb=args.memory_mb,
        reap_interval_s=min(5.0, max(0.1, args.idle_ttl / 4)),
        solver_workers=args.solver_workers,
    )


# ----------------------------------------------------------------------------------------- pipes


class PipeLines:
    """Lines of a pipe (or socket) descriptor, read on the event loop; an async iterator of ``str``.

    What the SDK's stdio transport needs of its ``stdin`` (``async for line in stdin``), without
    :func:`anyio.wrap_file`'s worker thread per line. Invalid UTF-8 is replaced, as the SDK does.
    :meth:`peek_line` reads the first line before the event loop runs, without consuming it.
    """

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._buffer = bytearray()
        self._eof = False

    def __aiter__(self) -> PipeLines:
        return self

    def _line(self) -> bytes | None:
        """The next line, removed from the buffer (the last one may lack its newline); None if none is whole yet."""
        end = self._buffer.find(b"\n")
        if end < 0 and not (self._eof and self._buffer):
            return None
        end = end + 1 if end >= 0 else len(self._buffer)
        line = bytes(self._buffer[:end])
        del self._buffer[:end]
        return line

    def _read_some(self) -> bool:
        """Read what the pipe holds into the buffer; False if it would block."""
        try:
            chunk = os.read(self.fd, 1 << 16)
        except BlockingIOError:
            return False
        if chunk:
            self._buffer += chunk
        else:
            self._eof = True
        return True

    async def __anext__(self) -> str:
        while True:
            line = self._line()
            if line is not None:
                return line.decode("utf-8", errors="replace")
            if self._eof:
                raise StopAsyncIteration
            if not self._read_some():
                await anyio.wait_readable(self.fd)

    def peek_line(self) -> bytes | None:
        """Block (no event loop yet) until the first line is in; return it, left in place. None at EOF first."""
        while self._buffer.find(b"\n") < 0 and not self._eof:
            if not self._read_some():
                select.select([self.fd], [], [])
        end = self._buffer.find(b"\n")
        return bytes(self._buffer[: end + 1]) if end >= 0 else (bytes(self._buffer) or None)


class PipeWriter:
    """Writes ``str`` to a non-blocking pipe (or socket) descriptor from the event loop (the SDK's ``stdout``).

    A write that does not fit in the pipe waits for the reader on the event loop, never blocking it.
    After an early ``initialize`` answer (:meth:`expect_reply`), the SDK's own reply to the same
    request is compared with it and dropped, so the client gets one answer.
    """

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._expected: tuple[Any, dict[str, Any]] | None = None

    def expect_reply(self, request_id: Any, result: dict[str, Any]) -> None:
        """The client already has ``result`` for ``request_id``: drop the SDK's reply to it (once)."""
        self._expected = (request_id, result)

    def _is_expected(self, text: str) -> bool:
        try:
            message = json.loads(text)
        except ValueError:
            return False
        request_id, result = self._expected  # type: ignore[misc]
        if not isinstance(message, dict) or message.get("id") != request_id or "method" in message:
            return False
        self._expected = None
        if message.get("result") != result:
            log.warning("initialize was answered early with %s, but the MCP SDK answers %s", result, text.strip())
        return True

    async def write(self, text: str) -> None:
        if self._expected is not None and self._is_expected(text):
            return
        data = memoryview(text.encode("utf-8"))
        while data:
            try:
                data = data[os.write(self.fd, data) :]
            except BlockingIOError:
                await anyio.wait_writable(self.fd)

    async def flush(self) -> None:
        pass  # nothing is buffered


@dataclass(frozen=True)
class StdioPipes:
    """The server's end of a client's stdin and stdout pipes, through private descriptors (:func:`claim_stdio`)."""

    reader: PipeLines
    writer: PipeWriter


def is_pipe(fd: int) -> bool:
    """True when ``fd`` is a pipe or a socket (as an MCP client starts a server), not a terminal or a file."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


@contextlib.contextmanager
def claim_stdio() -> Iterator[StdioPipes]:
    """stdin and stdout (pipes) as non-blocking private duplicates; meanwhile fd 0 is the null device, fd 1 stderr.

    As the SDK's transport does, so that stray output of a library or a child never corrupts the
    protocol. Everything is put back on the way out.
    """
    fd_in, fd_out = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3), fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    try:
        os.dup2(2, 1)
    except OSError:  # no stderr: stray output goes nowhere
        os.dup2(null, 1)
    os.close(null)
    blocking = os.get_blocking(fd_in), os.get_blocking(fd_out)
    os.set_blocking(fd_in, False)
    os.set_blocking(fd_out, False)
    try:
        yield StdioPipes(PipeLines(fd_in), PipeWriter(fd_out))
    finally:
        for fd, was_blocking in zip((fd_in, fd_out), blocking, strict=True):
            with contextlib.suppress(OSError):
                os.set_blocking(fd, was_blocking)
        with contextlib.suppress(OSError):
            os.dup2(fd_in, 0)
            os.dup2(fd_out, 1)


# ----------------------------------------------------------------------------------------- initialize


def initialize_result(message: Any) -> dict[str, Any] | None:
    """The SDK's result for ``message`` if it is an ``initialize`` this module answers exactly, else None.

    Exactly: a JSON-RPC request ``initialize`` with an integer or string id, a protocol version of
    :data:`HANDSHAKE_VERSIONS` (the SDK answers with the same), capabilities and a client name and
    version (what the SDK's validation requires), and no ``_meta`` (which may carry a 2026 envelope).
    """
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0" or message.get("method") != "initialize":
        return None
    request_id, params = message.get("id"), message.get("params")
    if isinstance(request_id, bool) or not isinstance(request_id, (int, str)) or not isinstance(params, dict):
        return None
    client = params.get("clientInfo")
    if (
        "_meta" in params
        or params.get("protocolVersion") not in HANDSHAKE_VERSIONS
        or not isinstance(params.get("capabilities"), dict)
        or not isinstance(client, dict)
        or not isinstance(client.get("name"), str)
        or not isinstance(client.get("version"), str)
    ):
        return None
    return {
        "protocolVersion": params["protocolVersion"],
        "capabilities": CAPABILITIES,
        "serverInfo": {"name": SERVER_NAME, "title": SERVER_TITLE, "version": SERVER_VERSION},
        "instructions": INSTRUCTIONS,
    }


def answer_initialize(pipes: StdioPipes) -> bool:
    """Answer the client's first message now if it is an ``initialize`` of :func:`initialize_result`.

    The message stays in the reader for the SDK, which replies too; that reply is dropped.

    Returns:
        Whether it was answered (False: the SDK answers whatever came first).
    """
    line = pipes.reader.peek_line()
    try:
        message = json.loads(line) if line else None
    except ValueError:
        return False
    result = initialize_result(message)
    if result is None:
        return False
    reply = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}, separators=(",", ":")) + "\n"
    data = memoryview(reply.encode("utf-8"))
    while data:
        try:
            data = data[os.write(pipes.writer.fd, data) :]
        except BlockingIOError:
            select.select([], [pipes.writer.fd], [])
    pipes.writer.expect_reply(message["id"], result)
    return True
