"""Reaching a Docker engine with the ``docker`` SDK: the local one, or a node's through its socket forwarded
over SSH; and the one-line errors for what the SDK raises."""

from __future__ import annotations

import docker
from docker.errors import APIError, DockerException
from requests.exceptions import RequestException
from urllib3.exceptions import HTTPError

from sparktui.core.errors import Refused, Unavailable

#: Where a node's engine listens (forwarded over SSH to reach it from here).
SOCKET = "/var/run/docker.sock"
#: What the SDK raises when the engine cannot be reached or answers with an error.
SDK_ERRORS = (DockerException, RequestException, HTTPError, OSError)


def engine_name(base_url: str | None) -> str:
    """How errors name the engine at ``base_url``."""
    return f"the Docker engine at {base_url}" if base_url else "the local Docker engine"


def node_engine(node: str) -> str:
    """How errors name a node's engine reached through its socket forwarded over SSH (the forward's local
    path is sparktui's own temporary file, of no use to the reader)."""
    return f"the Docker engine at {SOCKET} on {node}"


def connect(base_url: str | None, engine: str | None = None) -> docker.DockerClient:
    """A client for the engine at ``base_url`` (default: the local engine, as ``DOCKER_HOST`` says), named
    ``engine`` in errors (default: by its address). Blocks; raises :class:`Unavailable` or
    :class:`Refused` with a one-line reason."""
    engine = engine or engine_name(base_url)
    try:
        if base_url is None:
            return docker.from_env(version="auto", timeout=30)
        return docker.DockerClient(base_url=base_url, version="auto", timeout=30)
    except SDK_ERRORS as exc:
        raise problem(exc, engine) from None


def problem(
    exc: BaseException, engine: str, container: str | None = None, doing: str = "cannot reach"
) -> Unavailable | Refused:
    """The one-line error for something the SDK raised (``doing`` what to the engine, when it is not an
    answer of the engine's)."""
    if isinstance(exc, APIError):
        reason = _one_line(str(exc.explanation or exc))
        subject = f"container {container}" if container else engine
        if exc.status_code == 501:  # e.g. "configured logging driver does not support reading"
            return Refused(f"{subject}: {reason}")
        return Unavailable(f"{subject}: {reason}")
    cause = _root_cause(exc)
    if isinstance(cause, PermissionError):
        return Refused(f"permission denied on {engine} (is this user allowed to use Docker?)")
    if isinstance(cause, OSError) and cause.strerror:
        return Unavailable(f"{doing} {engine}: {cause.strerror}")
    return Unavailable(f"{doing} {engine}: {_one_line(str(cause) or type(cause).__name__)}")


def _root_cause(exc: BaseException) -> BaseException:
    """The innermost error: requests and urllib3 nest theirs in ``args`` as well as in ``__cause__``."""
    seen: set[int] = set()
    while id(exc) not in seen:
        seen.add(id(exc))
        inner = exc.__cause__ or next((a for a in exc.args if isinstance(a, BaseException)), None)
        if inner is None:
            inner = getattr(exc, "reason", None)  # urllib3's MaxRetryError and friends
        if not isinstance(inner, BaseException):
            return exc
        exc = inner
    return exc


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + " …"
