"""The engines' ``--help`` as captured from the real programs (``tests/fixtures/vllm-help/serve-help.txt`` by
tools/capture/vllm/serve_flags.sh, ``tests/fixtures/sglang-help/server-help.txt`` by
tools/capture/sglang/server_flags.sh), read as argparse prints it: what the launch tables and the translator
are checked against."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from .conftest import FIXTURES

HELP = {
    "vllm": FIXTURES / "vllm-help" / "serve-help.txt",
    "sglang": FIXTURES / "sglang-help" / "server-help.txt",
}
#: A flag's list of values, as argparse shows choices: ``{a,b}``, or ``['a', 'b']`` where a list is given.
_CHOICES = re.compile(r"\{([^}]*)\}|\[('[^\]]*)\]")


@dataclass(frozen=True, slots=True)
class Option:
    """One flag of the help: its metavar ("" for a switch) and the values it lists (empty where none)."""

    metavar: str
    choices: frozenset[str]


@cache
def options(engine: str) -> dict[str, Option]:
    """Every flag (each alias) of an engine's captured help."""
    found: dict[str, Option] = {}
    for line in HELP[engine].read_text().splitlines():
        if not line.startswith("  -"):
            continue
        head = re.split(r"\s{2,}", line.strip())[0]  # the flags, before any description on the same line
        listed = _CHOICES.search(head)
        choices: frozenset[str] = frozenset()
        if listed and listed[1] is not None:
            choices = frozenset(listed[1].split(","))
        elif listed:
            choices = frozenset(re.findall(r"'([^']*)'", listed[2]))
        for alias in (head[: listed.start()] if listed else head).split(", "):
            name, _, metavar = alias.strip().partition(" ")
            if name.startswith("-"):
                found[name] = Option(metavar or (listed[0] if listed else ""), choices)
    return found


def block(engine: str, flag: str) -> str:
    """The help text of one flag, from its line to the next flag's."""
    text = HELP[engine].read_text()
    start = re.search(rf"^  {re.escape(flag)}[ ,\n]", text, re.M)
    assert start, flag
    end = re.compile(r"^  -|^\S", re.M).search(text, start.end())
    return text[start.start() : end.start() if end else len(text)]
