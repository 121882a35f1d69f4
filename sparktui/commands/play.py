"""``sparktui play``: list the remediation playbooks, or show one's exact commands per node and run them after
asking, through the same flow as the cockpit (:mod:`sparktui.core.remedy.plan`)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.text import Text

from sparktui.commands.common import UsageError, catalogue, out
from sparktui.core import cluster as clusterfile
from sparktui.core.address import ssh_address
from sparktui.core.errors import Refused
from sparktui.core.kinds import fits
from sparktui.core.pipeline import diagnose_files
from sparktui.core.remedy import playbook as pb
from sparktui.core.remedy.render import Rendered
from sparktui.core.remote.command import Command
from sparktui.core.sources import bundle
from sparktui.core.sources.open import file_sources
from sparktui.core.text import display, display_text
from sparktui.richtext import translation_text

if TYPE_CHECKING:
    from sparktui.core.remedy.plan import Plan

NAME = "play"


def add(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(NAME, help="show a remediation playbook's exact commands, then run them")
    p.add_argument("playbook", metavar="ID", nargs="?", help="playbook id (leave out to list them)")
    p.add_argument("--node", action="append", default=[], metavar="NAME", help="nodes, head first (repeatable)")
    p.add_argument("--set", action="append", default=[], metavar="PARAM=VALUE", help="a parameter value")
    p.add_argument(
        "--from",
        dest="logs",
        action="append",
        default=[],
        metavar="SOURCE",
        help="take parameter values from the facts of the finding this playbook fixes in these logs",
    )
    p.add_argument("--dry-run", action="store_true", help="print the exact commands per node and run nothing")
    p.add_argument("--yes", action="store_true", help="do not ask before running (nor before a rollback)")
    p.add_argument("--readonly", action="store_true", help="refuse anything but read-only playbooks")
    p.add_argument(
        "--incident",
        metavar="DIR",
        help="also record what ran in this incident folder (a bundle or a live session's spool), for its report",
    )
    p.add_argument("--playbooks", action="append", default=[], metavar="DIR", help="also load playbooks from DIR")
    p.set_defaults(run=main)


def main(args: argparse.Namespace) -> int:
    shown = out()
    playbooks = pb.load_all([Path(d) for d in args.playbooks])
    if args.playbook is None:
        _list(playbooks, shown)
        return 0
    book = playbooks.get(args.playbook)
    if book is None:
        raise UsageError(f"no playbook {args.playbook!r} (see `sparktui play`)")
    if refusal := book.refused(args.readonly):  # before any value is asked for, read or looked for
        raise UsageError(refusal)
    from sparktui.core.remedy.plan import Plan, ProbeError, placed  # asyncssh: only for a playbook

    given = _given(book, args.set)
    facts, finding_nodes = _finding(book, args.logs)
    found = clusterfile.find()
    cluster = clusterfile.load(found) if found is not None else None
    if args.incident and not bundle.is_bundle(Path(args.incident)):
        raise UsageError(f"--incident {args.incident}: not an incident folder (no bundle.toml)")
    nodes, whence = placed(cluster, [_node(n) for n in args.node], finding_nodes)
    plan = Plan(book, nodes, cluster, facts, finding_nodes, given, chosen=bool(args.node))
    if unplaced := plan.unplaced():  # before anything is read on nodes it may not be meant for
        raise UsageError(unplaced)
    shown.print(Text(f"runs on {whence}", style="dim"))
    for name, translation in plan.translations():
        if isinstance(translation, str):
            shown.print(Text(f"cannot translate the SGLang launch: {display(translation)}", style="yellow"))
        else:
            shown.print(Text(f"{name}: translated from the SGLang launch", style="dim"))
            shown.print(translation_text(translation))
    if plan.needs_probe:
        shown.print(Text("reading the nodes first (docker inspect, read-only)", style="dim"))
        try:
            asyncio.run(plan.probe())
        except ProbeError as exc:
            if not args.dry_run:
                raise UsageError(str(exc)) from None
            shown.print(Text(f"cannot read the nodes: {exc}", style="yellow"))
        for note in plan.notes:
            shown.print(Text(f"note: {note}", style="yellow"))
    missing = plan.missing()
    if missing and not args.dry_run:
        raise UsageError(f"{book.id}: no value for {_needed(missing)}; give them with {_sets(missing)}")
    rendered = plan.render(preview=args.dry_run)
    _show(book, rendered, shown)
    if args.dry_run:
        unread = [p for p in book.params if p.probe and plan.probed is None and p.name not in plan.values()]
        if missing or unread:
            names = ", ".join(f"<{p.name}>" for p in (*missing, *unread))
            shown.print(Text(f"shown with {names} where values are still needed", style="yellow"))
        if missing:
            shown.print(Text(f"to run it, give {_sets(missing)}", style="yellow"))
        return 0
    from sparktui.core.remedy.approvals import Approvals

    approvals = Approvals.default()
    if args.yes:
        pass
    elif plan.approved(approvals):
        shown.print(Text(f"approved before for this cluster ({approvals.path}): running", style="yellow"))
    else:
        if not sys.stdin.isatty():
            raise UsageError("not asking without a terminal: add --yes to run, or --dry-run to only show")
        answer = input(f"Run these {len(rendered.commands)} commands ({book.risk})? [y/N/a=always on this cluster] ")
        if answer.strip().lower() in ("a", "always"):
            plan.approve(approvals)
        elif answer.strip().lower() not in ("y", "yes"):
            shown.print(Text("nothing ran", style="yellow"))
            return 1
    return _run(plan, rendered, args, shown)


def _list(playbooks: dict[str, pb.Playbook], shown: Console) -> None:
    width = max(len(book_id) for book_id in playbooks)
    for listed in sorted(playbooks.values(), key=lambda b: b.id):
        shown.print(
            Text.assemble(
                (f"{listed.key}  ", "bold cyan"),
                f"{listed.id:<{width}}  ",
                (f"{listed.risk:<13}", "yellow"),
                (listed.title, "dim"),
            )
        )


def _given(book: pb.Playbook, sets: list[str]) -> dict[str, str]:
    given = {}
    for item in sets:
        name, sep, value = item.partition("=")
        if not sep:
            raise UsageError(f"--set {item!r}: write PARAM=VALUE")
        if name not in {p.name for p in book.params}:
            known = ", ".join(p.name for p in book.params) or "none"
            raise UsageError(f"--set {name}: {book.id} has no such parameter (its parameters: {known})")
        given[name] = value
    return given


def _finding(book: pb.Playbook, logs: list[str]) -> tuple[dict[str, str], tuple[str, ...]]:
    """The facts and nodes of the first finding in ``logs`` that this playbook fixes."""
    if not logs:
        return {}, ()
    sources, problems = file_sources(logs)
    if not sources:
        raise UsageError(problems[0] if problems else "no logs found")
    for finding in diagnose_files(sources, catalogue([])).findings:
        if book.id in finding.remediations:
            return finding.facts, finding.nodes
    return {}, ()


def _needed(missing: tuple[pb.Param, ...]) -> str:
    return ", ".join(f"{p.name} ({p.description or p.kind})" for p in missing)


def _sets(missing: tuple[pb.Param, ...]) -> str:
    return " ".join(f"--set {p.name}=VALUE" for p in missing)


def _show(book: pb.Playbook, rendered: Rendered, shown: Console) -> None:
    shown.print(Text.assemble((book.title, "bold"), "  ", (f"[{book.risk}]", "yellow")))
    for name, value in rendered.shown.items():
        shown.print(Text(f"  {name} = {value}", style="dim"))
    _commands(rendered.commands, shown)
    shown.print(Text.assemble(("verify: ", "bold"), rendered.check.describe()))
    if rendered.rollback:
        shown.print(Text("rollback (when a step or the verification fails):", style="bold"))
        _commands(rendered.rollback, shown)


def _commands(commands: tuple[Command, ...], shown: Console) -> None:
    for command in commands:
        # What is shown is what runs, every character of it seen (display_text): the kinds of value refuse what
        # a terminal would hide, and a command that held it anyway would show it escaped, never drawn.
        shown.print(
            Text.assemble((f"{display(command.node):>12} ", "cyan"), ("$ ", "dim"), display_text(command.command))
        )


def _run(plan: Plan, rendered: Rendered, args: argparse.Namespace, shown: Console) -> int:
    from sparktui.core.remedy import actions
    from sparktui.core.remedy.plan import audit_log, final

    audit = audit_log([Path(args.incident)] if args.incident else [])

    def output(node: str, line: str) -> None:
        shown.print(Text.assemble((f"{node:>12} ", "cyan"), display(line)))

    async def ask(outcome: actions.Outcome) -> bool:
        shown.print(Text(outcome.failure, style="bold red"))
        if args.yes:
            return True
        question = f"Run the rollback ({len(rendered.rollback)} commands)? [Y/n] "
        answer = await asyncio.to_thread(input, question) if sys.stdin.isatty() else "y"
        return answer.strip().lower() in ("", "y", "yes")

    running = plan.execute(rendered, readonly=args.readonly, audit=audit, output=output, offer_rollback=ask)
    try:
        outcome = asyncio.run(running)
    except (actions.ActionError, Refused) as exc:
        raise UsageError(str(exc)) from None
    for entry in outcome.entries + outcome.rolled_back:
        style = "green" if entry.exit_code == 0 else "red"
        shown.print(Text.assemble((f"{entry.node:>12} ", "cyan"), (f"{entry.outcome:<15}", style), entry.step))
    where = ", ".join(str(p) for p in audit.paths)
    shown.print(Text(f"{final(rendered, outcome)} (audit log: {where})", style="green" if outcome.ok else "bold red"))
    return 0 if outcome.ok else 1


def _node(given: str) -> str:
    """A ``--node``: a node's name (the cluster file's, an ssh alias) or ``[user@]host[:port]``; anything else
    (``a;b``) is refused in one line before it names a target."""
    try:
        host = ssh_address(given).host
    except ValueError as exc:
        raise UsageError(f"--node {display(given)}: {exc}") from None
    if not (fits("name", given) or fits("host", host)):
        raise UsageError(f"--node {display(given)}: not a node name or [user@]host[:port]")
    return given
