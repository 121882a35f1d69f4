"""Remediation playbooks: ``playbooks/*.toml`` loaded and checked into :class:`Playbook` values.

A playbook declares its parameters (each of a kind, see :mod:`sparktui.core.kinds`, and where its value comes
from), its steps (commands with ``{placeholders}``, run on the head, the workers, every node or this
machine), how a run proves it worked (``[verify]``) and how to undo it (``[[rollback]]``). A file that cannot
be used is refused on load, with the file, the key and the reason: an undeclared placeholder, ``sudo`` in a
playbook that does not declare it, a step in a container without a container.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import regex

from sparktui.core import dirs, tomlfile
from sparktui.core.errors import Invalid
from sparktui.core.kinds import ID, KINDS, fits
from sparktui.core.tomlfile import Table

RISKS = ("read-only", "restarts", "changes-node")
#: Values sparktui reads on the nodes themselves before rendering (``docker inspect`` of the node's
#: ``{container}``, shown as it runs), for ``argv`` parameters: the ``docker run`` that creates the container
#: again as it is, or its parts (``docker run`` and the options; the image; the words after it), so that a
#: playbook can add options (``{options} --ipc host {image} {command}``) or swap the image.
PROBES = ("probe:docker-run", "probe:docker-run-options", "probe:docker-run-image", "probe:docker-run-command")
TARGETS = ("head", "workers", "all", "finding", "local")
PLACES = ("host", "container")
_ENV_NAME = regex.compile(r"[A-Za-z_][A-Za-z0-9_]*")
VERIFY_KINDS = ("none", "log", "http", "ray-status", "completion")

#: Placeholders every playbook may use: the node a command runs on, the head, and when the run was rendered
#: (Unix seconds, for ``docker logs --since {since}``).
BUILTINS = ("node", "head", "since")
PLACEHOLDER = regex.compile(r"\{([a-z_][a-z0-9_]*)\}")
_SUDO = regex.compile(r"(?:^|[\s;&|()`$])sudo(?:\s|$)")


class PlaybookError(Invalid):
    """A playbook file that cannot be used, or values that cannot be rendered; one line."""


@dataclass(frozen=True, slots=True)
class Param:
    """A value a playbook's commands use: its kind, what it is, where it may come from, in order, and its default."""

    name: str
    kind: str
    description: str
    # Where a value may come from, in order: "fact:x" (the finding), "cluster:x" (the cluster file),
    # "sglang:x" (the cluster file's SGLang launch x, translated to vLLM), "probe:x" (read on the node), "ask".
    sources: tuple[str, ...]
    default: str | None = None
    # A launch command's environment assignments taken out of its value (``without_env``): the playbook gives
    # the engine values of these itself, which the launch's own would override.
    without_env: tuple[str, ...] = ()

    @property
    def probe(self) -> str | None:
        """The probe that reads this value on the nodes, if it is read there."""
        return next((s for s in self.sources if s in PROBES), None)


@dataclass(frozen=True, slots=True)
class Step:
    """One step of a playbook: the command it runs, on which nodes, where (the host or the engine's container),
    and whether it changes anything."""

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
    runs ``run`` (``ray status``) until it shows at least ``nodes`` nodes and ``gpus`` GPUs; ``completion`` sends
    one short completion to the OpenAI API at ``url`` (the server's root) through that node's connection until
    tokens come back (the smoke test: a server can answer ``/health`` and generate nothing)."""

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
    """A remediation (a ``playbooks/*.toml`` file): its key, its risk, its parameters, its steps, how to check it
    worked and how to roll it back."""

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

    @property
    def does(self) -> str:
        """What its risk means, in words that follow its name ("restarts services (risk restarts)")."""
        what = {"read-only": "only reads", "restarts": "restarts services", "changes-node": "changes the node"}
        return f"{what[self.risk]} (risk {self.risk})"

    def refused(self, readonly: bool) -> str:
        """Why read-only mode refuses this playbook, or "": decided by its risk alone, so before any value
        is asked for or read."""
        if readonly and self.risk != "read-only":
            return f"{self.id} {self.does}: refused in read-only mode"
        return ""


def load_all(extra_dirs: Iterable[Path] = ()) -> dict[str, Playbook]:
    """The built-in playbooks and those of ``extra_dirs`` (a later one of the same id replaces an earlier
    one), each folder's shared steps (``steps/``) available to all."""
    folders = [dirs.builtin("playbooks"), *map(Path, extra_dirs)]
    shared = {name: step for folder in folders for name, step in load_steps(folder / "steps").items()}
    found: dict[str, Playbook] = {}
    for folder in folders:
        for path in sorted(folder.glob("*.toml")):
            playbook = load(path, shared)
            found[playbook.id] = playbook
    keys: dict[str, str] = {}
    for playbook in found.values():
        if playbook.key in keys:
            raise PlaybookError(f"{playbook.path}: key: {playbook.key!r} is already used by {keys[playbook.key]}")
        keys[playbook.key] = playbook.id
    return found


def load_steps(folder: Path) -> dict[str, Step]:
    """The shared steps of a folder (``steps/<id>.toml``: a title and a command that playbooks use by id,
    ``uses = "<id>"``, instead of each holding a copy)."""
    steps = {}
    for path in sorted(folder.glob("*.toml")):
        r = Table(tomlfile.read(path, _unreadable(path)), _error(path))
        step_id = r.text("id")
        if step_id != path.stem or not ID.match(step_id):
            raise r.fail("id", f"must be lower-case-with-dashes and equal the file name ({path.stem})")
        steps[step_id] = Step(r.text("title"), "all", "host", r.text("run"), r.flag("changes", default=True))
    return steps


def load(path: Path, shared: Mapping[str, Step] | None = None) -> Playbook:
    """One playbook file; ``shared`` are the steps it may use by id (the built-in ones when not given)."""
    shared = load_steps(dirs.builtin("playbooks") / "steps") if shared is None else shared
    r = Table(tomlfile.read(path, _unreadable(path)), _error(path))
    pid = r.text("id")
    if pid != path.stem or not ID.match(pid):
        raise r.fail("id", f"must be lower-case-with-dashes and equal the file name ({path.stem})")
    key = r.text("key")
    if len(key) != 1 or not key.isprintable() or key.isspace():
        raise r.fail("key", "one character")
    params = tuple(_param(name, r.table("params").table(name)) for name in r.table("params", required=False).data)
    example = r.table("example", required=False)
    playbook = Playbook(
        pid,
        path,
        r.text("title"),
        key,
        r.choice("risk", RISKS),
        r.text("description"),
        r.flag("sudo", default=False),
        params,
        tuple(_step(s, shared) for s in r.tables("steps")),
        _verify(r.table("verify", required=False)),
        tuple(_step(s, shared) for s in r.tables("rollback", required=False)),
        _example_values(example, {p.name for p in params}),
        tuple(example.texts("nodes", required=False)),
    )
    _check_templates(playbook)
    if playbook.reads_nodes and "container" not in {p.name for p in params}:
        raise PlaybookError(f"{path}: the docker-run probes need a `container` parameter naming the container")
    return playbook


def _unreadable(path: Path) -> Callable[[str], PlaybookError]:
    return lambda reason: PlaybookError(f"{path}: {reason}")


def _error(path: Path) -> Callable[[str, str], PlaybookError]:
    return lambda key, reason: PlaybookError(f"{path}: {key}: {reason}")


def _example_values(example: Table, declared: set[str]) -> dict[str, str]:
    """The optional ``[example]`` table's ``values`` (parameter -> value), which the tests render from."""
    values = example.table("values", required=False)
    for name in values.data:
        if name not in declared:
            raise values.fail(name, "not a declared parameter")
    return {name: values.text(name, empty=True) for name in values.data}


def _param(name: str, spec: Table) -> Param:
    kind = spec.choice("kind", tuple(KINDS))
    sources = spec.texts("from", required=False) or ["ask"]
    for source in sources:
        if source != "ask" and source.split(":", 1)[0] not in ("fact", "cluster", "probe", "sglang"):
            raise spec.fail("from", f"{source!r} is not fact:NAME, cluster:KEY, sglang:KEY, probe:NAME or ask")
        if source.startswith("probe:") and (source not in PROBES or kind != "argv"):
            raise spec.fail("from", f"{source!r}: the probes are {', '.join(PROBES)}, for argv parameters")
    default = spec.text("default", required=False, empty=True) if "default" in spec.data else None
    if default is not None and not fits(kind, default):
        raise spec.fail("default", f"must be a string of kind {kind}")
    without = spec.texts("without_env", required=False)
    if without and (kind != "launch" or not all(_ENV_NAME.fullmatch(n) for n in without)):
        raise spec.fail("without_env", "environment variable names, for a launch parameter")
    return Param(
        name, kind, spec.text("description", required=False, empty=True), tuple(sources), default, tuple(without)
    )


def _step(s: Table, shared: Mapping[str, Step]) -> Step:
    """A step of its own (``run``), or a shared one (``uses``) run where this step says."""
    if "uses" in s.data:
        if "run" in s.data:
            raise s.fail("run", "a step that uses a shared step has no command of its own")
        used = shared.get(s.text("uses"))
        if used is None:
            raise s.fail("uses", f"no shared step {s.data['uses']!r} (one of {', '.join(shared) or 'none'})")
        title, run, changes = s.text("title", required=False) or used.title, used.run, used.changes
    else:
        run = s.text("run")
        title, changes = s.text("title", required=False) or run, True
    return Step(
        title,
        s.choice("on", TARGETS, default="all"),
        s.choice("in", PLACES, default="host"),
        run,
        s.flag("changes", default=changes),
    )


def _verify(v: Table) -> Verify:
    kind = v.choice("kind", VERIFY_KINDS, default="none")
    within = v.data.get("within", 300)
    if not isinstance(within, int) or within <= 0:
        raise v.fail("within", "a positive number of seconds")
    fields = {key: v.text(key, required=False, empty=True) for key in ("pattern", "url", "nodes", "gpus", "run")}
    verify = Verify(
        kind,
        fields["pattern"],
        within,
        fields["url"],
        fields["nodes"],
        fields["gpus"],
        v.choice("on", ("head", "local"), default="head"),
        v.choice("in", PLACES, default="host"),
        fields["run"],
    )
    needs = {
        "http": ("url",),
        "completion": ("url",),
        "log": ("run", "pattern"),
        "ray-status": ("run", "nodes", "gpus"),
    }
    for key in needs.get(kind, ()):
        if not fields[key].strip():
            raise v.fail(key, f"a {kind} check needs it")
    if kind == "log":
        try:
            regex.compile(verify.pattern)
        except regex.error as exc:
            raise v.fail("pattern", f"does not compile: {exc}") from None
    if kind in ("http", "completion") and not verify.url.startswith("http://"):
        raise v.fail("url", "an http:// URL (fetched through the node's SSH connection)")
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
