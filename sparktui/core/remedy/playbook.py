"""Remediation playbooks: loading ``playbooks/*.toml`` and rendering them into exact commands, purely.

Rendering never runs anything: it turns a playbook, parameter values (from a finding's facts, the cluster
file or the user) and the nodes into the commands each node would run, so a dry run shows exactly what a
real run does. Safety lives here, once:

* every value is checked against the pattern its parameter's kind declares (an interface name, a host, a
  port, a path...) and refused otherwise;
* every value is shell-quoted where it is substituted, and a step run inside a container is quoted again
  as a whole for ``sh -c``: nothing taken from a log reaches a shell unquoted;
* ``sudo`` in a step is refused unless the playbook declares ``sudo = true``.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import regex

from sparktui.core import dirs, tomlfile
from sparktui.core.remote.command import Command

if TYPE_CHECKING:
    from sparktui.core.launch.sglang_to_vllm import Translation

RISKS = ("read-only", "restarts", "changes-node")
#: Values sparktui reads on the nodes themselves before rendering (``docker inspect`` of the node's
#: ``{container}``, shown as it runs), for ``argv`` parameters: the ``docker run`` that creates the container
#: again as it is, or its parts (``docker run`` and the options; the image; the words after it), so that a
#: playbook can add options (``{options} --ipc host {image} {command}``) or swap the image.
PROBES = ("probe:docker-run", "probe:docker-run-options", "probe:docker-run-image", "probe:docker-run-command")
TARGETS = ("head", "workers", "all", "finding", "local")
PLACES = ("host", "container")
VERIFY_KINDS = ("none", "log", "http", "ray-status")

#: What a value of each kind may look like. A value that does not fit is refused, never escaped into shape.
KINDS: dict[str, str] = {
    "iface": r"[A-Za-z0-9][A-Za-z0-9_.:@-]{0,14}",
    "host": r"[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?|\[?[0-9A-Fa-f:.]+\]?",
    "port": r"(?:6553[0-5]|655[0-2]\d|65[0-4]\d\d|6[0-4]\d{3}|[1-5]\d{4}|[1-9]\d{0,3})",
    "path": r"[^\x00-\x1f\x7f]{1,4096}",
    "name": r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}",
    "image": r"[a-z0-9][a-z0-9._/:@-]{0,254}",
    "int": r"\d{1,9}",
    "number": r"\d{1,9}(?:\.\d{1,9})?",
    "env": r"[A-Za-z_][A-Za-z0-9_]{0,127}=[^\x00-\x1f\x7f]{0,4096}",
    "text": r"[^\x00-\x1f\x7f]{0,4096}",
    # Shell words already quoted (the canonical shlex.join form, checked): substituted as they are, so
    # ``{recreate} --flag`` appends words to a command. Probes produce these; a user may type them.
    "argv": r"[^\x00-\x1f\x7f]{0,65536}",
}
#: Placeholders every playbook may use: the node a command runs on, the head, and when the run was rendered
#: (Unix seconds, for ``docker logs --since {since}``).
BUILTINS = ("node", "head", "since")
_PLACEHOLDER = regex.compile(r"\{([a-z_][a-z0-9_]*)\}")
_SUDO = regex.compile(r"(?:^|[\s;&|()`$])sudo(?:\s|$)")
_ID = regex.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")


class PlaybookError(ValueError):
    """A playbook file that cannot be used, or values that cannot be rendered; one line."""


@dataclass(frozen=True, slots=True)
class Param:
    name: str
    kind: str
    description: str
    # Where a value may come from, in order: "fact:x" (the finding), "cluster:x" (the cluster file),
    # "sglang:x" (the cluster file's SGLang launch x, translated to vLLM), "probe:x" (read on the node), "ask".
    sources: tuple[str, ...]
    default: str | None = None

    @property
    def probe(self) -> str | None:
        """The probe that reads this value on the nodes, if it is read there."""
        return next((s for s in self.sources if s in PROBES), None)


@dataclass(frozen=True, slots=True)
class Step:
    title: str
    on: str
    place: str
    run: str
    changes: bool = True  # false: it only reads or checks, so a failure up to here has nothing to roll back


@dataclass(frozen=True, slots=True)
class Verify:
    """How a run proves it worked, checked from ``on`` (the head, or this machine) until ``within`` seconds
    pass: ``http`` fetches ``url`` through that node's SSH connection (so ``localhost`` is the node) until it
    answers 2xx; ``log`` runs ``run`` and waits for a line of its output to match ``pattern``; ``ray-status``
    runs ``run`` (``ray status``) until it shows at least ``nodes`` nodes and ``gpus`` GPUs."""

    kind: str
    pattern: str = ""
    within: int = 300
    url: str = ""
    nodes: str = ""
    gpus: str = ""
    on: str = "head"
    place: str = "host"
    run: str = ""

    @property
    def templates(self) -> tuple[str, ...]:
        return (self.url, self.run, self.nodes, self.gpus)


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
            "log": f"{self.pattern!r} in the output of `{self.command}` on {self.node}, up to {self.within} s",
            "ray-status": f"`{self.command}` on {self.node} shows >= {self.nodes} nodes and >= {self.gpus} GPUs, "
            f"up to {self.within} s",
        }[self.kind]


@dataclass(frozen=True, slots=True)
class Playbook:
    id: str
    path: Path
    title: str
    key: str
    risk: str
    description: str
    sudo: bool
    params: tuple[Param, ...]
    steps: tuple[Step, ...]
    verify: Verify
    rollback: tuple[Step, ...]
    example: Mapping[str, str] = field(default_factory=dict)  # realistic values it renders from (tests, docs)
    example_nodes: tuple[str, ...] = ()

    @property
    def reads_nodes(self) -> bool:
        """Whether some values are read on the nodes (probes) before its commands can be shown."""
        return any(p.probe for p in self.params)


@dataclass(frozen=True, slots=True)
class Rendered:
    playbook: Playbook
    values: Mapping[str, str]
    commands: tuple[Command, ...]
    rollback: tuple[Command, ...]
    check: Check


@dataclass(frozen=True, slots=True)
class Nodes:
    head: str
    workers: tuple[str, ...] = ()

    @property
    def all(self) -> tuple[str, ...]:
        return (self.head, *self.workers)


def load_all(extra_dirs: Iterable[Path] = ()) -> dict[str, Playbook]:
    found: dict[str, Playbook] = {}
    for folder in [dirs.builtin("playbooks"), *extra_dirs]:
        for path in sorted(Path(folder).glob("*.toml")):
            playbook = load(path)
            found[playbook.id] = playbook
    keys: dict[str, str] = {}
    for playbook in found.values():
        if playbook.key in keys:
            raise PlaybookError(f"{playbook.path}: key: {playbook.key!r} is already used by {keys[playbook.key]}")
        keys[playbook.key] = playbook.id
    return found


def load(path: Path) -> Playbook:
    doc = tomlfile.read(path, lambda reason: PlaybookError(f"{path}: {reason}"))

    def text(key: str, table: Mapping[str, Any] = doc, prefix: str = "", default: str | None = None) -> str:
        value = table.get(key, default)
        if not isinstance(value, str) or (default is None and not value.strip()):
            raise PlaybookError(f"{path}: {prefix}{key}: needs a non-empty string")
        return value

    pid = text("id")
    if pid != path.stem or not _ID.match(pid):
        raise PlaybookError(f"{path}: id: must be lower-case-with-dashes and equal the file name ({path.stem})")
    risk = text("risk")
    if risk not in RISKS:
        raise PlaybookError(f"{path}: risk: {risk!r} is not one of {', '.join(RISKS)}")
    sudo = doc.get("sudo", False)
    if not isinstance(sudo, bool):
        raise PlaybookError(f"{path}: sudo: must be true or false")
    key = text("key")
    if len(key) != 1 or not key.isprintable() or key in "q?/:nNeEfx ":
        raise PlaybookError(f"{path}: key: one character that no other key of the app uses")
    params = tuple(_param(path, name, spec) for name, spec in _table(path, doc, "params").items())
    steps = _steps(path, doc.get("steps"), "steps", required=True)
    rollback = _steps(path, doc.get("rollback", []), "rollback", required=False)
    verify = _verify(path, _table(path, doc, "verify") or {"kind": "none"})
    example, example_nodes = _example(path, _table(path, doc, "example"), {p.name for p in params})
    playbook = Playbook(
        pid,
        path,
        text("title"),
        key,
        risk,
        text("description"),
        sudo,
        params,
        steps,
        verify,
        rollback,
        example,
        example_nodes,
    )
    _check_templates(playbook)
    if playbook.reads_nodes and "container" not in {p.name for p in params}:
        raise PlaybookError(f"{path}: the docker-run probes need a `container` parameter naming the container")
    return playbook


def _table(path: Path, doc: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = doc.get(key, {})
    if not isinstance(value, dict):
        raise PlaybookError(f"{path}: {key}: needs a table")
    return value


def _example(path: Path, raw: Mapping[str, Any], declared: set[str]) -> tuple[dict[str, str], tuple[str, ...]]:
    """The optional ``[example]`` table: ``values`` (parameter -> value) and ``nodes`` (head first)."""
    values = raw.get("values", {})
    if not isinstance(values, dict) or not all(isinstance(v, str) for v in values.values()):
        raise PlaybookError(f"{path}: example.values: needs a table of strings")
    for name in values:
        if name not in declared:
            raise PlaybookError(f"{path}: example.values.{name}: not a declared parameter")
    nodes = raw.get("nodes", [])
    if not isinstance(nodes, list) or not all(isinstance(n, str) and n for n in nodes):
        raise PlaybookError(f"{path}: example.nodes: needs an array of node names")
    return dict(values), tuple(nodes)


def _param(path: Path, name: str, spec: Any) -> Param:
    where = f"{path}: params.{name}"
    if not isinstance(spec, dict):
        raise PlaybookError(f"{where}: needs a table")
    kind = spec.get("kind")
    if kind not in KINDS:
        raise PlaybookError(f"{where}.kind: {kind!r} is not one of {', '.join(KINDS)}")
    sources = spec.get("from", ["ask"])
    if not isinstance(sources, list) or not all(isinstance(s, str) for s in sources):
        raise PlaybookError(f"{where}.from: needs an array of strings")
    for source in sources:
        if source != "ask" and source.split(":", 1)[0] not in ("fact", "cluster", "probe", "sglang"):
            raise PlaybookError(
                f"{where}.from: {source!r} is not fact:NAME, cluster:KEY, sglang:KEY, probe:NAME or ask"
            )
        if source.startswith("probe:") and (source not in PROBES or kind != "argv"):
            raise PlaybookError(f"{where}.from: {source!r}: the probes are {', '.join(PROBES)}, for argv parameters")
    default = spec.get("default")
    if default is not None and (not isinstance(default, str) or not fits(kind, default)):
        raise PlaybookError(f"{where}.default: must be a string of kind {kind}")
    return Param(name, kind, str(spec.get("description", "")), tuple(sources), default)


def _steps(path: Path, raw: Any, key: str, *, required: bool) -> tuple[Step, ...]:
    if not isinstance(raw, list) or (required and not raw):
        raise PlaybookError(f"{path}: {key}: needs an array of [[{key}]] tables")
    steps = []
    for i, item in enumerate(raw):
        where = f"{path}: {key}[{i}]"
        if not isinstance(item, dict) or not isinstance(item.get("run"), str) or not item["run"].strip():
            raise PlaybookError(f"{where}.run: needs a command")
        on, place = item.get("on", "all"), item.get("in", "host")
        if on not in TARGETS:
            raise PlaybookError(f"{where}.on: {on!r} is not one of {', '.join(TARGETS)}")
        if place not in PLACES:
            raise PlaybookError(f"{where}.in: {place!r} is not one of {', '.join(PLACES)}")
        changes = item.get("changes", True)
        if not isinstance(changes, bool):
            raise PlaybookError(f"{where}.changes: true or false")
        steps.append(Step(str(item.get("title", item["run"])), on, place, item["run"], changes))
    return tuple(steps)


def _verify(path: Path, raw: Mapping[str, Any]) -> Verify:
    kind = raw.get("kind", "none")
    if kind not in VERIFY_KINDS:
        raise PlaybookError(f"{path}: verify.kind: {kind!r} is not one of {', '.join(VERIFY_KINDS)}")
    within = raw.get("within", 300)
    if not isinstance(within, int) or within <= 0:
        raise PlaybookError(f"{path}: verify.within: a positive number of seconds")
    on, place = raw.get("on", "head"), raw.get("in", "host")
    if on not in ("head", "local"):
        raise PlaybookError(f"{path}: verify.on: {on!r} is not head or local")
    if place not in PLACES:
        raise PlaybookError(f"{path}: verify.in: {place!r} is not one of {', '.join(PLACES)}")
    fields = {key: str(raw.get(key, "")) for key in ("pattern", "url", "nodes", "gpus", "run")}
    verify = Verify(
        kind, fields["pattern"], within, fields["url"], fields["nodes"], fields["gpus"], on, place, fields["run"]
    )
    needs = {"http": ("url",), "log": ("run", "pattern"), "ray-status": ("run", "nodes", "gpus")}.get(kind, ())
    for key in needs:
        if not fields[key].strip():
            raise PlaybookError(f"{path}: verify.{key}: a {kind} check needs it")
    if kind == "log":
        try:
            regex.compile(verify.pattern)
        except regex.error as exc:
            raise PlaybookError(f"{path}: verify.pattern: does not compile: {exc}") from None
    if kind == "http" and not verify.url.startswith("http://"):
        raise PlaybookError(f"{path}: verify.url: an http:// URL (fetched through the node's SSH connection)")
    return verify


def _check_templates(playbook: Playbook) -> None:
    declared = {p.name for p in playbook.params} | set(BUILTINS)
    verify = playbook.verify
    checked = [("steps", s.run, s.place) for s in playbook.steps]
    checked += [("rollback", s.run, s.place) for s in playbook.rollback]
    checked += [("verify", text, verify.place) for text in verify.templates]
    for where, text, place in checked:
        for name in _PLACEHOLDER.findall(text):
            if name not in declared:
                raise PlaybookError(f"{playbook.path}: {where}: {{{name}}} is not a declared parameter")
        if _SUDO.search(text) and not playbook.sudo:
            raise PlaybookError(f"{playbook.path}: {where}: uses sudo but the playbook does not declare sudo = true")
        if place == "container" and "container" not in declared:
            raise PlaybookError(f"{playbook.path}: {where}: runs in a container but declares no `container` parameter")


def probed_on(playbook: Playbook, name: str, nodes: Nodes, finding_nodes: Sequence[str] = ()) -> tuple[str, ...]:
    """The nodes whose commands use parameter ``name``: where its probe must run."""
    steps = [s for s in (*playbook.steps, *playbook.rollback) if f"{{{name}}}" in s.run]
    found: list[str] = []
    for step in steps:
        for node in _targets(step.on, nodes, finding_nodes):
            if node not in found:
                found.append(node)
    return tuple(found)


def _targets(on: str, nodes: Nodes, finding_nodes: Sequence[str]) -> tuple[str, ...]:
    return {
        "head": (nodes.head,),
        "workers": nodes.workers,
        "all": nodes.all,
        "finding": tuple(finding_nodes) or nodes.all,
        "local": ("local",),
    }[on]


def fits(kind: str, value: str) -> bool:
    """Whether ``value`` looks like a value of ``kind`` (and, for ``argv``, is in canonical quoted form)."""
    if regex.fullmatch(KINDS[kind], value) is None:
        return False
    if kind == "argv":
        try:
            return shlex.join(shlex.split(value)) == value
        except ValueError:
            return False
    return True


def _substitute(template: str, values: Mapping[str, str], kinds: Mapping[str, str], unread: bool) -> str:
    """Each placeholder becomes its value, quoted for the shell (``argv`` values are quoted words already);
    with ``unread``, one without a value (a probe that did not run) is shown as ``<name>``."""

    def one(match: regex.Match[str]) -> str:
        name = match.group(1)
        if name not in values and unread:
            return f"<{name}>"
        if name not in values:
            raise PlaybookError(
                f"no value for {name} on {values.get('node', 'this node')} (its probe did not run there)"
            )
        return values[name] if kinds.get(name) == "argv" else shlex.quote(values[name])

    return str(_PLACEHOLDER.sub(one, template))


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
    nodes: Nodes,
    finding_nodes: Sequence[str] = (),
    *,
    per_node: Mapping[str, Mapping[str, str]] | None = None,
    since: int | None = None,
    unread: bool = False,
) -> Rendered:
    """The exact commands per node. ``per_node`` overrides values on one node (what a probe found there);
    ``since`` is the ``{since}`` placeholder (default: now). Raises :class:`PlaybookError` for a missing
    value or one that does not fit its parameter's kind. With ``unread`` (a preview of nodes that could not
    be read), a value a probe should have found shows as ``<name>``: such commands are never to be run."""
    builtins = {"head": nodes.head, "since": str(int(time.time()) if since is None else since)}
    checked = _checked(playbook, values, per_node or {}, nodes)
    base = {**next(iter(checked.values())), **builtins} if checked else builtins

    def expand(steps: Sequence[Step]) -> tuple[Command, ...]:
        return tuple(
            c for step in steps for c in _commands(playbook, step, checked, builtins, nodes, finding_nodes, unread)
        )

    return Rendered(
        playbook,
        base,
        expand(playbook.steps),
        expand(playbook.rollback),
        _check(playbook, checked, builtins, nodes, unread),
    )


def _checked(
    playbook: Playbook, values: Mapping[str, str], per_node: Mapping[str, Mapping[str, str]], nodes: Nodes
) -> dict[str, dict[str, str]]:
    """Every node's values (``local`` included), each checked against its parameter's kind."""
    out: dict[str, dict[str, str]] = {}
    for node in (*nodes.all, "local"):
        mine = {**values, **per_node.get(node, {})}
        out[node] = {}
        for param in playbook.params:
            value = mine.get(param.name)
            if value is None and param.probe:
                continue  # found on the nodes that use it, by a probe there
            if value is None:
                raise PlaybookError(
                    f"{playbook.id}: no value for {param.name} ({param.description or param.kind}); "
                    f"give one with --set {param.name}=VALUE"
                )
            if not fits(param.kind, value):
                shown = value if len(value) < 200 else value[:200] + "..."
                raise PlaybookError(f"{playbook.id}: refused {param.name}={shown!r}: not a valid {param.kind}")
            out[node][param.name] = value
    return out


def _commands(
    playbook: Playbook,
    step: Step,
    checked: Mapping[str, Mapping[str, str]],
    builtins: Mapping[str, str],
    nodes: Nodes,
    finding_nodes: Sequence[str],
    unread: bool,
) -> list[Command]:
    targets = _targets(step.on, nodes, finding_nodes)
    kinds = {p.name: p.kind for p in playbook.params}
    out = []
    for node in targets:
        local = {**checked[node], **builtins, "node": node}
        command = _in_place(_substitute(step.run, local, kinds, unread), step.place, local)
        out.append(Command(step.title, node, step.place, command, step.changes))
    return out


def _in_place(command: str, place: str, values: Mapping[str, str]) -> str:
    if place == "container":
        return f"docker exec {shlex.quote(values['container'])} sh -c {shlex.quote(command)}"
    return command


_URL_SAFE = regex.compile(r"[A-Za-z0-9._~:\[\]-]*")


def _check(
    playbook: Playbook,
    checked: Mapping[str, Mapping[str, str]],
    builtins: Mapping[str, str],
    nodes: Nodes,
    unread: bool,
) -> Check:
    verify = playbook.verify
    if verify.kind == "none":
        return Check("none")
    node = nodes.head if verify.on == "head" else "local"
    local = {**checked[node], **builtins, "node": node}
    kinds = {p.name: p.kind for p in playbook.params}

    def plain(template: str, what: str) -> str:
        for name in _PLACEHOLDER.findall(template):
            if not _URL_SAFE.fullmatch(local[name]):
                raise PlaybookError(f"{playbook.id}: refused {name}={local[name]!r} in verify.{what}")
        return str(_PLACEHOLDER.sub(lambda m: local[m.group(1)], template))

    def count(template: str, what: str) -> int:
        text = plain(template, what)
        if not text.isdigit():
            raise PlaybookError(f"{playbook.id}: verify.{what}: {text!r} is not a whole number")
        return int(text)

    command = _in_place(_substitute(verify.run, local, kinds, unread), verify.place, local) if verify.run else ""
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
