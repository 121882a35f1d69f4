"""The smoke test: one short completion through the server's OpenAI API, timed.

"It started" is not "it works": a vLLM server can answer ``/health`` with 200 while generating nothing. So
this asks ``/v1/models`` for the model it serves, streams one completion of a few tokens from
``/v1/completions`` and says how long the first token took and how fast the rest came:

* ``ready``: tokens came, at least ``slow_below`` tokens per second;
* ``slow``: tokens came, more slowly than that;
* ``block``: no usable answer, with the one-line reason (connection refused, no such model, an error from the
  engine, no token within the time limit).
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass

from sparktui.core.serving.http import Connect, HttpError, direct, request, send
from sparktui.core.text import display

#: Below this many generated tokens per second the verdict is ``slow``.
SLOW_BELOW = 5.0
#: Tokens asked for: enough to time the generation, few enough for a second or two on a slow server.
MAX_TOKENS = 32
#: Seconds ``/v1/models`` may take (a list the server holds in memory), or the smoke's own timeout if shorter.
MODELS_TIMEOUT = 10.0
PROMPT = "The quick brown fox jumps over the lazy dog. Hello, world!"


@dataclass(frozen=True, slots=True)
class Smoke:
    """What one completion showed. ``first_token``: seconds from the request to the first token;
    ``tokens_per_s``: the tokens after the first over the time after it (the generation speed a user sees),
    or all of them over the whole time when only one chunk came."""

    url: str
    verdict: str  # ready | slow | block
    reason: str  # one line
    model: str = ""
    tokens: int = 0
    seconds: float = 0.0
    first_token: float | None = None
    tokens_per_s: float | None = None

    @property
    def summary(self) -> str:
        """One line: the verdict, then the figures or the reason."""
        return f"{self.verdict}: {self.reason}"


def base_url(url: str) -> str:
    """The server's root for an address given with or without the API's path (``http://h:8000/v1``)."""
    url = url.rstrip("/")
    return url.removesuffix("/v1")


async def smoke(
    url: str,
    connect: Connect = direct,
    *,
    model: str = "",
    max_tokens: int = MAX_TOKENS,
    timeout: float = 60.0,
    slow_below: float = SLOW_BELOW,
) -> Smoke:
    """Send one completion to the server at ``url`` (its root or its ``/v1``) over ``connect``; the model is
    ``model`` or the first one ``/v1/models`` lists. Never raises for what the server does: a failure is a
    ``block`` verdict with its reason."""
    base = base_url(url)
    try:
        if not model:
            model = await _served_model(base, connect, min(timeout, MODELS_TIMEOUT))
        return await _complete(base, connect, model, max_tokens, timeout, slow_below)
    except _Blocked as exc:
        return Smoke(base, "block", str(exc), model)
    except HttpError as exc:
        return Smoke(base, "block", str(exc), model)


class _Blocked(Exception):
    pass


async def _served_model(base: str, connect: Connect, timeout: float) -> str:
    answer = await request(connect, "GET", f"{base}/v1/models", timeout=timeout)
    if answer.status == 404:
        raise _Blocked(f"GET {base}/v1/models: 404: not an OpenAI-compatible server (or not its address)")
    if answer.status != 200:
        raise _Blocked(f"GET {base}/v1/models: HTTP {answer.status}: {_message(answer.body)}")
    try:
        listed = answer.json()
    except HttpError as exc:
        raise _Blocked(f"GET {base}/v1/models: {exc}") from None
    models = [m.get("id") for m in listed.get("data", []) if isinstance(m, dict)] if isinstance(listed, dict) else []
    if not models or not isinstance(models[0], str):
        raise _Blocked(f"GET {base}/v1/models: no model is served")
    return models[0]


async def _complete(base: str, connect: Connect, model: str, max_tokens: int, timeout: float, slow: float) -> Smoke:
    body = {
        "model": model,
        "prompt": PROMPT,
        "max_tokens": max_tokens,
        "temperature": 0,
        "ignore_eos": True,  # vLLM and SGLang: generate all of them, whatever the model thinks
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    url = f"{base}/v1/completions"
    start = time.monotonic()
    exchange = await send(connect, "POST", url, body, timeout=timeout)
    if exchange.status != 200:
        answer = await exchange.response()
        what = "no such model" if exchange.status == 404 else f"HTTP {exchange.status}"
        raise _Blocked(f"POST {url}: {what}: {_message(answer.body)}")
    events = _Events(url)
    chunks = exchange.chunks()
    try:
        async with asyncio.timeout(max(timeout - (time.monotonic() - start), 0.1)):
            async for data in chunks:
                events.feed(data, time.monotonic())
    except TimeoutError:
        got = f"{events.chunks} tokens, then nothing" if events.chunks else "no token"
        raise _Blocked(f"POST {url}: {got} within {timeout:g} s") from None
    finally:
        await chunks.aclose()
    tokens = events.usage if events.usage is not None else events.chunks
    first, last = events.first, events.last
    if tokens == 0 or first is None or last is None:
        raise _Blocked(f"POST {url}: the answer ended without a token")
    elapsed, after = last - start, last - first
    rate = (tokens - 1) / after if tokens > 1 and after > 0 else (tokens / elapsed if elapsed > 0 else None)
    figures = f"{tokens} tokens in {elapsed:.2f} s, first after {first - start:.2f} s"
    if rate is not None:
        figures += f", {rate:.1f} tokens/s"
    verdict = "slow" if rate is not None and rate < slow else "ready"
    reason = figures if verdict == "ready" else f"{figures}, below {slow:g} tokens/s"
    return Smoke(base, verdict, reason, model, tokens, elapsed, first - start, rate)


class _Events:
    """Server-sent events of a streamed completion, fed as the bytes come: when the first and the last
    token came, how many chunks held text, and the token count of the final usage report."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.first: float | None = None
        self.last: float | None = None
        self.chunks = 0
        self.usage: int | None = None
        self._pending = b""

    def feed(self, data: bytes, now: float) -> None:
        *events, self._pending = (self._pending + data).split(b"\n")
        for event in events:
            payload = event.strip()
            if not payload.startswith(b"data:") or payload == b"data: [DONE]":
                continue
            try:
                message = json.loads(payload[5:])
            except ValueError:
                continue
            if not isinstance(message, dict):
                continue
            if isinstance(message.get("error"), dict):
                raise _Blocked(f"POST {self.url}: the engine failed mid-answer: {_said(message['error'])}")
            usage = message.get("usage")
            if isinstance(usage, dict) and isinstance(usage.get("completion_tokens"), int):
                self.usage = usage["completion_tokens"]
            choices = message.get("choices") or []
            if any(isinstance(c, dict) and c.get("text") for c in choices):
                self.chunks += 1
                self.first = now if self.first is None else self.first
                self.last = now


def _message(body: bytes) -> str:
    """The error an OpenAI-style server sends, or the start of what it sent."""
    try:
        answer = json.loads(body)
    except ValueError:
        return display(body[:160].decode(errors="replace").strip()) or "an empty answer"
    error = answer.get("error", answer) if isinstance(answer, dict) else answer
    return _said(error)


def _said(error: object) -> str:
    if isinstance(error, dict):
        for key in ("message", "detail"):
            if isinstance(error.get(key), str):
                return display(error[key])
    return display(json.dumps(error)[:160])
