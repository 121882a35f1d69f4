"""The judgement's rules, each with an id: which findings another explains away (E), the order that puts the
root cause first (O), and what the first one tells of the others (T). Every finding leaves with its
:class:`~sparktui.core.events.Because` records: the rules that kept and placed it, and the findings they name.

Explain-away. A failure line that no signature names becomes a finding of the fallback signature, filed by its
words under a family (a port in use, out of memory, ...). E1: where another signature names an error of the
same category on one of its nodes, that finding says it better, and the fallback's is left out; one that no
family could sort is left out where any other error is named on one of its nodes. An error that only says a
rank waited for a peer or lost it (``waits_for_peers``) explains neither. E2: an exception that Python chained
to another below it is explained by a named error found after it on its nodes: the chain ends in that one.
E3: a process's exit status (a positive one only reports the error the process printed before it, and -15 a
stop asked for, as torchrun stops the other ranks once one failed) is explained by any error found on its
nodes before it, named or not, a wait for peers included.

Order. O1: problems before context (info). O2: a finding below what caused it: a cause its signature declares
(``consequence_of``) that is at least an error or at least as severe, or, for a finding that
``waits_for_peers``, any other error found no later that does not declare itself a consequence of it. O3: more
severe first. O4: at one severity, what a signature names before what a family of the fallback files by its
words, before what nothing files. O5: earlier first by the logs' clocks, where both say a time and their nodes'
clocks agree (:mod:`~sparktui.core.analysis.clocks`). O6: then by source and line. O7: then wider (more
nodes), then more often.

File. F1: a failure no signature names is filed by where it came from (the frame that raised it, the logger's
file, its exception's class: :mod:`~sparktui.core.analysis.provenance`), else by its words; the record says
which step filed it.

Tell. T1: the first finding, an error, names the nodes whose ranks then waited for it. T2: a first finding that
is itself a wait names the job's nodes that did not wait (or, for a lost peer, lost no one): the nodes its logs
show, or, in a live session, those the watch saw run the job's ranks (a rank killed without a word has no line).

Live. L1: a hang that a live session read from every rank's stack (:mod:`sparktui.core.liveness`) comes before
what the logs say: the ranks stopped where it says, and whatever the logs print after it follows from it. L2:
unless its ranks run on no node the logs' findings name (nor under a store address they name) while the logs
have a warning or worse of their own: then it is another job's, this machine's beside the logs of another, and
comes after them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

import regex

from sparktui.core.analysis.clocks import Clocks
from sparktui.core.analysis.unrecognised import chained, exit_status, told
from sparktui.core.catalogue import Catalogue, Signature
from sparktui.core.events import Because, Finding, Severity
from sparktui.core.words import join


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    name: str


#: The rules, by id, with their short names (the module's docstring says each in full).
RULES = {
    r.id: r
    for r in (
        Rule("E1", "same place and category"),
        Rule("E2", "chained cause"),
        Rule("E3", "exit after error"),
        Rule("O1", "info last"),
        Rule("O2", "cause depth"),
        Rule("O3", "severity"),
        Rule("O4", "tier"),
        Rule("O5", "clock"),
        Rule("O6", "source and line"),
        Rule("O7", "breadth"),
        Rule("T1", "who waited"),
        Rule("T2", "who did not wait"),
        Rule("L1", "a live hang first"),
        Rule("L2", "another job's live hang after the logs"),
        Rule("F1", "filed by where it came from, else by its words"),
    )
}
#: The order rules, by the place of what each decides in the ranking key (O6 and O7 decide two places each).
_KEY_RULES = ("O1", "O2", "O3", "O4", "O5", "O6", "O6", "O7", "O7")
#: How each tier (O4) is said.
_TIERS = ("named by a signature", "filed by a family of the fallback by its words", "filed by nothing")


def _because(f: Finding, *said: Because) -> Finding:
    return replace(f, because=(*f.because, *said))


def _places(f: Finding) -> tuple[str, ...]:
    """Where ``f`` was seen: its nodes, else (a log whose first lines read as notes names no node) the source
    it was first seen in, which no node name can be mistaken for."""
    return tuple(f.nodes) if f.nodes else (f"\x00{f.first_seen.source}",)


def _meet(a: Finding, b: Finding) -> bool:
    """Whether ``a`` and ``b`` were seen in one place (a node, or a log that names none)."""
    return bool(set(_places(a)) & set(_places(b)))


def explain_away(findings: Sequence[Finding], signatures: Mapping[str, Signature], clocks: Clocks) -> list[Finding]:
    """``findings`` without the fallback findings that another finding explains (E1-E3), the others told
    (:func:`~sparktui.core.analysis.unrecognised.told`); a finding that explains others says so."""

    def fallback(f: Finding) -> Signature | None:
        sig = signatures.get(f.signature)
        return sig if sig is not None and (sig.fallback or sig.family_of) else None

    # (a rank that only waited for a peer, or lost it, explains nothing of what the peer did)
    named = [f for f in findings if fallback(f) is None and f.severity >= Severity.ERROR and not f.waits_for_peers]
    # (what a process printed before it exited, named or not, is what its exit status reports)
    fallbacks = [s for s in signatures.values() if s.fallback]
    reports = fallbacks[0].exit_reports if fallbacks else ()  # the exit statuses that only report
    errors = [f for f in findings if f.severity >= Severity.ERROR and not exit_status(f, reports)]
    explained: dict[int, list[tuple[str, Finding]]] = {}  # by the finding that explains: rule, what it explains
    kept: list[tuple[Finding, Finding]] = []  # (as found, as kept): what explains is known as it was found
    for f in findings:
        sig = fallback(f)
        if sig is None:
            kept.append((f, f))
            continue
        places = set(_places(f))
        said = next((e for e in named if (sig.fallback or e.category == f.category) and places & set(_places(e))), None)
        chain = next((e for e in named if clocks.after(e, f) and _meet(e, f)), None) if chained(f, sig.chain) else None
        reported = (
            next((e for e in errors if clocks.after(f, e) and _meet(e, f)), None) if exit_status(f, reports) else None
        )
        for rule, by in (("E1", said), ("E2", chain), ("E3", reported)):
            if by is not None:
                explained.setdefault(id(by), []).append((rule, f))
                break
        else:
            frame = regex.compile(sig.frame) if sig.frame else None
            kept.append((f, _because(told(f, frame), Because("F1", f.filed)) if f.filed else told(f, frame)))
    return [_explains(f, explained.get(id(found), [])) for found, f in kept]


#: How each explain-away rule says what the finding that explains did.
_EXPLAINS = {
    "E1": "says better what {n} on its nodes said",
    "E2": "ends the chain of exceptions that {n} began",
    "E3": "is what {n} reported",
}


def _explains(f: Finding, what: list[tuple[str, Finding]]) -> Finding:
    if not what:
        return f
    said = []
    for rule, text in _EXPLAINS.items():
        them = [g for r, g in what if r == rule]
        if them:
            n = f"{len(them)} unnamed failure{'s' if len(them) > 1 else ''}" if rule != "E3" else _exits(them)
            names = tuple(dict.fromkeys(g.signature for g in them))
            said.append(Because(rule, text.format(n=n), names))
    return _because(f, *said)


def _exits(them: list[Finding]) -> str:
    codes = sorted({g.facts.get("exit", "") for g in them})
    return f"the exit status {', '.join(codes)}" if len(codes) == 1 else f"the exit statuses {', '.join(codes)}"


def order(
    findings: list[Finding], catalogue: Catalogue, source_order: Mapping[str, int], clocks: Clocks
) -> list[Finding]:
    """``findings`` in the order O1-O7, the most likely root cause first, each with the rules that placed it:
    O2's causes and consequences where it has any, and the rule that put it below the one above it (the
    first: above the one below it)."""
    consequence_of = {sig.id: set(sig.consequence_of) for sig in catalogue.signatures}
    tier = {sig.id: 2 if sig.fallback else 1 for sig in catalogue.signatures if sig.fallback or sig.family_of}

    def declared(f: Finding, g: Finding) -> bool:
        # (a failure filed by its words alone is no declared cause of what a signature names)
        wanted = consequence_of.get(f.signature, set())
        return (
            (g.category in wanted or g.signature in wanted)
            and g.signature not in tier
            and (g.severity >= Severity.ERROR or g.severity >= f.severity)
        )

    def waited_for(f: Finding, g: Finding) -> bool:
        """A rank that waited (``f``) waited for another error found no later, unless that error is itself
        declared a consequence of what ``f`` says."""
        theirs = consequence_of.get(g.signature, set())
        return (
            f.waits_for_peers
            and not g.waits_for_peers
            and g.severity >= Severity.ERROR
            and not clocks.after(g, f)
            and f.category not in theirs
            and f.signature not in theirs
        )

    causes = {id(f): [g for g in findings if g is not f and (declared(f, g) or waited_for(f, g))] for f in findings}
    depth: dict[int, int] = {}

    def depth_of(f: Finding, path: frozenset[int] = frozenset()) -> int:
        if id(f) in depth:
            return depth[id(f)]
        if id(f) in path:
            return 0
        d = max((1 + depth_of(g, path | {id(f)}) for g in causes[id(f)]), default=0)
        depth[id(f)] = d
        return d

    def key(f: Finding) -> tuple[int, int, int, int, tuple[int, float], int, int, int, int]:
        time = clocks.time(f)
        return (
            1 if f.severity < Severity.WARNING else 0,
            depth_of(f),
            -int(f.severity),
            tier.get(f.signature, 0),
            (0, time) if time is not None else (1, 0.0),
            source_order.get(f.first_seen.source, len(source_order)),
            f.first_seen.line,
            -len(f.nodes),
            -f.count,
        )

    ranked = sorted(findings, key=key)
    keys = [key(f) for f in ranked]
    out = []
    for i, f in enumerate(ranked):
        said = list(_cause_depth(f, i, ranked, causes))
        other = i + 1 if i == 0 else i - 1
        if other < len(ranked):
            rule = next((r for r, a, b in zip(_KEY_RULES, keys[i], keys[other], strict=True) if a != b), "O6")
            if rule != "O2" or not said:
                said.append(_placed(rule, f, i, ranked[other], other, tier, clocks))
        if clocks.off(f):
            said.append(Because("O5", clocks.off(f)))
        out.append(_because(f, *said))
    return out


def _cause_depth(f: Finding, at: int, ranked: list[Finding], causes: Mapping[int, list[Finding]]) -> list[Because]:
    """O2 as it bears on ``f``: what it was put below, and what was put below it (by their places)."""
    place = {id(g): i for i, g in enumerate(ranked, 1)}
    said = []
    mine = sorted(causes[id(f)], key=lambda g: place[id(g)])
    if mine:
        how = "waited for" if f.waits_for_peers else "declares itself a consequence of"
        said.append(Because("O2", f"below what it {how} ({_places_of(mine, place)})", _names(mine)))
    theirs = [g for g in ranked if any(c is f for c in causes[id(g)])]
    if theirs:
        n = len(theirs)
        text = f"{n} finding{'s' if n > 1 else ''} below point{'' if n > 1 else 's'} to it as"
        said.append(
            Because("O2", f"{text} {'their' if n > 1 else 'its'} cause ({_places_of(theirs, place)})", _names(theirs))
        )
    if at == 0 and not mine:
        said.insert(0, Because("O2", "no cause of it found above it"))
    return said


def _places_of(them: list[Finding], place: Mapping[int, int]) -> str:
    """Findings by their places in the ranking: ``#2, #5``."""
    return ", ".join(f"#{place[id(g)]}" for g in them)


def _names(them: list[Finding]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(g.signature for g in them))


def _placed(rule: str, f: Finding, at: int, g: Finding, other: int, tier: Mapping[str, int], clocks: Clocks) -> Because:
    """Why ``f`` (at ``at``) is above or below its neighbour ``g`` (at ``other``), by ``rule``."""
    above = at < other
    them = f"#{other + 1}"
    names = (g.signature,)
    if rule == "O1":
        text = "a problem, above the context (info) below it" if above else "info: context, below every problem"
    elif rule == "O2":
        text = "a cause, above what it caused" if above else f"deeper in a chain of causes than {them}"
    elif rule == "O3":
        text = f"{f.severity.label}, {'more' if above else 'less'} severe than {them} ({g.severity.label})"
    elif rule == "O4":
        mine, theirs = _TIERS[tier.get(f.signature, 0)], _TIERS[tier.get(g.signature, 0)]
        text = f"{mine}, {'above' if above else 'below'} {them} ({theirs}) at one severity"
    elif rule == "O5":
        text = _clocked(f, g, them, above, clocks)
    elif rule == "O6":
        text = f"first seen at {f.first_seen.source}:{f.first_seen.line}, {'before' if above else 'after'} {them}"
    else:
        text = f"on {len(f.nodes)} node{'s' if len(f.nodes) != 1 else ''}, {f.count} time{'s' if f.count != 1 else ''}"
        text += f": {'wider or more often than' if above else 'no wider nor more often than'} {them}"
    return Because(rule, text, names)


def _clocked(f: Finding, g: Finding, them: str, above: bool, clocks: Clocks) -> str:
    mine, theirs = clocks.time(f), clocks.time(g)
    if mine is not None and theirs is not None:
        return f"{abs(theirs - mine):.0f} s {'before' if above else 'after'} {them} by the logs' clocks"
    if mine is None:
        return f"says no time its nodes' clocks agree on: after {them}, which does"
    return f"earlier by the logs' clocks than {them}, which says no time"


def tell(ranked: list[Finding], nodes: Sequence[str], clocks: Clocks) -> list[Finding]:
    """T1 and T2 on the first finding: which nodes then waited for it ("the ranks on node-a and node-b then
    timed out or lost their peer (4 findings below), 29 s later"); where it is itself a wait, the job's nodes
    (``nodes``) that did not wait: the others waited for them."""
    if not ranked or ranked[0].severity < Severity.ERROR:
        return ranked
    root = ranked[0]
    if root.waits_for_peers:
        return _untold(ranked, nodes)
    waiting = [f for f in ranked[1:] if f.waits_for_peers and not clocks.after(root, f)]
    who = list(dict.fromkeys(n for f in waiting for n in f.nodes if n not in root.nodes))
    if not who:
        return ranked
    note = (
        f"the ranks on {join(who)} then waited for it and timed out or lost their peer "
        f"({len(waiting)} finding{'s' if len(waiting) > 1 else ''} below"
    )
    start = clocks.time(root)
    times = [t for f in waiting if (t := clocks.time(f)) is not None]
    if start is not None and times:
        note += f", {min(times) - start:.0f} s later"
    note += "): consequences of this one"
    said = Because("T1", note, _names(waiting))
    return [_because(root, said), *ranked[1:]]


def _untold(ranked: list[Finding], nodes: Sequence[str]) -> list[Finding]:
    """T2 on ``ranked``'s first finding, a wait for peers: ``nodes`` of the job that did not report it."""
    root = ranked[0]
    quiet = [n for n in nodes if n not in root.nodes]
    if not quiet or len(quiet) == len(nodes):
        return ranked
    return [_because(root, Because("T2", _not_waiting(quiet, root.lost_peer))), *ranked[1:]]


def tell_jobs(ranked: list[Finding], jobs: Iterable[Sequence[str]]) -> list[Finding]:
    """T2 from the ranks a live watch saw running (``jobs``: each job's nodes): a first finding that is a wait
    for peers, not yet told, seen on some nodes of a job whose other nodes said nothing of it. A rank killed
    without a word leaves no line for the logs' own T2 to count it by."""
    if not ranked or ranked[0].severity < Severity.ERROR or not ranked[0].waits_for_peers:
        return ranked
    if any(b.rule == "T2" for b in ranked[0].because):
        return ranked
    for nodes in jobs:
        if any(n in ranked[0].nodes for n in nodes):
            told = _untold(ranked, nodes)
            if told is not ranked:
                return told
    return ranked


def _not_waiting(quiet: list[str], lost_peer: bool) -> str:
    one = len(quiet) == 1
    if lost_peer:
        return (
            f"{join(quiet)} reported no such loss: the others lost {'it' if one else 'them'} (a process that died "
            "or a link that went down; a log that ends with no error of its own points to a kill: the kernel's "
            "OOM killer, a stopped container, a lost node)"
        )
    it, are = ("it", "is") if one else ("they", "are")
    return (
        f"{join(quiet)} reported no such wait: the others waited for {'it' if one else 'them'} "
        f"({it} never called this collective, or {are} stuck before it)"
    )


def live_apart(live: Finding, logged: Sequence[Finding]) -> Finding:
    """``live``, a hang of ranks on no node of ``logged``, with the L2 record that puts it after them."""
    nodes = ", ".join(live.nodes) or "no node named"
    said = f"after the logs' findings: its ranks run on {nodes}, which none of them names; another job's"
    return _because(live, Because("L2", said, tuple(dict.fromkeys(f.signature for f in logged[:3]))))


def live_first(live: Finding, logged: Sequence[Finding]) -> Finding:
    """``live``, a hang read from the ranks' stacks, with the L1 record that puts it before ``logged``."""
    said = "first: read from every rank's stack while it was hung, before anything the logs say"
    if logged:
        said += f" ({len(logged)} finding{'s' if len(logged) > 1 else ''} from the logs below it)"
    return _because(live, Because("L1", said, tuple(dict.fromkeys(f.signature for f in logged[:3]))))
