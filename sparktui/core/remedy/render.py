"""Rendering a playbook into the exact commands each node runs, purely.

Rendering never runs anything: it turns a playbook, parameter values (from a finding's facts, the cluster
file or the user) and the nodes into the commands each node would run, so a dry run shows exactly what a
real run does. Safety lives here, once:

* every value is checked against the pattern its parameter's kind declares (an interface name, a host, a
  port, a path...) and refused otherwise;
* every value is shell-quoted where it is substituted, and a step run inside a container is quoted again
  as a whole for ``sh -c``: nothing taken from a log reaches a shell unquoted;
* ``sudo`` in a step is refused when the playbook is loaded, unless it declares ``sudo = true``.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import regex

from sparktui.core.kinds import fits
from sparktui.core.launch.lexer import LaunchError, quoted, without_env
from sparktui.core.remedy.playbook import PLACEHOLDER, Param, Playbook, PlaybookError, Step
from sparktui.core.remote.command import Command

if TYPE_CHECKING:
    from sparktui.core.launch.sglang_to_vllm import Translation


@dataclass(frozen=True, slots=True)
class Check:
    """A verification with its values filled in, as it will run."""

    kind: str
    node: str = ""
    url: str = ""
    command: str = ""
    pattern: str = ""
    nodes: int = 0
    gpus: int = 0
    within: int = 300

    def describe(self) -> str:
        where = f"from {self.node}" if self.node != "local" else "from this machine"
        return {
            "none": "none: the steps' exit codes decide",
            "http": f"GET {self.url} {where} until it answers 2xx, up to {self.within} s",
            "completion": f"one short completion from {self.url}/v1/completions {where} until tokens come back,"
            f" up to {self.within} s",
            "log": f"{self.pattern!r} in the output of `{self.command}` on {self.node}, up to {self.within} s",
            "ray-status": f"`{self.command}` on {self.node} shows >= {self.nodes} nodes and >= {self.gpus} GPUs, "
            f"up to {self.within} s",
        }[self.kind]


@dataclass(frozen=True, slots=True)
class Rendered:
    """A playbook with its values filled in: the exact commands per node, the rollback and the check."""

    playbook: Playbook
    values: Mapping[str, str]
    commands: tuple[Command, ...]
    rollback: tuple[Command, ...]
    check: Check

    @property
    def shown(self) -> dict[str, str]:
        """The values a user reads before a run: all but ``since``, the run's own mark in time (an epoch
        that names what the run leaves behind, nothing a user chose or could check)."""
        return {name: value for name, value in self.values.items() if name != "since"}


@dataclass(frozen=True, slots=True)
class HeadAndWorkers:
    """The nodes a playbook acts on: the head, and the workers."""

    head: str
    workers: tuple[str, ...] = ()

    @property
    def all(self) -> tuple[str, ...]:
        return (self.head, *self.workers)


def probed_on(
    playbook: Playbook, name: str, nodes: HeadAndWorkers, finding_nodes: Sequence[str] = ()
) -> tuple[str, ...]:
    """The nodes whose commands use parameter ``name``: where its probe must run."""
    steps = [s for s in (*playbook.steps, *playbook.rollback) if f"{{{name}}}" in s.run]
    found: list[str] = []
    for step in steps:
        for node in _targets(step.on, nodes, finding_nodes):
            if node not in found:
                found.append(node)
    return tuple(found)


def _targets(on: str, nodes: HeadAndWorkers, finding_nodes: Sequence[str]) -> tuple[str, ...]:
    return {
        "head": (nodes.head,),
        "workers": nodes.workers,
        "all": nodes.all,
        "finding": tuple(finding_nodes) or nodes.all,
        "local": ("local",),
    }[on]


def _substitute(template: str, values: Mapping[str, str], kinds: Mapping[str, str], preview: bool) -> str:
    """Each placeholder becomes its value, quoted for the shell (``argv`` values are quoted words already; a
    ``launch`` is its words, each quoted, then quoted as one: the text ``sh -c`` runs);
    in a ``preview``, one without a value is shown as ``<name>``."""

    def one(match: regex.Match[str]) -> str:
        name = match.group(1)
        if name not in values and preview:
            return f"<{name}>"
        if name not in values:
            raise PlaybookError(
                f"no value for {name} on {values.get('node', 'this node')} (its probe did not run there)"
            )
        kind = kinds.get(name)
        return (
            values[name] if kind == "argv" else shlex.quote(quoted(values[name]) if kind == "launch" else values[name])
        )

    return str(PLACEHOLDER.sub(one, template))


def resolve(
    playbook: Playbook,
    facts: Mapping[str, str],
    cluster: Mapping[str, str] | None = None,
    given: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Pick each parameter's value: given by the user first, then its sources in order, then its default."""
    values: dict[str, str] = {}
    for param in playbook.params:
        value = (given or {}).get(param.name)
        for source in param.sources:
            if value is not None:
                break
            kind, _, key = source.partition(":")
            if kind == "fact":
                value = facts.get(key)
            elif kind == "cluster":
                value = (cluster or {}).get(key)
            elif kind == "sglang":
                found = translated(cluster, key)
                value = None if found is None or isinstance(found, str) else found.launch
        if value is None:
            value = param.default
        if value is not None:
            values[param.name] = value
    return values


def translated(cluster: Mapping[str, str] | None, key: str) -> Translation | str | None:
    """The vLLM launch translated from the SGLang launch in the cluster file's ``key`` (the ``sglang:KEY``
    source), why it cannot be translated, or None when there is none."""
    from sparktui.core.launch.sglang_to_vllm import TranslateError, sglang_to_vllm  # its tables load on first use

    launch = (cluster or {}).get(key)
    if not launch:
        return None
    try:
        return sglang_to_vllm(launch)
    except TranslateError as exc:
        return str(exc)


def render(
    playbook: Playbook,
    values: Mapping[str, str],
    nodes: HeadAndWorkers,
    finding_nodes: Sequence[str] = (),
    *,
    per_node: Mapping[str, Mapping[str, str]] | None = None,
    since: int | None = None,
    preview: bool = False,
) -> Rendered:
    """The exact commands per node. ``per_node`` overrides values on one node (what a probe found there);
    ``since`` is the ``{since}`` placeholder (default: now). Raises :class:`PlaybookError` for a missing
    value or one that does not fit its parameter's kind. A ``preview`` shows every value it lacks (not given,
    or not read on the nodes) as ``<name>``: such commands are only to be looked at, never run; a value that
    does not fit is refused all the same."""
    builtins = {"head": nodes.head, "since": str(int(time.time()) if since is None else since)}
    checked = _checked(playbook, values, per_node or {}, nodes, preview)
    base = {**next(iter(checked.values())), **builtins} if checked else builtins

    def expand(steps: Sequence[Step]) -> tuple[Command, ...]:
        return tuple(
            c for step in steps for c in _commands(playbook, step, checked, builtins, nodes, finding_nodes, preview)
        )

    return Rendered(
        playbook,
        base,
        expand(playbook.steps),
        expand(playbook.rollback),
        _check(playbook, checked, builtins, nodes, preview),
    )


def missing(playbook: Playbook, values: Mapping[str, str]) -> tuple[Param, ...]:
    """The parameters that have no value, other than those a probe reads on the nodes."""
    return tuple(p for p in playbook.params if p.name not in values and not p.probe)


def _checked(
    playbook: Playbook,
    values: Mapping[str, str],
    per_node: Mapping[str, Mapping[str, str]],
    nodes: HeadAndWorkers,
    preview: bool,
) -> dict[str, dict[str, str]]:
    """Every node's values (``local`` included), each checked against its parameter's kind."""
    out: dict[str, dict[str, str]] = {}
    for node in (*nodes.all, "local"):
        mine = {**values, **per_node.get(node, {})}
        out[node] = {}
        for param in playbook.params:
            value = mine.get(param.name)
            if value is None and (param.probe or preview):
                continue  # found on the nodes that use it by a probe there, or shown as <name>
            if value is None:
                raise PlaybookError(
                    f"{playbook.id}: no value for {param.name} ({param.description or param.kind}); "
                    f"give one with --set {param.name}=VALUE"
                )
            shown = value if len(value) < 200 else value[:200] + "..."
            if not fits(param.kind, value):
                raise PlaybookError(f"{playbook.id}: refused {param.name}={shown!r}: not a valid {param.kind}")
            if param.kind == "launch":  # one command alone: what sh -c runs is its words, nothing else
                try:
                    quoted(value)
                except LaunchError as exc:
                    raise PlaybookError(f"{playbook.id}: refused {param.name}={shown!r}: {exc}") from None
            if param.without_env:
                try:
                    value = without_env(value, param.without_env)
                except LaunchError as exc:
                    raise PlaybookError(f"{playbook.id}: {param.name}: {exc}") from None
            out[node][param.name] = value
    return out


def _commands(
    playbook: Playbook,
    step: Step,
    checked: Mapping[str, Mapping[str, str]],
    builtins: Mapping[str, str],
    nodes: HeadAndWorkers,
    finding_nodes: Sequence[str],
    preview: bool,
) -> list[Command]:
    targets = _targets(step.on, nodes, finding_nodes)
    kinds = {p.name: p.kind for p in playbook.params}
    out = []
    for node in targets:
        local = {**checked[node], **builtins, "node": node}
        command = _in_place(_substitute(step.run, local, kinds, preview), step.place, local)
        out.append(Command(step.title, node, step.place, command, step.changes))
    return out


def _in_place(command: str, place: str, values: Mapping[str, str]) -> str:
    if place == "container":
        container = shlex.quote(values["container"]) if "container" in values else "<container>"
        return f"docker exec {container} sh -c {shlex.quote(command)}"
    return command


_URL_SAFE = regex.compile(r"[A-Za-z0-9._~:\[\]-]*")


def _check(
    playbook: Playbook,
    checked: Mapping[str, Mapping[str, str]],
    builtins: Mapping[str, str],
    nodes: HeadAndWorkers,
    preview: bool,
) -> Check:
    verify = playbook.verify
    if verify.kind == "none":
        return Check("none")
    node = nodes.head if verify.on == "head" else "local"
    local = {**checked[node], **builtins, "node": node}
    kinds = {p.name: p.kind for p in playbook.params}

    def plain(template: str, what: str) -> str:
        for name in PLACEHOLDER.findall(template):
            if name in local and not _URL_SAFE.fullmatch(local[name]):
                raise PlaybookError(f"{playbook.id}: refused {name}={local[name]!r} in verify.{what}")
        return str(PLACEHOLDER.sub(lambda m: local.get(m.group(1), f"<{m.group(1)}>"), template))

    def count(template: str, what: str) -> int:
        text = plain(template, what)
        if preview and not text.isdigit():
            return 0
        if not text.isdigit():
            raise PlaybookError(f"{playbook.id}: verify.{what}: {text!r} is not a whole number")
        return int(text)

    command = _in_place(_substitute(verify.run, local, kinds, preview), verify.place, local) if verify.run else ""
    return Check(
        verify.kind,
        node,
        plain(verify.url, "url"),
        command,
        verify.pattern,
        count(verify.nodes, "nodes") if verify.kind == "ray-status" else 0,
        count(verify.gpus, "gpus") if verify.kind == "ray-status" else 0,
        verify.within,
    )
