"""Just enough HTTP/1.1 for asking a server whether it serves, over any byte stream: a TCP connection from
this machine, or one a node opens itself through its SSH connection (so ``localhost`` is the node's). One
request per connection (``Connection: close``); a body by its length, in chunks, or up to the end; nothing
compressed (``Accept-Encoding: identity``).

Failures are :class:`HttpError` with a one-line reason a person can act on: ``connection refused``, ``no
answer within 10 s``, ``not HTTP: ...``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit

from sparktui.core.errors import Refused, Unavailable
from sparktui.core.text import decode, display

#: The most a body may hold (a ``/metrics`` answer of a large deployment is a few hundred kB).
MAX_BODY = 16 << 20


class Reader(Protocol):
    """The reading half of a connection, as asyncio's stream reader offers it."""

    async def readline(self) -> bytes: ...
    async def readexactly(self, n: int, /) -> bytes: ...
    async def read(self, n: int = -1, /) -> bytes: ...


class Writer(Protocol):
    """The writing half of a connection, as asyncio's stream writer offers it."""

    def write(self, data: bytes, /) -> None: ...
    async def drain(self) -> None: ...
    def close(self) -> None: ...


#: Opens a byte stream to ``host:port``: :func:`asyncio.open_connection`, or a node's own TCP connection.
Connect = Callable[[str, int], Awaitable[tuple[Reader, Writer]]]


async def direct(host: str, port: int) -> tuple[Reader, Writer]:
    """A TCP connection from this machine."""
    return await asyncio.open_connection(host, port)


class HttpError(Exception):
    """No usable answer; the message is one line."""


@dataclass(frozen=True, slots=True)
class Response:
    """An HTTP response read whole: its status, headers and body."""

    status: int
    headers: dict[str, str]  # names in lower case
    body: bytes

    def json(self) -> Any:
        try:
            return json.loads(self.body)
        except ValueError:
            raise HttpError(f"HTTP {self.status}, not JSON: {_shown(self.body)}") from None


def split(url: str) -> tuple[str, int, str]:
    """Host, port and path (with the query) of an ``http://`` URL."""
    parts = urlsplit(url)
    if parts.scheme != "http" or not parts.hostname:
        raise Refused(f"{url}: only http:// URLs can be asked")
    try:
        port = parts.port or 80
    except ValueError:
        raise Refused(f"{url}: the port must be a number from 1 to 65535") from None
    return parts.hostname, port, (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


class Exchange:
    """One request and its answer on a connection of its own; the body can be taken whole
    (:meth:`response`) or as it arrives (:meth:`chunks`, for a stream of server-sent events)."""

    def __init__(self, reader: Reader, writer: Writer, status: int, headers: dict[str, str]) -> None:
        self.reader, self.writer, self.status, self.headers = reader, writer, status, headers

    async def chunks(self) -> AsyncGenerator[bytes, None]:
        """The body as it arrives; the connection is closed after it."""
        try:
            if "chunked" in self.headers.get("transfer-encoding", "").lower():
                while True:
                    size_line = await self.reader.readline()
                    try:
                        size = int(size_line.split(b";")[0].strip() or b"x", 16)
                    except ValueError:
                        raise HttpError(f"a broken chunked body: {_shown(size_line)}") from None
                    if size == 0:
                        return
                    chunk = await self.reader.readexactly(size + 2)
                    yield chunk[:-2]
            elif "content-length" in self.headers:
                left = int(self.headers["content-length"])
                while left > 0:
                    chunk = await self.reader.read(min(left, 65536))
                    if not chunk:
                        raise HttpError(f"the answer ended {left} bytes short of its length")
                    left -= len(chunk)
                    yield chunk
            else:
                while chunk := await self.reader.read(65536):
                    yield chunk
        except asyncio.IncompleteReadError:
            raise HttpError("the answer ended in the middle of a chunk") from None
        finally:
            self.writer.close()

    async def response(self) -> Response:
        body = bytearray()
        async for chunk in self.chunks():
            body += chunk
            if len(body) > MAX_BODY:
                raise HttpError(f"an answer of more than {MAX_BODY >> 20} MiB")
        return Response(self.status, self.headers, bytes(body))


async def send(connect: Connect, method: str, url: str, body: Any = None, *, timeout: float = 10.0) -> Exchange:
    """Send a request (``body``, if any, as JSON) and read the status and headers of its answer within
    ``timeout`` seconds."""
    host, port, path = split(url)
    data = b"" if body is None else json.dumps(body).encode()
    head = [
        f"{method} {path} HTTP/1.1",
        f"Host: {host}:{port}",
        "User-Agent: sparktui",
        "Accept-Encoding: identity",
        "Connection: close",
    ]
    if body is not None:
        head += ["Content-Type: application/json", f"Content-Length: {len(data)}"]
    try:
        reader, writer = await asyncio.wait_for(connect(host, port), timeout)
    except TimeoutError:
        raise HttpError(f"{host}:{port}: no connection within {timeout:g} s") from None
    except ConnectionRefusedError:
        raise HttpError(f"{host}:{port}: connection refused") from None
    except OSError as exc:
        raise HttpError(f"{host}:{port}: {exc.strerror or exc}") from None
    except (Unavailable, Refused) as exc:  # a node's own connection: the message names the node and the port
        raise HttpError(str(exc)) from None
    try:
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + data)
        await writer.drain()
        status, headers = await asyncio.wait_for(_head(reader), timeout)
    except TimeoutError:
        writer.close()
        raise HttpError(f"{method} {url}: no answer within {timeout:g} s") from None
    except (OSError, HttpError) as exc:
        writer.close()
        raise HttpError(f"{method} {url}: {exc}") from None
    return Exchange(reader, writer, status, headers)


async def request(connect: Connect, method: str, url: str, body: Any = None, *, timeout: float = 10.0) -> Response:
    """A request and its whole answer, all within ``timeout`` seconds."""

    async def whole() -> Response:
        exchange = await send(connect, method, url, body, timeout=timeout)
        return await exchange.response()

    try:
        return await asyncio.wait_for(whole(), timeout)
    except TimeoutError:
        raise HttpError(f"{method} {url}: no whole answer within {timeout:g} s") from None


async def _head(reader: Reader) -> tuple[int, dict[str, str]]:
    line = await reader.readline()
    parts = line.split(None, 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/") or not parts[1].isdigit():
        raise HttpError("no HTTP answer" if not line else f"not HTTP: {_shown(line)}")
    headers: dict[str, str] = {}
    while (header := await reader.readline()) not in (b"\r\n", b"\n", b""):
        name, _, value = decode(header).partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(parts[1]), headers


def _shown(data: bytes) -> str:
    """The start of what was sent instead, on one line."""
    return display(decode(data[:200]).strip().split("\n", 1)[0][:120])
