"""Remediation playbooks: ``playbooks/*.toml`` loaded and checked into :class:`Playbook` values.

A playbook declares its parameters (each of a kind, see :mod:`sparktui.core.kinds`, and where its value comes
from), its steps (commands with ``{placeholders}``, run on the head, the workers, every node or this
machine), how a run proves it worked (``[verify]``) and how to undo it (``[[rollback]]``). A file that cannot
be used is refused on load, with the file, the key and the reason: an undeclared placeholder, ``sudo`` in a
playbook that does not declare it, a step in a container without a container.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import regex

from sparktui.core import dirs, tomlfile
from sparktui.core.errors import Invalid
from sparktui.core.kinds import ID, KINDS, fits

RISKS = ("read-only", "restarts", "changes-node")
#: Values sparktui reads on the nodes themselves before rendering (``docker inspect`` of the node's
#: ``{container}``, shown as it runs), for ``argv`` parameters: the ``docker run`` that creates the container
#: again as it is, or its parts (``docker run`` and the options; the image; the words after it), so that a
#: playbook can add options (``{options} --ipc host {image} {command}``) or swap the image.
PROBES = ("probe:docker-run", "probe:docker-run-options", "probe:docker-run-image", "probe:docker-run-command")
TARGETS = ("head", "workers", "all", "finding", "local")
PLACES = ("host", "container")
VERIFY_KINDS = ("none", "log", "http", "ray-status")

#: Placeholders every playbook may use: the node a command runs on, the head, and when the run was rendered
#: (Unix seconds, for ``docker logs --since {since}``).
BUILTINS = ("node", "head", "since")
PLACEHOLDER = regex.compile(r"\{([a-z_][a-z0-9_]*)\}")
_SUDO = regex.compile(r"(?:^|[\s;&|()`$])sudo(?:\s|$)")


class PlaybookError(Invalid):
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
    if pid != path.stem or not ID.match(pid):
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
        for name in PLACEHOLDER.findall(text):
            if name not in declared:
                raise PlaybookError(f"{playbook.path}: {where}: {{{name}}} is not a declared parameter")
        if _SUDO.search(text) and not playbook.sudo:
            raise PlaybookError(f"{playbook.path}: {where}: uses sudo but the playbook does not declare sudo = true")
        if place == "container" and "container" not in declared:
            raise PlaybookError(f"{playbook.path}: {where}: runs in a container but declares no `container` parameter")
