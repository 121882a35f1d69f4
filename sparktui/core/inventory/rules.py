"""Pre-launch checks as data: ``diagnostics/checks/*.toml``, each a condition over facts with the finding it
raises, loaded and validated like the signature catalogue, and checked against its own examples (facts in,
fires or not) by ``sparktui catalogue test``.

::

    id = "launch-world-size-exceeds-node-gpus"   # the file name without .toml
    category = "missing_ray_backend"             # a category of diagnostics/taxonomy.md
    verdict = "block"                            # block (will fail), slow (will work badly), advice
    scope = "node"                               # node (each node's facts) or cluster (all nodes at once)
    title = "..."
    when = "launch.gpus_per_node > gpu.count and launch.executor != 'ray'"
    detail = "{node.name} has {gpu.count} GPU(s); the launch needs {launch.gpus_per_node}"
    playbooks = ["vllm-add-ray-backend"]
    [explain]
    what = "..."
    why = "..."
    fix = "..."
    [[examples]]
    facts = { "launch.gpus_per_node" = 2, "gpu.count" = 1, "launch.executor" = "" }
    fires = true                                 # true, false, or "unknown" (a fact it needs is missing)

A cluster check's examples give ``nodes = { spark-a = {...}, spark-b = {...} }`` instead of ``facts``; its
``detail`` may say ``{by_node:probe.ray}`` (each node with its value). A check that reads ``launch.*``
facts runs only when a launch command was given.

An advisory (``diagnostics/advisories/*.toml``) is a known-bad release, read by the catalogue's loader
(:func:`sparktui.core.catalogue.load_advisory`, which also gives it to the runtime findings whose symptom it
is: see :mod:`sparktui.core.analysis.advisories`) and checked here as a :class:`Rule` whose condition is the
component's version fact (:data:`VERSION_FACTS`) in one of the ``affected`` ranges, and its ``condition``::

    id = "nccl-2-30-nvls-hang-without-nvlink"
    component = "nccl"                           # nccl torch vllm sglang ray driver kernel systemd
    affected = ">= 2.30.4, <= 2.30.7"            # ranges, ';' between them (catalogue.version_ranges)
    fixed = "2.30.3 and 2.29.7 do not hang"
    condition = "gpu.compute_capability == '12.1'"   # optional, over facts
    applies = "on GB10 GPUs (no NVLink)"         # the condition in words (with a condition only)
    verdict = "slow"
    category = "nccl_multinode_hang"
    title = "..."
    symptom = "..."                              # what goes wrong, with the line it prints where known
    fix = "..."
    source = "https://github.com/NVIDIA/nccl/issues/2167"
    date = "2026-05-10"
    signatures = ["nccl-communicator-init-stalled"]   # runtime findings whose symptom this is
    [[examples]]
    facts = { "probe.nccl" = "2.30.4", "gpu.names" = ["NVIDIA GB10"] }
    fires = true
    [[examples]]
    seen = "2.30.5+cuda13.0"                     # a version printed in a log: within the ranges or not
    fires = true
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from sparktui.core import catalogue, tomlfile
from sparktui.core.catalogue import Advisory, CatalogueError, load_advisory
from sparktui.core.events import Severity
from sparktui.core.inventory.expr import UNKNOWN, ExprError, Expression, Scope, compile_expression, evaluate, truth
from sparktui.core.inventory.facts import Value
from sparktui.core.inventory.names import known
from sparktui.core.kinds import ID
from sparktui.core.taxonomy import CATEGORIES
from sparktui.core.tomlfile import Table

VERDICTS = ("block", "slow", "advice")
SEVERITY = {"block": Severity.ERROR, "slow": Severity.WARNING, "advice": Severity.INFO}
SCOPES = ("node", "cluster")
_FIELD = re.compile(r"\{(by_node:)?([^{}]+)\}")
#: The fact that holds each advisory component's version on a node (see catalogue.COMPONENTS).
VERSION_FACTS: dict[str, str] = {
    "nccl": "probe.nccl",
    "torch": "probe.torch",
    "vllm": "probe.vllm",
    "sglang": "probe.sglang",
    "ray": "probe.ray",
    "driver": "gpu.driver",
    "kernel": "node.kernel",
    "systemd": "host.systemd",
}


@dataclass(frozen=True, slots=True)
class Example:
    """Facts in (one node's, or every node's for a cluster check) and what the check must say."""

    facts: Mapping[str, Value]
    nodes: Mapping[str, Mapping[str, Value]]
    fires: bool | None  # None: it must say it cannot decide
    seen: str = ""  # an advisory's: a version printed in a log, within its ranges (fires) or not


@dataclass(frozen=True, slots=True)
class Rule:
    """A pre-launch check (a ``diagnostics/checks/*.toml`` file, or an advisory read as one): its condition over
    facts, the finding it raises and the examples it is checked against."""

    id: str
    path: Path
    category: str
    verdict: str
    scope: str
    title: str
    when: Expression
    detail: str
    what: str
    why: str
    fix: str
    playbooks: tuple[str, ...]
    references: tuple[str, ...]
    examples: tuple[Example, ...]
    advisory: Advisory | None = None

    @property
    def severity(self) -> Severity:
        return SEVERITY[self.verdict]

    @property
    def explanation(self) -> str:
        return " ".join(part for part in (self.what, self.why, self.fix) if part)

    @property
    def needs_launch(self) -> bool:
        return any(name.startswith("launch.") for name in self.when.names)


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one check said for one node (``node``) or for the cluster (``node`` ""): it fired (``fired``
    True), it did not (False), or it could not decide (None, with the facts it lacked)."""

    rule: Rule
    node: str
    fired: bool | None
    detail: str = ""
    lacking: tuple[tuple[str, str], ...] = ()  # (fact, why it was of no use)


def builtin_dir() -> Path:
    return catalogue.builtin_dir() / "checks"


def advisories_dir() -> Path:
    return catalogue.builtin_dir() / "advisories"


def builtin_dirs() -> tuple[Path, Path]:
    """The shipped checks and advisories."""
    return builtin_dir(), advisories_dir()


@cache
def builtin() -> tuple[Rule, ...]:
    return load(builtin_dirs())


def advisories(rules: Iterable[Rule]) -> tuple[Rule, ...]:
    return tuple(rule for rule in rules if rule.advisory is not None)


def load(folders: Iterable[Path]) -> tuple[Rule, ...]:
    """Every check of ``folders``, a later folder's check replacing an earlier one of the same id."""
    found: dict[str, Rule] = {}
    for folder in folders:
        if not folder.is_dir():
            raise CatalogueError(folder, "", "not a directory")
        for path in sorted(folder.glob("*.toml")):
            rule = load_rule(path)
            found[rule.id] = rule
    return tuple(found.values())


def load_rule(path: Path) -> Rule:
    """A check, or an advisory (a file that names a ``component``)."""
    doc = Table(
        tomlfile.read(path, lambda reason: CatalogueError(path, "", reason)),
        lambda key, reason: CatalogueError(path, key, reason),
    )
    if "component" in doc.data:
        return _advisory(path)
    doc.known(("id", "category", "verdict", "scope", "title", "when", "detail", "playbooks", "explain", "examples"))
    rule_id, category = _id_and_category(path, doc)
    scope = doc.choice("scope", SCOPES, default="node")
    try:
        when = compile_expression(doc.text("when"), known)
    except ExprError as exc:
        raise doc.fail("when", str(exc)) from None
    detail = doc.text("detail")
    for by_node, text in _FIELD.findall(detail):
        if by_node and scope != "cluster":
            raise doc.fail("detail", "{by_node:...} is for checks of scope cluster")
        if by_node and not known(text):
            raise doc.fail("detail", f"unknown fact {text!r}")
        try:
            if not by_node:
                _field(text)
        except ExprError as exc:
            raise doc.fail("detail", f"{{{text}}}: {exc}") from None
    explain = doc.table("explain")
    explain.known(("what", "why", "fix", "references"))
    examples = tuple(_example(e, scope) for e in doc.tables("examples"))
    said = {e.fires for e in examples}
    if not {True, False} <= said:
        raise doc.fail("examples", "needs an example that fires and one that does not")
    return Rule(
        id=rule_id,
        path=path,
        category=category,
        verdict=doc.choice("verdict", VERDICTS),
        scope=scope,
        title=doc.text("title"),
        when=when,
        detail=detail,
        what=explain.text("what"),
        why=explain.text("why"),
        fix=explain.text("fix", required=False),
        playbooks=tuple(doc.texts("playbooks", required=False)),
        references=tuple(explain.texts("references", required=False)),
        examples=examples,
    )


def _id_and_category(path: Path, doc: Table) -> tuple[str, str]:
    rule_id = doc.text("id")
    if rule_id != path.stem:
        raise doc.fail("id", f"{rule_id!r} must equal the file name without .toml ({path.stem!r})")
    if not ID.match(rule_id):
        raise doc.fail("id", "use lower-case letters, digits and single dashes")
    category = doc.text("category")
    if category not in CATEGORIES:
        raise doc.fail("category", f"unknown category {category!r} (see diagnostics/taxonomy.md)")
    return rule_id, category


def _advisory(path: Path) -> Rule:
    """An advisory as a check of scope node: it fires where the component's version is affected and the
    condition holds; its detail says which version, what goes wrong, the fix and the source."""
    advisory = load_advisory(path)
    fact = VERSION_FACTS[advisory.component]
    text = f"affected({fact}, {advisory.affected!r})" + (f" and ({advisory.condition})" if advisory.condition else "")
    try:
        when = compile_expression(text, known)
    except ExprError as exc:
        raise CatalogueError(path, "condition", str(exc)) from None
    error = lambda key, reason: CatalogueError(path, key, reason)  # noqa: E731
    examples = tuple(_example(Table(raw, error, f"examples[{i}]."), "node") for i, raw in enumerate(advisory.examples))
    if not {True, False} <= {e.fires for e in examples}:
        raise CatalogueError(path, "examples", "needs an example that fires and one that does not")
    where = f", {advisory.applies}" if advisory.applies else ""
    fixed = f" ({advisory.fixed})" if advisory.fixed else ""
    return Rule(
        id=advisory.id,
        path=path,
        category=advisory.category,
        verdict=advisory.verdict,
        scope="node",
        title=advisory.title,
        when=when,
        detail=f"{advisory.label} {{{fact}}} on {{node.name}}: in the affected range ({advisory.affected}){where}",
        what=f"{advisory.label} {advisory.affected}{where}: {advisory.symptom}",
        why=f"Reported in {advisory.source} ({advisory.date}).",
        fix=f"{advisory.fix}{fixed}",
        playbooks=(),
        references=(advisory.source,),
        examples=examples,
        advisory=advisory,
    )


def _example(table: Table, scope: str) -> Example:
    table.known(("facts", "nodes", "fires", "seen"))
    fires_raw = table.data.get("fires")
    if fires_raw not in (True, False, "unknown"):
        raise table.fail("fires", 'must be true, false or "unknown"')
    fires = None if fires_raw == "unknown" else bool(fires_raw)
    if "seen" in table.data:
        return Example({}, {}, fires, seen=table.text("seen"))
    if scope == "cluster":
        nodes = table.table("nodes")
        by_node = {name: _facts(nodes.table(name)) for name in nodes.data}
        return Example({}, by_node, fires)
    return Example(_facts(table.table("facts")), {}, fires)


def _facts(table: Table) -> dict[str, Value]:
    found: dict[str, Value] = {}
    for name, raw in table.data.items():
        if not known(name):
            raise table.fail(name, "unknown fact")
        if isinstance(raw, list):
            found[name] = tuple(raw)
        elif isinstance(raw, str | int | float | bool):
            found[name] = raw
        else:
            raise table.fail(name, "a fact is text, a number, true/false or an array")
    return found


def run_node(rule: Rule, node: str, facts: Mapping[str, Value], reasons: Mapping[str, str]) -> Outcome:
    """``rule`` (of scope node) over one node's facts."""
    value, lacking = evaluate(rule.when, Scope(facts))
    fired = truth(value)
    if fired is UNKNOWN:
        return Outcome(rule, node, None, lacking=_lacking(lacking, facts, reasons))
    if not fired:
        return Outcome(rule, node, False)
    return Outcome(rule, node, True, render(rule.detail, facts, {}))


def run_cluster(
    rule: Rule, facts: Mapping[str, Value], nodes: Mapping[str, Mapping[str, Value]], reasons: Mapping[str, str]
) -> Outcome:
    """``rule`` (of scope cluster) over every node's facts (``facts``: what all share, the launch's)."""
    value, lacking = evaluate(rule.when, Scope(facts, nodes))
    fired = truth(value)
    if fired is UNKNOWN:
        return Outcome(rule, "", None, lacking=_lacking(lacking, facts, reasons))
    if not fired:
        return Outcome(rule, "", False)
    return Outcome(rule, "", True, render(rule.detail, facts, nodes))


def _lacking(
    names: Iterable[str], facts: Mapping[str, Value], reasons: Mapping[str, str]
) -> tuple[tuple[str, str], ...]:
    """Why each fact a check needed was of no use: not known (and why), or a value it cannot read."""

    def why(name: str) -> str:
        if name in reasons:
            return reasons[name]
        return "not known" if name not in facts else f"{shown(facts[name])}, which it cannot read"

    return tuple((name, why(name)) for name in sorted(names))


@cache
def _field(text: str) -> Expression:
    return compile_expression(text, known)


def render(template: str, facts: Mapping[str, Value], nodes: Mapping[str, Mapping[str, Value]]) -> str:
    """``template`` with each ``{expression}`` (a fact, or e.g. ``{missing(launch.flags, probe.vllm_flags)}``)
    replaced by its value, and each ``{by_node:fact.name}`` by every node's value of that fact (nodes apart by
    "; ", as a value may be a list written with commas)."""

    def field(m: re.Match[str]) -> str:
        if m[1]:
            return "; ".join(f"{node}: {shown(values.get(m[2]))}" for node, values in nodes.items())
        value, _ = evaluate(_field(m[2]), Scope(facts, nodes))
        return shown(None if value is UNKNOWN else value)

    return _FIELD.sub(field, template)


def shown(value: Value) -> str:
    """A fact's value in a sentence."""
    if value is None:
        return "unknown"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, tuple):
        return ", ".join(str(v) for v in value) if value else "none"
    if value == "":
        return "none"
    return str(value)


def check_examples(rule: Rule, playbooks: Iterable[str] | None = None) -> list[str]:
    """Every way ``rule`` disagrees with its examples (one line each, naming the file and the example), and
    each playbook it names that is not one of ``playbooks`` (when given)."""
    problems = []
    for i, ex in enumerate(rule.examples):
        if ex.seen:
            covered = rule.advisory is not None and rule.advisory.covers(ex.seen)
            if covered != ex.fires:
                problems.append(
                    f"{rule.path}: examples[{i}]: {ex.seen} seen in a log is {'' if covered else 'not '}"
                    f"in its ranges, but must {'' if ex.fires else 'not '}be"
                )
            continue
        if rule.scope == "cluster":
            outcome = run_cluster(rule, ex.facts, ex.nodes, {})
        else:
            outcome = run_node(rule, "example", ex.facts, {})
        if outcome.fired != ex.fires:
            said = {True: "fired", False: "did not fire", None: "could not decide"}
            problems.append(f"{rule.path}: examples[{i}]: {said[outcome.fired]}, but must {_must(ex.fires)}")
    if playbooks is not None:
        books = set(playbooks)
        for book in rule.playbooks:
            if book not in books:
                problems.append(f"{rule.path}: playbooks: no playbook {book!r}")
    return problems


def _must(fires: bool | None) -> str:
    return {True: "fire", False: "not fire", None: "say it cannot decide"}[fires]


def as_json(value: Any) -> Any:
    """A fact's value for JSON."""
    return list(value) if isinstance(value, tuple) else value
