"""The errors every way of reaching a node or a log shares: a thing is unavailable for now (retrying may
help) or refused (retrying cannot help). Each message is one line for the user."""

from __future__ import annotations


class Unavailable(Exception):
    """Cannot be reached right now (connection refused or dropped, container gone, host down): try again
    later."""


class Refused(Exception):
    """Retrying cannot help (authentication refused, unknown or changed host key, bad address, a file that
    cannot be read): stop, with this message."""
