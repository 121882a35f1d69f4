"""A machine's SSH address as the cluster file, ``discover`` and the command line give it, ``[user@]host[:port]``
or an ``~/.ssh/config`` Host alias, taken apart once (no SSH library needed: reports and matching use it too)."""

from __future__ import annotations

from typing import NamedTuple
from urllib.parse import urlsplit


class Address(NamedTuple):
    """Who to log in as (None: the SSH config's or the local user), the host and the port (None: 22 or the
    config's)."""

    user: str | None
    host: str
    port: int | None


def ssh_address(target: str) -> Address:
    """``[user@]host[:port]`` taken apart (an IPv6 address in brackets: ``[fe80::1]:22``, its host without
    them). Raises :class:`ValueError` with a one-line message for a bad port."""
    try:
        parts = urlsplit(f"//{target}")
        port = parts.port
    except ValueError:
        raise ValueError(f"{target}: the port must be a number from 1 to 65535") from None
    return Address(parts.username, parts.hostname or target, port)
