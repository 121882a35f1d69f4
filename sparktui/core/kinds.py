"""The kinds of value that playbooks and the cluster file take (an interface, a host, a port, a path...),
what each may look like, and the shape of an id (a signature's, a playbook's)."""

from __future__ import annotations

import ipaddress
import shlex

import regex

from sparktui.core.text import UNSEEN

#: What a value of each kind may look like. A value that does not fit is refused, never escaped into shape: the
#: kinds that take any text (a path, a setting, a command line) refuse the controls and the characters a terminal
#: does not draw or that reorder a line (a bidirectional override in a path taken from a log would show the
#: command to approve as another one), as the screens show them escaped (:data:`sparktui.core.text.UNSEEN`).
KINDS: dict[str, str] = {
    "iface": r"[A-Za-z0-9][A-Za-z0-9_.:@-]{0,14}",
    "host": r"[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?|\[?[0-9A-Fa-f:.]+\]?",
    "port": r"(?:6553[0-5]|655[0-2]\d|65[0-4]\d\d|6[0-4]\d{3}|[1-5]\d{4}|[1-9]\d{0,3})",
    "path": rf"[^\x00-\x1f{UNSEEN}]{{1,4096}}",
    "name": r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}",
    "image": r"[a-z0-9][a-z0-9._/:@-]{0,254}",
    "int": r"\d{1,9}",
    "number": r"\d{1,9}(?:\.\d{1,9})?",
    "env": rf"[A-Za-z_][A-Za-z0-9_]{{0,127}}=[^\x00-\x1f{UNSEEN}]{{0,4096}}",
    "text": rf"[^\x00-\x1f{UNSEEN}]{{0,4096}}",
    # Shell words already quoted (the canonical shlex.join form, checked): substituted as they are, so
    # ``{recreate} --flag`` appends words to a command. Probes produce these; a user may type them.
    "argv": rf"[^\x00-\x1f{UNSEEN}]{{0,65536}}",
    # An engine's launch as a user writes it (``vllm serve MODEL --flag value``), one command: the playbooks
    # refuse a shell operator or a redirection in it and substitute its words, each quoted
    # (sparktui.core.launch.lexer.quoted), so the shell a playbook hands it to runs those words and nothing else.
    "launch": rf"[^\x00-\x1f{UNSEEN}]{{1,65536}}",
}
#: How a message names a value of each kind.
NOUNS: dict[str, str] = {
    "iface": "a network interface name",
    "host": "a host name or address",
    "port": "a port number",
    "path": "a path",
    "name": "a name",
    "image": "an image reference",
    "int": "a whole number",
    "number": "a number",
    "env": "a NAME=value setting",
    "text": "a text",
    "argv": "a quoted command line",
    "launch": "a launch command, alone",
}
#: A signature or playbook id: lower-case letters and digits in words joined by single dashes.
ID = regex.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")


def fits(kind: str, value: str) -> bool:
    """Whether ``value`` looks like a value of ``kind`` (and, for ``argv``, is in canonical quoted form)."""
    if regex.fullmatch(KINDS[kind], value) is None:
        return False
    if kind == "argv":
        try:
            return shlex.join(shlex.split(value)) == value
        except ValueError:
            return False
    if kind == "host":
        return _address(value)
    return True


def _address(host: str) -> bool:
    """A host of digits and dots is an IPv4 address and one with a colon an IPv6 one, each a real one
    (``999.1.1.1`` is neither an address nor a name: a top-level label is never all digits)."""
    try:
        if ":" in host:
            ipaddress.IPv6Address(host.removeprefix("[").removesuffix("]"))
        elif regex.fullmatch(r"[\d.]+", host):
            ipaddress.IPv4Address(host)
    except ValueError:
        return False
    return True
