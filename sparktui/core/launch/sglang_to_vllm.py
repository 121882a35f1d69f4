"""Translate an SGLang launch command into the `vllm serve` command that does the same.

`sglang_to_vllm` reads `python3 -m sglang.launch_server …` or `sglang serve …` with the one launch lexer
(:mod:`.lexer`: `exec`, `env` and VAR=value assignments in front are kept, a `bash -c` around is peeled; a
container, a redirection or a second command is refused) and sends every flag through one table,
``diagnostics/launch/sglang-to-vllm.toml`` (data with examples, read on first use): renamed, kept, or dropped
with the reason, plus a note wherever the vLLM flag is only close; the few flags that take more than a rename
name a function here. SGLang's multi-node flags become a Ray launch on the head (mode "ray") or vLLM's own
multi-node flags (mode "native"). The tests check every vLLM flag written against captured `vllm serve
--help=all` output, and the SGLang flags against SGLang's. Pure: no I/O but the table.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import ClassVar, Literal

from sparktui.core.errors import Invalid
from sparktui.core.launch import tables
from sparktui.core.launch.lexer import LaunchError, NotALaunch, Option, Takes, is_flag, options, read
from sparktui.core.tomlfile import Table

Mode = Literal["ray", "native"]


@dataclass(frozen=True, slots=True)
class Dropped:
    """An SGLang flag that has no place in the vLLM command."""

    flag: str
    value: str | None
    reason: str


@dataclass(frozen=True, slots=True)
class Translation:
    """The vLLM command, the environment the SGLang command set, and what did not carry over as is."""

    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    dropped: tuple[Dropped, ...]
    notes: tuple[str, ...]

    @property
    def command(self) -> str:
        """The argv as one shell-quoted line (without the environment)."""
        return shlex.join(self.argv)

    @property
    def launch(self) -> str:
        """The command with the SGLang launch's environment in front, as one line for ``sh -c``."""
        return " ".join([*(f"{name}={shlex.quote(value)}" for name, value in self.env), self.command])


class TranslateError(Invalid):
    """The command is not an SGLang launch that can be translated; the message is one line."""


@dataclass(frozen=True, slots=True)
class _Names:
    """How the values of one flag are spelled in SGLang and in vLLM."""

    what: str
    same: frozenset[str]
    renamed: Mapping[str, str] = field(default_factory=dict)
    closed: bool = False  # vLLM accepts only its own names: an unknown value is dropped, not passed on
    hint: str = ""


@dataclass(frozen=True, slots=True)
class _Flag:
    """A flag with one value, written under vLLM's name."""

    takes: ClassVar[Takes] = Takes.ONE
    to: str
    note: str = ""
    names: _Names | None = None


@dataclass(frozen=True, slots=True)
class _Switch:
    """A switch, written under vLLM's name."""

    takes: ClassVar[Takes] = Takes.NOTHING
    to: str
    note: str = ""


@dataclass(frozen=True, slots=True)
class _Drop:
    """A flag vLLM has no counterpart for."""

    reason: str
    takes: Takes = Takes.ONE


@dataclass(frozen=True, slots=True)
class _Custom:
    """A flag with one value that takes more than a rename: ``apply`` writes it, under vLLM's flag ``to`` (and
    ``also``, a second flag it may write), with ``note`` and the ``names`` of its values where it has them."""

    takes: ClassVar[Takes] = Takes.ONE
    apply: Callable[[_Out, _Custom, str, str], None]
    to: str = ""
    also: str = ""
    note: str = ""
    names: _Names | None = None


_Rule = _Flag | _Switch | _Drop | _Custom


@dataclass
class _Out:
    """The vLLM command as it is being built."""

    mode: Mode
    given: frozenset[str]  # every SGLang flag in the command
    model: str | None = None
    node_rank: int = 0
    flags: list[str] = field(default_factory=list)
    dropped: list[Dropped] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def emit(self, flag: str, value: str | None = None) -> None:
        """Writes a switch once, or a flag and its value (as one word when the value looks like a flag)."""
        if value is None:
            if flag not in self.flags:
                self.flags.append(flag)
            return
        self.shell_syntax(value)
        self.flags += [f"{flag}={value}"] if is_flag(value) else [flag, value]

    def drop(self, flag: str, value: str | None, reason: str) -> None:
        self.dropped.append(Dropped(flag, value, reason))

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def shell_syntax(self, value: str) -> None:
        if _SHELL_SYNTAX.search(value):
            self.note(
                f"{value!r} holds $ or `: if the shell that ran SGLang expanded it, put the expanded value in "
                "(the vLLM command keeps it literal)"
            )


_FLAG_NAME = re.compile(r"--?[A-Za-z0-9][A-Za-z0-9_.-]*")
_SHELL_SYNTAX = re.compile(r"[$`]")
_DIGITS = re.compile(r"\d+", re.ASCII)

_LAUNCH_FORMS = "python3 -m sglang.launch_server … or sglang serve …"
_NOT_SGLANG = {
    "vllm": "this is already a vLLM command",
    "docker": "give the command the container runs, not docker's",
    "podman": "give the command the container runs, not podman's",
}


def _whole(flag: str, value: str, least: int) -> int:
    if not _DIGITS.fullmatch(value) or int(value) < least:
        raise TranslateError(f"{flag} wants a whole number of at least {least}, got {value!r}")
    return int(value)


def _host_port(flag: str, value: str) -> tuple[str, str]:
    host, colon, port = value.rpartition(":")
    bracketed = host.startswith("[") and host.endswith("]")
    if bracketed:
        host = host[1:-1]
    if not colon or not host or not _DIGITS.fullmatch(port) or not 0 < int(port) < 65536:
        raise TranslateError(f"{flag} wants HOST:PORT, got {value!r}")
    if ":" in host and not bracketed:
        raise TranslateError(f"{flag} {value!r}: write an IPv6 address as [address]:port")
    return host, port


def _keep(out: _Out, rule: _Flag, flag: str, value: str) -> None:
    names = rule.names
    if names is not None:
        if value in names.renamed:
            out.note(f"{flag} {value}: vLLM calls this {names.what} {names.renamed[value]!r}")
            value = names.renamed[value]
        elif value not in names.same:
            if names.closed:
                out.drop(flag, value, f"vLLM has no {names.what} {value!r}")
                return
            out.note(f"{flag} {value!r} is passed as is: sparktui does not know it as a vLLM {names.what}{names.hint}")
    out.emit(rule.to, value)
    if rule.note:
        out.note(rule.note)


def _model(out: _Out, rule: _Custom, flag: str, value: str) -> None:
    if is_flag(value):
        raise TranslateError(f"{flag} {value!r}: a model path cannot start with '-' (write ./{value})")
    out.model = value
    out.shell_syntax(value)


def _data_parallel(out: _Out, rule: _Custom, flag: str, value: str) -> None:
    if "--enable-dp-attention" in out.given:
        out.drop(flag, value, _table().texts["dp_attention"])
    else:
        out.emit(rule.to, value)


def _expert_parallel(out: _Out, rule: _Custom, flag: str, value: str) -> None:
    """An expert-parallel size: vLLM's switch ``to``, or nothing for a size of 1."""
    if _whole(flag, value, 1) == 1:
        out.drop(flag, value, "an expert-parallel size of 1 is no expert parallelism")
        return
    out.emit(rule.to)
    out.note(rule.note)


def _chunked_prefill(out: _Out, rule: _Custom, flag: str, value: str) -> None:
    """A size, or -1 (no chunked prefill): vLLM's switch ``also``."""
    if value == "-1":
        out.emit(rule.also)
        return
    out.emit(rule.to, value)
    out.note(rule.note)


def _tool_call_parser(out: _Out, rule: _Custom, flag: str, value: str) -> None:
    """The parser, as a renamed flag, and vLLM's switch ``also`` that makes it answer tool calls."""
    _keep(out, _Flag(rule.to, names=rule.names), flag, value)
    out.emit(rule.also)
    out.note(rule.note)


def _chat_template(out: _Out, rule: _Custom, flag: str, value: str) -> None:
    out.emit(rule.to, value)
    if not ("/" in value or "{" in value or value.endswith(".jinja")):
        out.note(f"{flag} {value!r} looks like an SGLang built-in template name; vLLM wants a file or the template")


def _multi_node(out: _Out, flag: str, value: str, options: dict[str, str]) -> None:
    if out.mode == "ray":
        out.drop(flag, value, _table().texts["ray"])
        return
    for name, setting in options.items():
        out.emit(name, setting)


def _nnodes(out: _Out, rule: _Custom, flag: str, value: str) -> None:
    _multi_node(out, flag, value, {rule.to: str(_whole(flag, value, 1))})


def _node_rank(out: _Out, rule: _Custom, flag: str, value: str) -> None:
    out.node_rank = _whole(flag, value, 0)
    _multi_node(out, flag, value, {rule.to: str(out.node_rank)})


def _dist_init_addr(out: _Out, rule: _Custom, flag: str, value: str) -> None:
    """HOST:PORT: vLLM's ``to`` (the address) and ``also`` (the port)."""
    host, port = _host_port(flag, value)
    _multi_node(out, flag, value, {rule.to: host, rule.also: port})


_CUSTOM: dict[str, Callable[[_Out, _Custom, str, str], None]] = {
    "model": _model,
    "data_parallel": _data_parallel,
    "expert_parallel": _expert_parallel,
    "chunked_prefill": _chunked_prefill,
    "tool_call_parser": _tool_call_parser,
    "chat_template": _chat_template,
    "nnodes": _nnodes,
    "node_rank": _node_rank,
    "dist_init_addr": _dist_init_addr,
}
_TAKES = {"nothing": Takes.NOTHING, "one": Takes.ONE, "some": Takes.SOME, "any": Takes.ANY}


@dataclass(frozen=True, slots=True)
class _Table:
    """``diagnostics/launch/sglang-to-vllm.toml``, read: each SGLang flag's rule, the families of flags dropped
    by their prefix, the words the rules share, and the values of flags as vLLM names them."""

    rules: Mapping[str, _Rule]
    families: tuple[tuple[str, _Drop], ...]
    texts: Mapping[str, str]
    values: Mapping[str, _Names]
    unknown: _Drop


@cache
def _table() -> _Table:
    doc = tables.read("sglang-to-vllm")
    doc.known(("texts", "flags", "prefixes", "values", "examples"))
    words = doc.table("texts")
    texts = {name: words.text(name) for name in words.data}

    def text(t: Table, key: str) -> str:
        value = t.text(key, required=False)
        if value.startswith("@") and value[1:] not in texts:
            raise t.fail(key, f"no text {value[1:]!r} in [texts] ({', '.join(texts)})")
        return texts[value[1:]] if value.startswith("@") else value

    listed = doc.table("values")
    values = {}
    for name in listed.data:
        v = listed.table(name)
        v.known(("what", "same", "renamed", "closed", "hint"))
        renamed = v.table("renamed", required=False)
        values[name] = _Names(
            v.text("what"),
            frozenset(v.texts("same")),
            {key: renamed.text(key) for key in renamed.data},
            v.flag("closed", default=False),
            v.text("hint", required=False),
        )
    rules: dict[str, _Rule] = {}
    for entry in doc.tables("flags"):
        entry.known(("sglang", "vllm", "also", "switch", "values", "drop", "takes", "custom", "note"))
        if ("drop" in entry.data) == ("vllm" in entry.data or "custom" in entry.data):
            raise entry.fail("vllm", "give vllm (or custom) or drop")
        named = entry.text("values", required=False)
        if named and named not in values:
            raise entry.fail("values", f"no [values.{named}] ({', '.join(values)})")
        names = values[named] if named else None
        rule: _Rule
        if "custom" in entry.data:
            apply = _CUSTOM[entry.choice("custom", tuple(_CUSTOM))]
            to, also, note = entry.text("vllm", required=False), entry.text("also", required=False), text(entry, "note")
            rule = _Custom(apply, to, also, note, names)
        elif "drop" in entry.data:
            rule = _Drop(text(entry, "drop"), _TAKES[entry.choice("takes", tuple(_TAKES), default="one")])
        elif entry.flag("switch", default=False):
            rule = _Switch(entry.text("vllm"), text(entry, "note"))
        else:
            rule = _Flag(entry.text("vllm"), text(entry, "note"), names)
        for flag in entry.texts("sglang"):
            if flag in rules:
                raise entry.fail("sglang", f"{flag} has a rule already")
            rules[flag] = rule
    families = []
    for entry in doc.tables("prefixes"):
        entry.known(("prefix", "drop", "takes"))
        takes = _TAKES[entry.choice("takes", tuple(_TAKES), default="one")]
        families.append((entry.text("prefix"), _Drop(text(entry, "drop"), takes)))
    doc.tables("examples")  # checked by the tests, which translate them
    if "unknown" not in texts:
        raise words.fail("unknown", "needs the reason a flag named nowhere is dropped")
    return _Table(rules, tuple(families), texts, values, _Drop(texts["unknown"], Takes.ANY))


def _rule(flag: str) -> _Rule:
    table = _table()
    if flag in table.rules:
        return table.rules[flag]
    return next((rule for prefix, rule in table.families if flag.startswith(prefix)), table.unknown)


def _read(command: str) -> tuple[tuple[tuple[str, str], ...], list[Option]]:
    """The environment assignments in front of the SGLang launch, and its flags."""
    try:
        line = read(command)
    except NotALaunch as exc:
        hint = _NOT_SGLANG.get(exc.words[0].rpartition("/")[2], f"want {_LAUNCH_FORMS}")
        raise TranslateError(f"not an SGLang launch ({hint}): it starts with {shlex.join(exc.words[:2])!r}") from None
    except LaunchError as exc:
        raise TranslateError(str(exc)) from None
    if line.operators:
        raise TranslateError(f"shell operator {line.operators[0]!r}: give the SGLang launch alone")
    if line.redirections:
        raise TranslateError(f"redirection {line.redirections[0]!r}: give the SGLang launch alone")
    if line.container or line.engine != "sglang":
        hint = _NOT_SGLANG["docker" if line.container else line.engine]
        raise TranslateError(f"not an SGLang launch ({hint}): it starts with {shlex.join(line.program)!r}")
    args = line.args
    if line.program[-1] == "serve" and args and not is_flag(args[0]):  # `sglang serve MODEL …`
        args = ("--model-path", *args)
    return line.env, options(args, lambda flag: _rule(flag).takes)


def _options(given: list[Option]) -> list[tuple[str, _Rule, tuple[str, ...]]]:
    """Each flag with its rule and its values, in the order given."""
    found: list[tuple[str, _Rule, tuple[str, ...]]] = []
    for option in given:
        if not option.flag:
            after = f" after {found[-1][0]}" if found else ""
            raise TranslateError(f"unexpected argument {option.values[0]!r}{after}")
        flag = option.flag
        token = f"{flag}={option.values[0]}" if option.inline else flag
        if not _FLAG_NAME.fullmatch(flag):
            raise TranslateError(f"not a flag: {token!r}")
        rule = _rule(flag)
        if option.inline and rule.takes is Takes.NOTHING:
            raise TranslateError(f"{flag} is a switch and takes no value, got {token!r}")
        if not option.values and rule.takes in (Takes.ONE, Takes.SOME):
            raise TranslateError(f"{flag} needs a value")
        found.append((flag, rule, option.values))
    return found


def _apply(out: _Out, flag: str, rule: _Rule, values: tuple[str, ...]) -> None:
    match rule:
        case _Switch():
            out.emit(rule.to)
            if rule.note:
                out.note(rule.note)
        case _Drop():
            out.drop(flag, " ".join(values) if values else None, rule.reason)
        case _Flag():
            (value,) = values
            _keep(out, rule, flag, value)
        case _Custom():
            (value,) = values
            rule.apply(out, rule, flag, value)


def sglang_to_vllm(command: str, *, mode: Mode = "ray") -> Translation:
    """The `vllm serve` command for an SGLang launch command.

    Mode "ray": vLLM runs on a Ray cluster, started on the head only (--distributed-executor-backend ray);
    SGLang's --nnodes, --node-rank and --dist-init-addr are dropped. Mode "native": vLLM's own multi-node
    flags (--nnodes, --node-rank, --master-addr, --master-port, and --headless on every node but rank 0).
    Raises TranslateError when the command is not an SGLang launch or cannot be read.
    """
    env, given = _read(command)
    flags = _options(given)
    out = _Out(mode, frozenset(flag for flag, _, _ in flags))
    for _, value in env:
        out.shell_syntax(value)
    for flag, rule, values in flags:
        _apply(out, flag, rule, values)
    if out.model is None:
        raise TranslateError("no model: the SGLang command has no --model-path")
    if mode == "ray":
        out.emit("--distributed-executor-backend", "ray")
        if out.node_rank:
            out.note(
                f"this is node rank {out.node_rank}'s command: with Ray only the head runs vllm serve, "
                "the other nodes only join the Ray cluster"
            )
    elif out.node_rank:
        out.emit("--headless")
    if not out.node_rank:
        if "--host" not in out.given:
            out.note("no --host: SGLang listened on 127.0.0.1 only, vLLM listens on every interface")
        if "--port" not in out.given:
            out.note("no --port: SGLang served on port 30000, vLLM serves on 8000")
    return Translation(("vllm", "serve", out.model, *out.flags), env, tuple(out.dropped), tuple(out.notes))
