"""The conditions of the pre-launch checks: small expressions over facts, read with Python's own parser and
evaluated here by a walker that knows only what is listed below (nothing of Python's is called).

    launch.gpus_per_node > gpu.count and launch.executor != 'ray'
    missing(model.architectures, probe.vllm_archs)
    distinct('probe.ray') > 1                       # over every node (a check of scope "cluster")
    len(common('rdma.subnets')) == 0                # items every node's list holds
    len(disagree('rdma.mtu_by_subnet')) > 0         # keys of key=value items the nodes give different values

Names are fact names (:mod:`sparktui.core.inventory.names`). Logic has three values: a fact that is not
known makes whatever depends on it :data:`UNKNOWN`, except where ``and`` / ``or`` are decided by their
other side; :func:`evaluate` returns the value and the facts it missed, so a check that cannot decide
says which facts it lacked.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sparktui.core.catalogue import in_ranges
from sparktui.core.inventory.facts import Value


class _Unknown:
    """A value that is not known (a fact nobody could read)."""

    _instance: _Unknown | None = None

    def __new__(cls) -> _Unknown:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN = _Unknown()


class ExprError(ValueError):
    """An expression that cannot be used: not an expression, or something a check may not say."""


@dataclass(frozen=True, slots=True)
class Scope:
    """What an expression sees: one node's facts (``facts``), and for a check over the cluster every node's
    (``nodes``, by node name)."""

    facts: Mapping[str, Value]
    nodes: Mapping[str, Mapping[str, Value]] = field(default_factory=dict)


_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], bool]] = {
    ast.Eq: lambda a, b: bool(a == b),
    ast.NotEq: lambda a, b: bool(a != b),
    ast.Lt: lambda a, b: bool(a < b),
    ast.LtE: lambda a, b: bool(a <= b),
    ast.Gt: lambda a, b: bool(a > b),
    ast.GtE: lambda a, b: bool(a >= b),
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}
_ARITHMETIC: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
}


def _names(items: Any) -> tuple[str, ...]:
    if isinstance(items, str):
        return tuple(part for part in items.split(",") if part)
    return tuple(str(i) for i in items)


def missing(items: Any, within: Any) -> tuple[str, ...]:
    """The items that are not in ``within`` (either may be a tuple or a comma-separated text)."""
    present = set(_names(within))
    return tuple(i for i in _names(items) if i not in present)


def unmatched_ifnames(spec: Any, interfaces: Any) -> tuple[str, ...]:
    """The entries of an ``NCCL_SOCKET_IFNAME`` that match no interface: NCCL takes each as a prefix
    (``eth`` matches ``eth0``), as an exact name after ``=``, and an entry list after ``^`` as interfaces to
    avoid (which need not exist)."""
    text = str(spec).strip()
    if not text or text.startswith("^"):
        return ()
    exact = text.startswith("=")
    names = _names(interfaces)
    wanted = [w.strip() for w in text.lstrip("=").split(",") if w.strip()]
    if exact:
        return tuple(w for w in wanted if w not in names)
    return tuple(w for w in wanted if not any(n.startswith(w) for n in names))


def _hca_entries(spec: Any) -> tuple[bool, bool, list[tuple[str, str]]]:
    """An ``NCCL_IB_HCA``: whether it excludes (``^``), whether its names are exact (``=``), and its entries
    as (device, port or "")."""
    text = str(spec).strip()
    exclude = text.startswith("^")
    text = text.lstrip("^")
    exact = text.startswith("=")
    entries = []
    for entry in text.lstrip("=").split(","):
        device, _, port = entry.strip().partition(":")
        if device:
            entries.append((device, port.strip()))
    return exclude, exact, entries


def _selects(device: str, port: str, exact: bool, key: str) -> bool:
    """Whether an entry of an NCCL_IB_HCA names ``key`` (``device:port``, maybe ``=value`` after it): its
    device by prefix (exactly after ``=``), and its port where it gives one, as NCCL matches them."""
    name, _, number = key.partition("=")[0].partition(":")
    named = name == device if exact else name.startswith(device)
    return named and (not port or port == number)


def hca_ports(spec: Any, ports: Any) -> tuple[str, ...]:
    """The items of ``ports`` (``device:port``, or ``device:port=value``) an ``NCCL_IB_HCA`` selects: all of
    them for an empty one, those it does not name after ``^``."""
    exclude, exact, entries = _hca_entries(spec)
    items = _names(ports)
    if not entries:
        return items
    return tuple(i for i in items if any(_selects(d, p, exact, i) for d, p in entries) is not exclude)


def unmatched_hcas(spec: Any, ports: Any) -> tuple[str, ...]:
    """The entries of an ``NCCL_IB_HCA`` that name none of ``ports`` (``device:port``); none for a list of
    devices to avoid (``^``)."""
    exclude, exact, entries = _hca_entries(spec)
    if exclude:
        return ()
    items = _names(ports)
    return tuple(f"{d}:{p}" if p else d for d, p in entries if not any(_selects(d, p, exact, i) for i in items))


def gid_at(table: Any, ports: Any, index: Any) -> tuple[str, ...]:
    """What each of ``ports`` (``device:port``, maybe ``=value`` after it) holds at GID ``index``, from
    ``table`` (``device:port/index=what``): its entry, or ``device:port/index=empty``."""
    held = {key: value for key, _, value in (item.partition("=") for item in _names(table))}
    keys = [f"{port.partition('=')[0]}/{str(index).strip()}" for port in _names(ports)]
    return tuple(f"{key}={held.get(key, 'empty')}" for key in keys)


def other_than(pairs: Any, value: Any) -> tuple[str, ...]:
    """The ``key=value`` items of ``pairs`` whose value is not ``value`` (compared as text)."""
    wanted = str(value).strip()
    return tuple(p for p in _names(pairs) if p.partition("=")[2].strip() != wanted)


def _known_lists(scope: Scope, name: str) -> list[tuple[str, ...]] | None:
    values = [_names(node[name]) for node in scope.nodes.values() if name in node]
    return values if len(values) >= 2 else None


def _common(scope: Scope, name: str) -> tuple[str, ...] | _Unknown:
    """The items that every node's list ``name`` holds (a node that lacks it does not count); unknown where
    fewer than two nodes know it."""
    lists = _known_lists(scope, name)
    if lists is None:
        return UNKNOWN
    return tuple(i for i in dict.fromkeys(lists[0]) if all(i in other for other in lists[1:]))


def _disagree(scope: Scope, name: str) -> tuple[str, ...] | _Unknown:
    """For a list of ``key=value`` items: the keys given different values, on one node or across the nodes
    (a node that lacks the list does not count); unknown where fewer than two nodes know it."""
    lists = _known_lists(scope, name)
    if lists is None:
        return UNKNOWN
    seen: dict[str, set[str]] = {}
    for items in lists:
        for item in items:
            key, _, value = item.partition("=")
            seen.setdefault(key, set()).add(value)
    return tuple(key for key, values in seen.items() if len(values) > 1)


def _distinct(scope: Scope, name: str) -> int | _Unknown:
    """How many different values of fact ``name`` the nodes have (a node that lacks it does not count);
    unknown where fewer than two nodes know it."""
    values = [node[name] for node in scope.nodes.values() if name in node]
    if len(values) < 2:
        return UNKNOWN
    return len({repr(v) for v in values})


def _total(scope: Scope, name: str) -> float | _Unknown:
    values = [node[name] for node in scope.nodes.values() if isinstance(node.get(name), int | float)]
    return sum(values) if values else UNKNOWN  # type: ignore[arg-type]


def version(text: Any) -> tuple[int, ...] | _Unknown:
    """A version's leading numbers, to compare: ``version('0.12.0+cpu') < version('0.13')``; unknown for
    text that starts with none ("" for a package not installed)."""
    numbers = re.match(r"\d+(?:\.\d+)*", str(text).lstrip("v"))
    return tuple(int(n) for n in numbers[0].split(".")) if numbers else UNKNOWN


def affected(value: Any, spec: Any) -> bool | _Unknown:
    """Whether version ``value`` lies in one of the version ranges ``spec`` (see
    :func:`sparktui.core.catalogue.in_ranges`): False for "" (not installed), unknown for text with no version."""
    found = in_ranges(str(value), str(spec))
    return UNKNOWN if found is None else found


def runs_on(archs: Any, capability: Any) -> bool | _Unknown:
    """Whether kernels built for one of ``archs`` (``sm_120``, ``sm_90a``, ``compute_120``) run on a GPU of
    compute ``capability`` (``12.1``): cubins of its major version and a minor not above its own (sm_120 on
    12.1), the architecture-specific ones (``a``, ``f``) on theirs only, PTX (``compute_``) of a version not above
    it through the driver's JIT. Unknown for a capability it cannot read."""
    m = re.fullmatch(r"(\d+)\.(\d+)", str(capability).strip())
    if m is None:
        return UNKNOWN
    major, minor = int(m[1]), int(m[2])
    for arch in _names(archs):
        found = re.fullmatch(r"(sm|compute)_(\d+?)(\d)([af]?)", arch.strip())
        if found is None:
            continue
        kind, a_major, a_minor, special = found[1], int(found[2]), int(found[3]), found[4]
        if special and (a_major, a_minor) == (major, minor):
            return True
        if not special and kind == "sm" and a_major == major and a_minor <= minor:
            return True
        if not special and kind == "compute" and (a_major, a_minor) <= (major, minor):
            return True
    return False


#: The functions an expression may call: plain ones, and those over every node (given the scope).
FUNCTIONS: dict[str, Callable[..., Any]] = {
    "len": lambda x: len(x),
    "version": version,
    "affected": affected,
    "runs_on": runs_on,
    "missing": missing,
    "unmatched_ifnames": unmatched_ifnames,
    "hca_ports": hca_ports,
    "unmatched_hcas": unmatched_hcas,
    "other_than": other_than,
    "gid_at": gid_at,
    "lower": lambda x: str(x).lower(),
    "startswith": lambda x, prefix: str(x).startswith(str(prefix)),
}
CLUSTER_FUNCTIONS: dict[str, Callable[[Scope, str], Any]] = {
    "distinct": _distinct,
    "total": _total,
    "common": _common,
    "disagree": _disagree,
}
#: Functions that take an unknown value as a value: ``known(x)`` says whether x is known, ``default(x, y)``
#: is x where known, else y (a fact that is often absent, such as an environment variable).
LENIENT = ("known", "default")


@dataclass(frozen=True, slots=True)
class Expression:
    """A parsed condition; ``names`` are the facts it reads (cluster functions' fact names included)."""

    text: str
    tree: ast.expr
    names: frozenset[str]


def compile_expression(text: str, is_fact: Callable[[str], bool]) -> Expression:
    """Parse ``text`` and check that it says only what a condition may say, over names ``is_fact`` knows."""
    try:
        tree = ast.parse(f"(\n{text.strip()}\n)", mode="eval").body  # in brackets: it may span lines
    except SyntaxError as exc:
        raise ExprError(f"not an expression: {exc.msg}") from None
    names: set[str] = set()
    _check(tree, names)
    for name in sorted(names):
        if not is_fact(name):
            raise ExprError(f"unknown fact {name!r}")
    return Expression(text, tree, frozenset(names))


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def _check(node: ast.expr, names: set[str]) -> None:
    if isinstance(node, ast.Name | ast.Attribute):
        name = _dotted(node)
        if name is None or "." not in name:
            raise ExprError(f"{ast.unparse(node)!r} is not a fact name (they read like gpu.count)")
        names.add(name)
    elif isinstance(node, ast.Constant):
        if not isinstance(node.value, str | int | float | bool) and node.value is not None:
            raise ExprError(f"constant {node.value!r} not allowed")
    elif isinstance(node, ast.BoolOp):
        for value in node.values:
            _check(value, names)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not | ast.USub):
        _check(node.operand, names)
    elif isinstance(node, ast.Compare) and all(type(op) in _COMPARE for op in node.ops):
        for part in (node.left, *node.comparators):
            _check(part, names)
    elif isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
        _check(node.left, names)
        _check(node.right, names)
    elif isinstance(node, ast.Tuple | ast.List):
        for item in node.elts:
            _check(item, names)
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        if node.func.id in CLUSTER_FUNCTIONS:
            if (
                len(node.args) != 1
                or not isinstance(node.args[0], ast.Constant)
                or not isinstance(node.args[0].value, str)
            ):
                raise ExprError(f"{node.func.id}() takes one fact name, quoted: {node.func.id}('probe.ray')")
            names.add(node.args[0].value)
        elif node.func.id in FUNCTIONS or node.func.id in LENIENT:
            if node.func.id in LENIENT and len(node.args) != LENIENT.index(node.func.id) + 1:
                raise ExprError(f"{node.func.id}() takes {LENIENT.index(node.func.id) + 1} argument(s)")
            for arg in node.args:
                _check(arg, names)
        else:
            known = ", ".join(sorted([*FUNCTIONS, *CLUSTER_FUNCTIONS, *LENIENT]))
            raise ExprError(f"unknown function {node.func.id!r} (one of {known})")
    else:
        raise ExprError(f"{ast.unparse(node)!r}: not allowed in a condition")


def evaluate(expression: Expression, scope: Scope) -> tuple[Any, frozenset[str]]:
    """The value of ``expression`` in ``scope`` (True, False, a value, or :data:`UNKNOWN`), and the facts
    that were needed and not known."""
    lacking: set[str] = set()
    value = _eval(expression.tree, scope, lacking)
    return value, frozenset(lacking)


def truth(value: Any) -> bool | _Unknown:
    """A condition's outcome: fires, does not, or cannot say."""
    if isinstance(value, _Unknown):
        return UNKNOWN
    return bool(value)


def _eval(node: ast.expr, scope: Scope, lacking: set[str]) -> Any:
    if isinstance(node, ast.Name | ast.Attribute):
        name = _dotted(node)
        assert name is not None
        if name in scope.facts:
            return scope.facts[name]
        lacking.add(name)
        return UNKNOWN
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.BoolOp):
        return _bool(node, scope, lacking)
    if isinstance(node, ast.UnaryOp):
        value = _eval(node.operand, scope, lacking)
        if value is UNKNOWN:
            return UNKNOWN
        return (not value) if isinstance(node.op, ast.Not) else -value
    if isinstance(node, ast.Compare):
        return _compare(node, scope, lacking)
    if isinstance(node, ast.BinOp):
        left, right = _eval(node.left, scope, lacking), _eval(node.right, scope, lacking)
        if UNKNOWN in (left, right):
            return UNKNOWN
        return _safely(_ARITHMETIC[type(node.op)], left, right)
    if isinstance(node, ast.Tuple | ast.List):
        items = [_eval(item, scope, lacking) for item in node.elts]
        return UNKNOWN if UNKNOWN in items else tuple(items)
    if isinstance(node, ast.Call):
        assert isinstance(node.func, ast.Name)
        if node.func.id in CLUSTER_FUNCTIONS:
            assert isinstance(node.args[0], ast.Constant)
            name = str(node.args[0].value)
            value = CLUSTER_FUNCTIONS[node.func.id](scope, name)
            if value is UNKNOWN:
                lacking.add(name)
            return value
        if node.func.id in LENIENT:
            value = _eval(node.args[0], scope, set())
            if node.func.id == "known":
                return value is not UNKNOWN
            return _eval(node.args[1], scope, lacking) if value is UNKNOWN else value
        args = [_eval(arg, scope, lacking) for arg in node.args]
        if UNKNOWN in args:
            return UNKNOWN
        result = _safely(FUNCTIONS[node.func.id], *args)
        if result is UNKNOWN:
            lacking.update(_names_in(node))
        return result
    raise ExprError(f"{ast.unparse(node)!r}: not allowed in a condition")


def _names_in(node: ast.expr) -> set[str]:
    found: set[str] = set()
    for part in ast.walk(node):
        if isinstance(part, ast.Attribute) and (name := _dotted(part)) is not None and "." in name:
            found.add(name)
    return {n for n in found if not any(other != n and other.startswith(n + ".") for other in found)}


def _bool(node: ast.BoolOp, scope: Scope, lacking: set[str]) -> Any:
    """``and`` / ``or`` in three values: decided by any side that decides it, unknown otherwise. The facts
    missed on a side that did not matter are not counted as lacking."""
    deciding = isinstance(node.op, ast.Or)  # True decides an or, False an and
    undecided = False
    missed: set[str] = set()
    for part in node.values:
        here: set[str] = set()
        value = _eval(part, scope, here)
        if value is UNKNOWN:
            undecided = True
            missed |= here
        elif bool(value) is deciding:
            return deciding
        else:
            missed |= here
    if undecided:
        lacking |= missed
        return UNKNOWN
    lacking |= missed
    return not deciding


def _compare(node: ast.Compare, scope: Scope, lacking: set[str]) -> Any:
    left = _eval(node.left, scope, lacking)
    for op, right_node in zip(node.ops, node.comparators, strict=True):
        right = _eval(right_node, scope, lacking)
        if UNKNOWN in (left, right):
            return UNKNOWN
        holds = _safely(_COMPARE[type(op)], left, right)
        if holds is UNKNOWN:
            return UNKNOWN
        if not holds:
            return False
        left = right
    return True


def _safely(function: Callable[..., Any], *args: Any) -> Any:
    """A comparison or function of values of the wrong kinds (a number and a text) is unknown, not a crash:
    a fact file cannot know every version's spelling."""
    try:
        return function(*args)
    except (TypeError, ValueError, ZeroDivisionError):
        return UNKNOWN
