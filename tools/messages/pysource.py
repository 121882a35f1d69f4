"""Message templates of Python source, read with ``ast`` (nothing is imported or run).

What counts as a message:

- ``raise Name(...)`` / ``raise mod.Name(...)``: the first argument; level = the exception class name;
- ``<x>.<level>(...)`` where ``<x>`` is a name that says log (``logger``, ``logging``, ``log``, ``self.logger``,
  ``_LOGGER``...) and level is debug, info, warning, warn, error, exception, critical or fatal (vLLM's
  ``warning_once`` / ``info_once`` / ``debug_once`` count as their level): the first argument;
- ``warnings.warn(...)`` / ``warn(...)``: the first argument, level ``warning``;
- ``print(...)``: the positional arguments joined by spaces, level ``print``;
- ``assert cond, msg``: the message, level ``AssertionError``;
- ``<x>.add_once_per_interval(msg, ...)`` (Ray's autoscaler events, printed by the driver as
  ``(autoscaler +1m5s) ...``): level ``event``;
- a string assigned to a name that says message (``msg``, ``message``, ``err``, ``error``, ``warn``,
  ``hint``, ``info_str``, ``text``...: messages built first and logged or raised after), level ``message``.

A template is written with every placeholder in braces (``{rank}``, ``{%d}``, ``{}``) and literal braces
doubled, whatever the source's formatting was: f-strings (the expression's text where it is short, else
``{}``), ``"..." % args`` and logging's lazy ``%`` arguments (``{%s}``), ``"...".format(...)`` (the fields as
written) and ``+`` of these. Templates with no literal text worth matching (under 8 letters) are dropped.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass

LEVELS = {"debug", "info", "warning", "warn", "error", "exception", "critical", "fatal"}
PRINTF = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(?:\*|\d+)?(?:\.(?:\*|\d+))?[hlLqjzt]*[diouxXeEfFgGcrsa]|%%")
FIELD = re.compile(r"\{\{|\}\}|\{[^{}]*\}")
SIMPLE = re.compile(r"[\w.\[\]'\"()]{1,40}")


@dataclass(frozen=True)
class Message:
    level: str
    template: str
    line: int


def escape(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


def from_printf(text: str) -> str:
    """A ``%``-format string as a template: each conversion a placeholder, ``%%`` a percent sign."""
    out, last = [], 0
    for m in PRINTF.finditer(text):
        out.append(escape(text[last : m.start()]))
        out.append("%" if m.group() == "%%" else "{" + m.group() + "}")
        last = m.end()
    out.append(escape(text[last:]))
    return "".join(out)


def placeholder(expr: ast.expr) -> str:
    try:
        text = ast.unparse(expr)
    except Exception:  # pragma: no cover - unparse handles every expression ast produces
        return "{}"
    return "{" + text + "}" if SIMPLE.fullmatch(text) else "{}"


#: In a string whose use is not seen (a message assigned to a name), what may be a placeholder: a ``%``
#: conversion or a ``str.format`` field (``{}``, ``{name}``, ``{0!r}``); other braces are literal.
EITHER = re.compile(PRINTF.pattern + r"|\{\{|\}\}|\{\w*(?:\.\w+)*(?:![rsa])?(?::[^{}]*)?\}")


def from_either(text: str) -> str:
    out, last = [], 0
    for m in EITHER.finditer(text):
        out.append(escape(text[last : m.start()]))
        tok = m.group()
        out.append("%" if tok == "%%" else tok if tok[0] == "{" else "{" + tok + "}")
        last = m.end()
    out.append(escape(text[last:]))
    return "".join(out)


def template(node: ast.expr, *, printf: bool = False) -> str | None:
    """The template of an expression that builds a string, or None where it is not one."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return from_printf(node.value) if printf else escape(node.value)
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                parts.append(escape(value.value))
            elif isinstance(value, ast.FormattedValue):
                parts.append(placeholder(value.value))
        return "".join(parts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        return template(node.left, printf=True)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = template(node.left, printf=printf), template(node.right, printf=printf)
        if left is None and right is None:
            return None
        return (left if left is not None else placeholder(node.left)) + (
            right if right is not None else placeholder(node.right)
        )
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "format"
        and isinstance(node.func.value, ast.Constant)
        and isinstance(node.func.value.value, str)
    ):
        return node.func.value.value  # already brace syntax: fields are placeholders, {{ }} literal braces
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "join":
        return None
    return None


def name_of(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def is_logger(node: ast.expr) -> bool:
    name = name_of(node).lower()
    return "log" in name


def literal_letters(tmpl: str) -> int:
    return sum(ch.isalpha() for ch in FIELD.sub("", tmpl))


def messages(source: str) -> Iterator[Message]:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return
    for node in ast.walk(tree):
        found = _message(node)
        if found is not None and literal_letters(found.template) >= 8:
            yield found


#: Methods that print their first argument later or elsewhere: Ray's autoscaler's event summary.
SINKS = {"add_once_per_interval"}
MESSAGE_NAME = re.compile(r"(?i)msg|message|err|warn|hint|reason|info|_str$|text")


def _message(node: ast.AST) -> Message | None:
    if isinstance(node, ast.Assert) and node.msg is not None:
        tmpl = template(node.msg)
        return Message("AssertionError", tmpl, node.lineno) if tmpl is not None else None
    if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign) and node.value is not None:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if any(MESSAGE_NAME.search(name_of(t)) for t in targets):
            value = node.value
            plain = isinstance(value, ast.Constant) and isinstance(value.value, str)
            tmpl = from_either(value.value) if plain else template(value)  # type: ignore[union-attr]
            return Message("message", tmpl, node.lineno) if tmpl is not None else None
        return None
    if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
        call = node.exc
        kind = name_of(call.func)
        if not kind or not call.args:
            return None
        tmpl = template(call.args[0])
        return Message(kind, tmpl, node.lineno) if tmpl is not None else None
    if not isinstance(node, ast.Call) or not node.args:
        return None
    func = node.func
    if isinstance(func, ast.Attribute):
        level = func.attr.removesuffix("_once")
        if level in LEVELS and is_logger(func.value):
            tmpl = template(node.args[0], printf=len(node.args) > 1)
            level = {"warn": "warning", "fatal": "critical"}.get(level, level)
            return Message(level, tmpl, node.lineno) if tmpl is not None else None
        if func.attr in SINKS:
            tmpl = template(node.args[0])
            return Message("event", tmpl, node.lineno) if tmpl is not None else None
        if func.attr == "warn" and name_of(func.value) == "warnings":
            tmpl = template(node.args[0])
            return Message("warning", tmpl, node.lineno) if tmpl is not None else None
        return None
    if isinstance(func, ast.Name) and func.id == "print":
        parts = [template(a) for a in node.args if not isinstance(a, ast.Starred)]
        if not any(p is not None for p in parts):
            return None
        joined = " ".join(p if p is not None else "{}" for p in parts)
        return Message("print", joined, node.lineno)
    return None
