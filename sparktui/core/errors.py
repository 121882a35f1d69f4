"""The errors sparktui shows a person: a thing is unavailable for now (retrying may help), refused (retrying
cannot help), or input that cannot be used. Each message is one line for the user, never a traceback."""

from __future__ import annotations


class Unavailable(Exception):
    """Cannot be reached right now (connection refused or dropped, container gone, host down): try again
    later."""


class Refused(Exception):
    """Retrying cannot help (authentication refused, unknown or changed host key, bad address, a file that
    cannot be read): stop, with this message."""


class Invalid(ValueError):
    """Input that cannot be used: a file, an argument, a value; the message names what, where and why."""
