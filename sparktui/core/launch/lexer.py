"""The one reader of the launch-command language, as a shell user writes it: words quoted the POSIX way, lines
continued with a backslash, ``VAR=value`` assignments, ``env`` and ``exec`` in front, ``docker exec [options]
CONTAINER`` and ``bash -c '...' [NAME ARGS...]`` around, and then the engine: ``vllm serve``, ``sglang serve``,
or ``python3 [options] -m MODULE``. Flags are read as argparse reads them: ``--flag value``, ``--flag=value``,
short aliases (``-tp 2``), and a word that starts with ``-`` and a digit is a (negative) number, not a flag.

Redirections (``> log``, ``2>&1``) are set aside and a control operator (``|``, ``&&``, ``;``, ``&``) ends the
command; what to make of them is the caller's to say (:attr:`Command.redirections`, :attr:`Command.operators`).
Used by the pre-launch reader (:mod:`.serve`) and the SGLang → vLLM translator (:mod:`.sglang_to_vllm`).
Pure: no I/O.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from enum import Enum

from sparktui.core.errors import Invalid

#: The modules ``python -m`` runs an engine's server from, and the engine.
MODULES = {
    "vllm.entrypoints.openai.api_server": "vllm",
    "vllm.entrypoints.cli.main": "vllm",
    "sglang.launch_server": "sglang",
}
ENGINES = ("vllm", "sglang")
FORMS = (
    "vllm serve ..., python3 -m vllm.entrypoints.openai.api_server ..., "
    "python3 -m sglang.launch_server ... or sglang serve ..."
)

_CONTINUATION = re.compile(r"\\[ \t]*\r?\n")  # blanks after the backslash, as pasted from a page, and CRLF
_OPERATORS = ("&&", "||", ";;", ";", "&", "|", "(", ")")
_BLANKS = " \t\r\n"
_SPECIAL = ";&|()<>"  # what ends a word outside quotes besides a blank
_REDIRECTIONS = (">>", ">&", "<&", "&>", ">|", "<>", ">", "<")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_PYTHON = re.compile(r"(?:.*/)?python(?:3(?:\.\d+)?)?")
_PYTHON_SWITCHES = re.compile(r"-[bBdEhiIOPqsSuvVx]+")
_PYTHON_VALUED = re.compile(r"-[WX].*")
_SHELL = re.compile(r"(?:.*/)?(?:ba|da|z)?sh")
_SHELL_COMMAND = ("-c", "-lc", "-ec")
_NUMBER = re.compile(r"-\.?\d")
_DOCKER_EXEC_VALUES = frozenset({"-e", "--env", "--env-file", "-u", "--user", "-w", "--workdir", "--detach-keys"})


class LaunchError(Invalid):
    """Not a launch command that can be read; one line."""


class NotALaunch(LaunchError):
    """Words that are no engine's launch; ``words`` are the command's, for the caller's hint."""

    def __init__(self, words: Sequence[str]) -> None:
        self.words = tuple(words)
        super().__init__(f"not a vLLM or SGLang launch: it starts with {shlex.join(words[:2])!r} (want {FORMS})")


class Takes(Enum):
    """How many values a flag takes."""

    NOTHING = 0
    ONE = 1
    SOME = 2  # one or more
    ANY = 3  # none or more


@dataclass(frozen=True, slots=True)
class Option:
    """A flag as given (``flag`` without ``=value``) and its values; ``flag`` "" for a word no flag took."""

    flag: str
    values: tuple[str, ...]
    inline: bool = False  # given as --flag=value


@dataclass(frozen=True, slots=True)
class Command:
    """A launch command, read: the engine and its arguments, the words that named it (``vllm serve``,
    ``python3 -u -m sglang.launch_server``), the environment set in front (assignments, ``env``, ``docker exec
    -e``), the container a ``docker exec`` runs it in, the redirections and control operators met (as
    written), the words after the first operator, and whether the command ends with ``&`` (in the background)."""

    engine: str
    args: tuple[str, ...]
    program: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()
    container: str = ""
    redirections: tuple[str, ...] = ()
    operators: tuple[str, ...] = ()
    after: tuple[str, ...] = ()
    background: bool = False


def read(command: str) -> Command:
    """The launch in ``command``. Raises :class:`NotALaunch` for words that are no launch, and
    :class:`LaunchError` for a command that cannot be split."""
    words, around = _split(command)
    env: list[tuple[str, str]] = []
    container = ""
    while words:
        first = words[0]
        if first in ("exec", "env"):
            words = words[1:]
        elif _ASSIGNMENT.match(first):
            name, _, value = first.partition("=")
            env.append((name, value))
            words = words[1:]
        elif first == "docker" and words[1:2] == ["exec"]:
            container, words, given = _docker_exec(words[2:])
            env += given
        elif _SHELL.fullmatch(first) and len(words) >= 3 and words[1] in _SHELL_COMMAND:
            inner, more = _split(words[2])
            words = _positional(inner, words[4:])
            around = _Around(
                around.redirections + more.redirections,
                around.operators + more.operators,
                around.after + more.after,
                around.background or more.background,
            )
        else:
            break
    if not words:
        raise LaunchError("no command after the environment assignments")
    engine, at = _engine(words)
    return Command(
        engine,
        tuple(words[at:]),
        tuple(words[:at]),
        tuple(env),
        container,
        around.redirections,
        around.operators,
        around.after,
        around.background,
    )


def quoted(command: str) -> str:
    """``command``, one command alone, as words each quoted where a shell would read it otherwise: what a
    playbook hands to ``sh -c`` runs those words and nothing else (``$(...)``, backquotes and ``$NAME`` stay
    text; an assignment in front keeps its name bare, so it still assigns). Raises :class:`LaunchError` for
    a shell operator or a redirection: a launch is given alone."""
    words, around = _split(command)
    if around.operators:
        raise LaunchError(f"shell operator {around.operators[0]!r}: give the launch alone")
    if around.redirections:
        raise LaunchError(f"redirection {around.redirections[0]!r}: give the launch alone")
    out: list[str] = []
    leading = True  # the assignments in front of the command
    for word in words:
        leading = leading and _ASSIGNMENT.match(word) is not None
        name, _, value = word.partition("=")
        out.append(f"{name}={shlex.quote(value)}" if leading else shlex.quote(word))
    return " ".join(out)


def without_env(command: str, names: Collection[str]) -> str:
    """``command`` without the ``NAME=value`` assignments in front of it (after ``env`` or ``exec`` too) that set
    one of ``names``, the rest kept as written: a playbook that gives the engine its own values relaunches the
    command with these taken out, or they would win again. Raises :class:`LaunchError` where the command sets
    one of ``names`` where it cannot be taken out as written (``docker exec -e``, inside ``sh -c '...'``)."""
    text = _CONTINUATION.sub(" ", command)
    kept: list[str] = []
    at = 0
    while True:
        start = at
        while at < len(text) and text[at] in _BLANKS:
            at += 1
        if at >= len(text) or text[at] in _SPECIAL:
            break
        word, _, end = _word(text, at)
        if word not in ("env", "exec") and not _ASSIGNMENT.match(text, at):
            break  # the name of an assignment is never quoted
        if word.partition("=")[0] not in names or word in ("env", "exec"):
            kept.append(text[start:end])
        at = end
    stripped = ("".join(kept) + text[start:]).strip()
    try:
        left = [name for name, _ in read(stripped).env if name in names]
    except LaunchError:
        return stripped  # not a launch read here: the assignments in front are all it holds of these
    if left:
        raise LaunchError(
            f"the launch sets {', '.join(dict.fromkeys(left))} where it cannot be taken out (docker exec -e, or "
            "inside sh -c): take it out of the launch, or it overrides the values given"
        )
    return stripped


def options(args: Sequence[str], takes: Callable[[str], Takes]) -> list[Option]:
    """Each flag of ``args`` with its values, and each word no flag takes, in the order given: a flag takes as
    many of the words after it as ``takes`` says, never one that is a flag itself."""
    found: list[Option] = []
    at = 0
    while at < len(args):
        word = args[at]
        at += 1
        if not is_flag(word):
            found.append(Option("", (word,)))
            continue
        flag, eq, inline = word.partition("=")
        if eq:
            found.append(Option(flag, (inline,), inline=True))
            continue
        arity = takes(flag)
        most = {Takes.NOTHING: 0, Takes.ONE: 1}.get(arity, len(args))
        end = at
        while end < len(args) and end - at < most and not is_flag(args[end]):
            end += 1
        found.append(Option(flag, tuple(args[at:end])))
        at = end
    return found


def is_flag(word: str) -> bool:
    """Whether a word is a flag: it starts with ``-``, and is neither ``-`` alone nor a number (``-1``, ``-.5``)."""
    return word.startswith("-") and word != "-" and not _NUMBER.match(word)


@dataclass(frozen=True, slots=True)
class _Around:
    """What a line holds besides the words of its first command."""

    redirections: tuple[str, ...] = ()
    operators: tuple[str, ...] = ()
    after: tuple[str, ...] = ()  # the words after the first operator
    background: bool = False  # the line ends with &


def _split(command: str) -> tuple[list[str], _Around]:
    """The words of the first command (redirections left out), and what is around them."""
    tokens = _tokens(_CONTINUATION.sub(" ", command))
    if not tokens:
        raise LaunchError("empty command")
    found: dict[str, list[str]] = {"word": [], "redirection": [], "operator": []}
    after: list[str] = []
    for token, kind in tokens:
        if kind == "word" and found["operator"]:
            after.append(token)
        else:
            found[kind].append(token)
    around = _Around(
        tuple(found["redirection"]), tuple(found["operator"]), tuple(after), tokens[-1] == ("&", "operator")
    )
    return found["word"], around


def _tokens(text: str) -> list[tuple[str, str]]:
    """Words, ``redirection`` (with its file descriptor and target) and ``operator`` tokens, quoted as a POSIX
    shell quotes them."""
    tokens: list[tuple[str, str]] = []
    at = 0
    while at < len(text):
        if text[at] in _BLANKS:
            at += 1
        elif text.startswith(_OPERATORS, at) and not text.startswith("&>", at):
            op = next(o for o in _OPERATORS if text.startswith(o, at))
            tokens.append((op, "operator"))
            at += len(op)
        else:
            word, quoted, at = _word(text, at)
            if not text.startswith(_REDIRECTIONS, at) or (word and (quoted or not word.isdigit())):
                if word or quoted:
                    tokens.append((word, "word"))
                continue
            op = next(r for r in _REDIRECTIONS if text.startswith(r, at))  # word: the descriptor, or none
            at += len(op)
            while at < len(text) and text[at] in " \t":
                at += 1
            target, _, at = _word(text, at)
            tokens.append((f"{word}{op}{target}", "redirection"))
    return tokens


def _word(text: str, at: int) -> tuple[str, bool, int]:
    """The word from ``at`` (quotes removed), whether any of it was quoted, and where it ends: at a blank, an
    operator or a redirection."""
    parts: list[str] = []
    quoted = False
    while at < len(text) and text[at] not in _BLANKS and text[at] not in _SPECIAL:
        c = text[at]
        if c == "'":
            close = text.find("'", at + 1)
            if close < 0:
                raise LaunchError("cannot split the command: no closing quotation")
            parts.append(text[at + 1 : close])
            at = close + 1
        elif c == '"':
            at = _double_quoted(text, at + 1, parts)
        elif c == "\\":
            if at + 1 >= len(text):
                raise LaunchError("cannot split the command: no escaped character")
            parts.append(text[at + 1])
            at += 2
        else:
            parts.append(c)
            at += 1
            continue
        quoted = True
    return "".join(parts), quoted, at


def _double_quoted(text: str, at: int, into: list[str]) -> int:
    """Reads a double-quoted part from ``at`` (after the quote); where it ends. Inside, a backslash escapes
    only ``$``, a backquote, ``"``, a backslash and a newline, as in a POSIX shell."""
    while at < len(text):
        c = text[at]
        if c == '"':
            return at + 1
        if c == "\\" and at + 1 < len(text) and text[at + 1] in '$`"\\\n':
            if text[at + 1] != "\n":
                into.append(text[at + 1])
            at += 2
            continue
        into.append(c)
        at += 1
    raise LaunchError("cannot split the command: no closing quotation")


def _positional(words: list[str], args: list[str]) -> list[str]:
    """A ``sh -c`` script's words with ``$@`` (and ``$*``) given the arguments after its ``$0``, as the shell
    gives them: the playbooks pass a launch's added flags that way."""
    out: list[str] = []
    for word in words:
        out += args if word in ("$@", "$*") else [word]
    return out


def _docker_exec(words: list[str]) -> tuple[str, list[str], list[tuple[str, str]]]:
    env: list[tuple[str, str]] = []
    at = 0
    while at < len(words) and words[at].startswith("-"):
        flag, eq, value = words[at].partition("=")
        if flag in _DOCKER_EXEC_VALUES and not eq:
            value = words[at + 1] if at + 1 < len(words) else ""
            at += 1
        if flag in ("-e", "--env") and "=" in value:
            name, _, setting = value.partition("=")
            env.append((name, setting))
        at += 1
    if at >= len(words):
        raise LaunchError("docker exec without a container")
    return words[at], words[at + 1 :], env


def _engine(words: list[str]) -> tuple[str, int]:
    """The engine and where its arguments begin."""
    program = words[0].rpartition("/")[2]
    if program in ENGINES and words[1:2] == ["serve"]:
        return program, 2
    if _PYTHON.fullmatch(words[0]):
        at = 1
        while at < len(words) and words[at] != "-m":
            if _PYTHON_SWITCHES.fullmatch(words[at]):
                at += 1
            elif _PYTHON_VALUED.fullmatch(words[at]):
                at += 1 if len(words[at]) > 2 else 2
            else:
                break
        module = words[at + 1] if words[at : at + 1] == ["-m"] and at + 1 < len(words) else ""
        if module in MODULES:
            at += 2
            if module == "vllm.entrypoints.cli.main" and words[at : at + 1] == ["serve"]:
                at += 1
            return MODULES[module], at
    raise NotALaunch(words)
