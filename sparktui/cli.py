"""The ``sparktui`` command line.

``sparktui [SOURCE...]`` opens the cockpit (a welcome screen when given nothing), ``sparktui demo`` and
``sparktui replay BUNDLE`` replay an incident, ``sparktui diagnose`` prints the analysis headless and
``sparktui catalogue`` lists, shows and tests signatures.

Exit status of ``diagnose``: 0 when no finding reaches ``--fail-on``, 1 when one does, 2 for bad usage
or unreadable input, always with a one-line message on stderr and never a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shlex
import sys
from collections.abc import Sequence
from contextlib import nullcontext
from pathlib import Path

from rich.console import Console
from rich.text import Text

from sparktui import __version__
from sparktui.core import catalogue as cat
from sparktui.core import cluster as config
from sparktui.core.analysis.diagnosis import Diagnosis
from sparktui.core.analysis.examples import check
from sparktui.core.errors import Refused
from sparktui.core.events import Severity, State
from sparktui.core.pipeline import Pipeline, diagnose_files, run
from sparktui.core.remedy import playbook as pb
from sparktui.core.remedy import render as rd
from sparktui.core.report.export import export
from sparktui.core.report.incident import Incident
from sparktui.core.report.markdown import diagnosis_markdown
from sparktui.core.sources import bundle
from sparktui.core.sources.base import LiveSource, SourceGroup
from sparktui.core.sources.bundle import BundleError
from sparktui.core.sources.files import FileRead, SourceError
from sparktui.core.sources.open import Opener, UriError, file_sources
from sparktui.core.sources.spool import Spool, new_incident_dir
from sparktui.core.text import display
from sparktui.richtext import SEVERITY_STYLE, print_text, translation_text

USAGE_ERROR = 2


class UsageError(Exception):
    """Bad arguments or input; the message is printed as one line."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sparktui", description="Diagnose multi-node LLM inference bring-up.")
    parser.add_argument("--version", action="version", version=f"sparktui {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    d = sub.add_parser("diagnose", help="analyse log files and directories, print ranked findings")
    d.add_argument("sources", nargs="+", metavar="SOURCE", help="log file, directory of logs, or .gz file")
    fmt = d.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print the JSON contract (same as --format json)")
    fmt.add_argument("--format", choices=("text", "md", "json"), default="text")
    d.add_argument(
        "--fail-on",
        default="error",
        metavar="SEVERITY",
        help="exit 1 if a finding is at least this severe (info, warning, error, critical; default error)",
    )
    d.add_argument(
        "--signatures",
        action="append",
        default=[],
        metavar="DIR",
        help="also load signature files from DIR (repeatable)",
    )
    d.add_argument("--quiet", action="store_true", help="no progress on stderr")
    d.add_argument("--follow", action="store_true", help="keep reading as the sources grow (live sources)")
    d.add_argument("--for", dest="duration", metavar="DURATION", help="with --follow: stop after e.g. 20s, 5m, 1h")
    d.add_argument("--report", metavar="DIR", help="also export the incident: Markdown, HTML, JSON and a bundle")
    d.add_argument("--no-redact", action="store_true", help="with --report: keep secrets (redacted by default)")
    d.add_argument(
        "--anonymise-hosts",
        action="store_true",
        help="with --report: also replace host names and addresses, consistently",
    )
    d.add_argument("--launch", metavar="COMMAND", default="", help="with --report: the launch command to include")
    d.add_argument(
        "--trust-new-host-key",
        action="store_true",
        help="record SSH host keys seen for the first time (a changed key is still refused)",
    )
    d.add_argument(
        "--no-spool",
        action="store_true",
        help="with --follow: do not keep a copy of the received lines (kept by default, as a bundle)",
    )

    o = sub.add_parser("open", help="open the cockpit on sources (also: sparktui SOURCE...)")
    o.add_argument("sources", nargs="*", metavar="SOURCE")
    o.add_argument(
        "--trust-new-host-key",
        action="store_true",
        help="record SSH host keys seen for the first time (a changed key is still refused)",
    )
    o.add_argument("--signatures", action="append", default=[], metavar="DIR")
    m = sub.add_parser("demo", help="replay a built-in incident captured from real runs")
    m.add_argument("--speed", type=float, default=DEMO_SPEED, help=f"times real time (default {DEMO_SPEED:g})")
    r = sub.add_parser("replay", help="replay an incident bundle as if live")
    r.add_argument("bundle", metavar="BUNDLE")
    r.add_argument("--speed", type=float, default=1.0, help="times real time; 0 for all at once (default 1)")
    r.add_argument("--signatures", action="append", default=[], metavar="DIR")
    for cockpit in (o, m, r):
        cockpit.add_argument("--readonly", action="store_true", help="run only read-only playbooks from the cockpit")

    p = sub.add_parser("play", help="show a remediation playbook's exact commands, then run them")
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

    t = sub.add_parser("translate", help="translate an SGLang launch command into vllm serve")
    t.add_argument(
        "launch",
        nargs=argparse.REMAINDER,
        metavar="WORD",
        help="the SGLang launch (quoted as one, or its words); stdin if none",
    )
    t.add_argument(
        "--native",
        action="store_true",
        help="vLLM's own multi-node flags (--nnodes, --node-rank, --master-addr) instead of a Ray launch on the head",
    )

    v = sub.add_parser("discover", help="look at the nodes over SSH and write the cluster file")
    v.add_argument("targets", nargs="+", metavar="[USER@]HOST[:PORT]")
    v.add_argument("--output", default="sparktui.toml", metavar="FILE", help="where to write (default sparktui.toml)")
    v.add_argument("--force", action="store_true", help="replace an existing file")
    v.add_argument(
        "--trust-new-host-key",
        action="store_true",
        help="record SSH host keys seen for the first time (a changed key is still refused)",
    )

    c = sub.add_parser("catalogue", help="list, show and test signature files")
    csub = c.add_subparsers(dest="action", required=True)
    for name, text in (
        ("list", "list the signatures"),
        ("show", "show one signature"),
        ("test", "check signature files against their own examples"),
    ):
        p = csub.add_parser(name, help=text)
        if name == "show":
            p.add_argument("id")
        if name == "test":
            p.add_argument("paths", nargs="*", metavar="PATH", help="signature files or directories (default: all)")
        p.add_argument(
            "--signatures",
            action="append",
            default=[],
            metavar="DIR",
            help="also load signature files from DIR (repeatable)",
        )
    return parser


COMMANDS = ("diagnose", "open", "demo", "replay", "play", "translate", "discover", "catalogue")
DEMO = "second-communicator"
DEMO_SPEED = 20.0


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or (argv[0] not in COMMANDS and argv[0] not in ("-h", "--help", "--version")):
        argv.insert(0, "open")
    args = build_parser().parse_args(argv)
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    try:
        if args.command == "diagnose":
            return _diagnose(args, err)
        if args.command in ("open", "demo", "replay"):
            return _cockpit(args)
        if args.command == "translate":
            return _translate(args)
        if args.command == "play":
            return _play(args)
        if args.command == "discover":
            return _discover(args, err)
        return _catalogue(args)
    except (
        UsageError,
        cat.CatalogueError,
        FileNotFoundError,
        BundleError,
        pb.PlaybookError,
        config.ConfigError,
    ) as exc:
        err.print(Text(f"sparktui: {exc}", style="red"))
        return USAGE_ERROR
    except KeyboardInterrupt:
        return 130


def _load(extra: Sequence[str]) -> cat.Catalogue:
    return cat.load([Path(d) for d in extra])


def _diagnose(args: argparse.Namespace, err: Console) -> int:
    try:
        fail_on = Severity.parse(args.fail_on)
    except ValueError as exc:
        raise UsageError(f"--fail-on: {exc}") from None
    catalogue = _load(args.signatures)
    if args.duration and not args.follow:
        raise UsageError("--for needs --follow")
    if args.follow:
        diagnosis, spooled = _follow(args, catalogue, err)
        _print_diagnosis(args, diagnosis)
        if args.report:
            loaded = bundle.load(spooled) if spooled is not None and bundle.is_bundle(spooled) else None
            incident = (
                Incident.of_bundle(loaded, diagnosis, command=args.launch)
                if loaded is not None
                else Incident(diagnosis, command=args.launch)
            )
            _report(args, incident, err)
        if diagnosis.sources and all(s.error and not s.lines for s in diagnosis.sources):
            return USAGE_ERROR  # nothing could be read at all
        worst = diagnosis.worst()
        return 1 if worst is not None and worst >= fail_on else 0
    sources, problems = file_sources(args.sources)
    if not sources:
        raise UsageError(problems[0] if problems else "no log files found in " + " ".join(args.sources))
    for problem in problems:
        err.print(Text(f"sparktui: {problem}", style="yellow"))
    files = run(catalogue, [FileRead(s) for s in sources], show=False, refresh=False)
    diagnosis = _analyse(files, args, err, "reading", states=False)
    unreadable = [s for s in diagnosis.sources if s.error and s.lines == 0]
    for s in diagnosis.sources:
        if s.error:
            err.print(Text(f"sparktui: {s.error}", style="yellow"))
    _print_diagnosis(args, diagnosis)
    if args.report:
        single = Path(args.sources[0]) if len(args.sources) == 1 else None
        if single is not None and bundle.is_bundle(single):
            incident = Incident.of_bundle(bundle.load(single), diagnosis, command=args.launch)
        else:
            incident = Incident(
                diagnosis, title="sparktui diagnose " + " ".join(args.sources), logs=tuple(sources), command=args.launch
            )
        _report(args, incident, err)
    if unreadable and len(unreadable) == len(diagnosis.sources):
        return USAGE_ERROR
    worst = diagnosis.worst()
    return 1 if worst is not None and worst >= fail_on else 0


def _play(args: argparse.Namespace) -> int:
    from sparktui.core.remedy import plan as remedy
    from sparktui.core.remedy.approvals import Approvals, cluster_id

    out = Console(highlight=False, soft_wrap=True)
    playbooks = pb.load_all([Path(d) for d in args.playbooks])
    if args.playbook is None:
        width = max(len(book_id) for book_id in playbooks)
        for listed in sorted(playbooks.values(), key=lambda b: b.id):
            out.print(
                Text.assemble(
                    (f"{listed.key}  ", "bold cyan"),
                    f"{listed.id:<{width}}  ",
                    (f"{listed.risk:<13}", "yellow"),
                    (listed.title, "dim"),
                )
            )
        return 0
    book = playbooks.get(args.playbook)
    if book is None:
        raise UsageError(f"no playbook {args.playbook!r} (see `sparktui play`)")
    given = {}
    for item in args.set:
        name, sep, value = item.partition("=")
        if not sep:
            raise UsageError(f"--set {item!r}: write PARAM=VALUE")
        if name not in {p.name for p in book.params}:
            known = ", ".join(p.name for p in book.params) or "none"
            raise UsageError(f"--set {name}: {book.id} has no such parameter (its parameters: {known})")
        given[name] = value
    facts: dict[str, str] = {}
    finding_nodes: Sequence[str] = ()
    if args.logs:
        sources, problems = file_sources(args.logs)
        if not sources:
            raise UsageError(problems[0] if problems else "no logs found")
        for finding in diagnose_files(sources, _load([])).findings:
            if book.id in finding.remediations:
                facts, finding_nodes = finding.facts, finding.nodes
                break
    found = config.find()
    cluster = config.load(found) if found is not None else None
    if args.node:
        nodes = rd.Nodes(args.node[0], tuple(args.node[1:]))
    elif cluster is not None:
        nodes = remedy.nodes_of(cluster)
    else:
        raise UsageError("no cluster file (sparktui.toml) names the nodes: give them with --node, head first")
    if args.incident and not bundle.is_bundle(Path(args.incident)):
        raise UsageError(f"--incident {args.incident}: not an incident folder (no bundle.toml)")
    values = rd.resolve(book, facts, cluster.values() if cluster is not None else None, given)
    for name, translation in remedy.translations(book, cluster.values() if cluster else None, given):
        if isinstance(translation, str):
            out.print(Text(f"cannot translate the SGLang launch: {display(translation)}", style="yellow"))
        else:
            out.print(Text(f"{name}: translated from the SGLang launch", style="dim"))
            out.print(translation_text(translation))
    per_node: dict[str, dict[str, str]] | None = {}
    if book.reads_nodes:
        per_node = _probe(book, values, nodes, remedy.targets(cluster, nodes), finding_nodes, out, args.dry_run)
    rendered = rd.render(book, values, nodes, finding_nodes, per_node=per_node, unread=per_node is None)
    out.print(Text.assemble((book.title, "bold"), "  ", (f"[{book.risk}]", "yellow")))
    for name, value in rendered.values.items():
        out.print(Text(f"  {name} = {value}", style="dim"))
    for command in rendered.commands:
        out.print(Text.assemble((f"{command.node:>12} ", "cyan"), ("$ ", "dim"), command.command))
    out.print(Text.assemble(("verify: ", "bold"), rendered.check.describe()))
    if rendered.rollback:
        out.print(Text("rollback (when a step or the verification fails):", style="bold"))
        for command in rendered.rollback:
            out.print(Text.assemble((f"{command.node:>12} ", "cyan"), ("$ ", "dim"), command.command))
    if args.dry_run:
        return 0
    if args.readonly and book.risk != "read-only":
        raise UsageError(f"{book.id} is {book.risk}: refused in read-only mode")
    approvals, cluster_key = Approvals.default(), cluster_id(cluster, nodes.all)
    if args.yes:
        pass
    elif approvals.granted(cluster_key, book):
        out.print(Text(f"approved before for this cluster ({approvals.path}): running", style="yellow"))
    else:
        if not sys.stdin.isatty():
            raise UsageError("not asking without a terminal: add --yes to run, or --dry-run to only show")
        answer = input(f"Run these {len(rendered.commands)} commands ({book.risk})? [y/N/a=always on this cluster] ")
        if answer.strip().lower() in ("a", "always"):
            approvals.grant(cluster_key, book)
        elif answer.strip().lower() not in ("y", "yes"):
            out.print(Text("nothing ran", style="yellow"))
            return 1
    return _run_playbook(rendered, remedy.targets(cluster, nodes), args, out)


def _translate(args: argparse.Namespace) -> int:
    from sparktui.core.launch.sglang_to_vllm import TranslateError, sglang_to_vllm

    words = args.launch
    if not words and sys.stdin.isatty():
        raise UsageError(
            "give the SGLang launch: sparktui translate python3 -m sglang.launch_server ... (or pipe it in)"
        )
    launch = words[0] if len(words) == 1 else shlex.join(words) if words else sys.stdin.read()
    try:
        found = sglang_to_vllm(launch, mode="native" if args.native else "ray")
    except TranslateError as exc:
        raise UsageError(str(exc)) from None
    sys.stdout.write(found.launch + "\n")
    sys.stdout.flush()
    if found.dropped or found.notes:
        Console(stderr=True, highlight=False, soft_wrap=True).print(translation_text(found))
    return 0


def _probe(
    book: pb.Playbook,
    values: dict[str, str],
    nodes: rd.Nodes,
    targets: dict[str, str],
    finding_nodes: Sequence[str],
    out: Console,
    dry_run: bool,
) -> dict[str, dict[str, str]] | None:
    """Read what the playbook needs from the nodes (read-only commands, each shown), before rendering. A dry
    run goes on where they cannot be read (None): its commands show what would be read as ``<name>``."""
    from sparktui.core.remedy import plan as remedy

    out.print(Text("reading the nodes first (docker inspect, read-only)", style="dim"))
    try:
        per_node, notes = asyncio.run(remedy.probe_over_ssh(book, values, nodes, targets, finding_nodes))
    except remedy.ProbeError as exc:
        if not dry_run:
            raise UsageError(str(exc)) from None
        unread = ", ".join(f"<{p.name}>" for p in book.params if p.probe and p.name not in values)
        out.print(Text(f"cannot read the nodes: {exc}", style="yellow"))
        out.print(Text(f"shown with {unread} where the commands would use what docker inspect finds", style="yellow"))
        return None
    for note in notes:
        out.print(Text(f"note: {note}", style="yellow"))
    return per_node


def _run_playbook(rendered: rd.Rendered, targets: dict[str, str], args: argparse.Namespace, out: Console) -> int:
    from sparktui.core.remedy import actions  # the one module that changes nodes
    from sparktui.core.remedy import plan as remedy

    audit = remedy.audit_log([Path(args.incident)] if args.incident else [])

    def output(node: str, line: str) -> None:
        out.print(Text.assemble((f"{node:>12} ", "cyan"), display(line)))

    async def ask(outcome: actions.Outcome) -> bool:
        out.print(Text(outcome.failure, style="bold red"))
        if args.yes:
            return True
        question = f"Run the rollback ({len(rendered.rollback)} commands)? [Y/n] "
        answer = await asyncio.to_thread(input, question) if sys.stdin.isatty() else "y"
        return answer.strip().lower() in ("", "y", "yes")

    run = remedy.execute_over_ssh(
        rendered, targets, readonly=args.readonly, audit=audit, output=output, offer_rollback=ask
    )
    try:
        outcome = asyncio.run(run)
    except (actions.ActionError, Refused) as exc:
        raise UsageError(str(exc)) from None
    for entry in outcome.entries + outcome.rolled_back:
        style = "green" if entry.exit_code == 0 else "red"
        out.print(Text.assemble((f"{entry.node:>12} ", "cyan"), (f"{entry.outcome:<15}", style), entry.step))
    where = ", ".join(str(p) for p in audit.paths)
    if not outcome.ok:
        ran = f"; the rollback ran {len(outcome.rolled_back)} commands" if outcome.rolled_back else ""
        ran = ran if outcome.changed else "; nothing was changed (only checks ran)"
        out.print(Text(f"failed: {outcome.failure}{ran}; audit log: {where}", style="bold red"))
        return 1
    out.print(Text(f"done; audit log: {where}", style="green"))
    return 0


def _discover(args: argparse.Namespace, err: Console) -> int:
    from sparktui.core.inventory import discover as discovery

    looks = asyncio.run(discovery.discover(args.targets, trust_new_host_key=args.trust_new_host_key))
    for seen in looks:
        if seen.problem:
            err.print(Text(f"sparktui: {seen.target}: {seen.problem}", style="yellow"))
    if all(seen.problem and not seen.hostname for seen in looks):
        raise UsageError("no node could be reached; nothing written")
    text = discovery.cluster_file(looks)
    try:
        discovery.write(Path(args.output), text, force=args.force)
    except (FileExistsError, OSError) as exc:
        raise UsageError(str(exc)) from None
    sys.stdout.write(text)
    err.print(Text(f"sparktui: wrote {args.output}", style="green"))
    return 0


def demo_bundle() -> Path:
    return Path(__file__).resolve().parent / "demo" / DEMO


def _cockpit(args: argparse.Namespace) -> int:
    from sparktui.tui.app import Session, SparkApp  # Textual loads only for the interface

    catalogue = _load(getattr(args, "signatures", []))
    demo = Session("demo: " + DEMO, bundle.load(demo_bundle()), speed=DEMO_SPEED)
    session: Session | None
    if args.command == "demo":
        session = Session("demo: " + DEMO, demo.bundle, speed=args.speed)
    elif args.command == "replay":
        path = Path(args.bundle)
        if not bundle.is_bundle(path):
            raise UsageError(f"{path}: not a bundle (no bundle.toml)")
        loaded = bundle.load(path)
        session = Session(f"replay: {loaded.title}", loaded, speed=args.speed)
    elif args.sources:
        if len(args.sources) == 1 and bundle.is_bundle(Path(args.sources[0])):
            loaded = bundle.load(Path(args.sources[0]))
            session = Session(f"replay: {loaded.title}", loaded, speed=1.0)
        else:
            session = Session(" ".join(args.sources), live=tuple(_open(args.sources, args)))
    else:
        session = None
    found = config.find()
    cluster = config.load(found) if found is not None else None
    if session is None and cluster is not None:
        session = Session(f"cluster {found}", live=tuple(_open(cluster.source_uris(), args)))
    SparkApp(session, catalogue, demo=demo, cluster=cluster, readonly=args.readonly).run()
    return 0


def _print_diagnosis(args: argparse.Namespace, diagnosis: Diagnosis) -> None:
    fmt = "json" if args.json else args.format
    if fmt == "json":
        sys.stdout.write(json.dumps(diagnosis.as_dict(), indent=2, ensure_ascii=False) + "\n")
    elif fmt == "md":
        sys.stdout.write(diagnosis_markdown(diagnosis) + "\n")
    else:
        print_text(diagnosis, Console(highlight=False))


def _report(args: argparse.Namespace, incident: Incident, err: Console) -> None:
    """Export the incident where --report says, redacted unless --no-redact."""
    hosts: list[str] = []
    found = config.find()
    if found is not None and args.anonymise_hosts:
        from sparktui.core.remote.ssh import split_target  # asyncssh: only when it is needed

        cluster = config.load(found)
        hosts = [n.name for n in cluster.nodes] + [split_target(n.ssh)[1] for n in cluster.nodes]
    try:
        written = export(
            incident, Path(args.report), redact=not args.no_redact, anonymise_hosts=args.anonymise_hosts, hosts=hosts
        )
    except (OSError, SourceError) as exc:
        raise UsageError(f"--report {args.report}: {getattr(exc, 'strerror', None) or exc}") from None
    shown = ", ".join(p.name for p in written if p.parent == Path(args.report))
    err.print(Text(f"sparktui: report written to {args.report} ({shown}, bundle/)", style="green"))


def parse_duration(text: str) -> float:
    """``20s``, ``5m``, ``1h`` or plain seconds."""
    units = {"s": 1, "m": 60, "h": 3600}
    number, unit = (text[:-1], text[-1]) if text and text[-1] in units else (text, "s")
    try:
        value = float(number) * units[unit]
    except ValueError:
        raise UsageError(f"--for: {text!r} is not a duration (e.g. 20s, 5m, 1h)") from None
    if value <= 0:
        raise UsageError("--for: the duration must be positive")
    return value


def _follow(args: argparse.Namespace, catalogue: cat.Catalogue, err: Console) -> tuple[Diagnosis, Path | None]:
    seconds = parse_duration(args.duration) if args.duration else None
    try:
        sources = Opener(trust_new_host_key=args.trust_new_host_key).open(args.sources)
    except UriError as exc:
        raise UsageError(str(exc)) from None
    spool = None if args.no_spool else Spool(new_incident_dir(), title="sparktui diagnose --follow")
    following = run(catalogue, sources, spool=spool, seconds=seconds, show=False, refresh=False)
    diagnosis = _analyse(following, args, err, "following", states=True)
    if spool is not None and not args.quiet:
        err.print(Text(f"sparktui: received lines kept in {spool.path} (sparktui replay / diagnose it)", style="dim"))
    return diagnosis, spool.path if spool is not None else None


def _analyse(pipeline: Pipeline, args: argparse.Namespace, err: Console, doing: str, *, states: bool) -> Diagnosis:
    """Run ``pipeline`` to its end (ctrl+c ends it early, with what was read), with its progress on a
    terminal; with ``states``, each source that retries, fails or has news is printed as it happens."""
    show = not args.quiet and err.is_terminal
    with err.status(f"{doing}…", spinner="dots") if show else nullcontext() as status:
        updates = pipeline.updates()
        while True:
            try:
                update = next(updates)
            except KeyboardInterrupt:
                pipeline.stop()
                continue
            for change in update.changes:
                if states and not args.quiet and change.state in (State.RETRYING, State.FAILED, State.EVENT):
                    line = f"sparktui: {change.source}: {change.state.value} {change.detail}".rstrip()
                    err.print(Text(display(line), style="yellow"))
            if status is not None:
                status.update(f"{doing} {len(update.states)} sources: {update.read:,} lines")
            if update.error:
                raise UsageError(f"the analysis stopped: {update.error}")
            if update.done:
                assert pipeline.result is not None
                return pipeline.result


def _open(arguments: list[str], args: argparse.Namespace) -> list[LiveSource | SourceGroup]:
    try:
        return Opener(trust_new_host_key=getattr(args, "trust_new_host_key", False)).open(arguments)
    except UriError as exc:
        raise UsageError(str(exc)) from None


def _catalogue(args: argparse.Namespace) -> int:
    out = Console(highlight=False, soft_wrap=True)
    if args.action == "test":
        return _catalogue_test(args, out)
    catalogue = _load(args.signatures)
    if args.action == "list":
        for sig in sorted(catalogue.signatures, key=lambda s: (s.category, -s.severity, s.id)):
            line = Text(f"{sig.id:<48} ")
            line.append(f"{sig.severity.label:<9}", style=SEVERITY_STYLE[sig.severity])
            line.append(f"{sig.category:<28} {sig.kind:<6} ")
            line.append(sig.title, style="dim")
            out.print(line, overflow="ellipsis", no_wrap=True)
        out.print(Text(f"{len(catalogue.signatures)} signatures, {len(catalogue.tracks)} stage tracks", style="dim"))
        return 0
    try:
        sig = catalogue.get(args.id)
    except KeyError:
        raise UsageError(f"no signature {args.id!r} (see `sparktui catalogue list`)") from None
    sys.stdout.write(sig.path.read_text(encoding="utf-8"))
    return 0


def _catalogue_test(args: argparse.Namespace, out: Console) -> int:
    """Test the whole catalogue, or only the files / folders named (loaded on top of the built-in one so
    their references to built-in stage tracks and signatures resolve)."""
    extra = [Path(d) for d in args.signatures]
    wanted: set[Path] | None = None
    if args.paths:
        wanted = set()
        for raw in args.paths:
            path = Path(raw)
            if path.is_dir():
                extra.append(path)
                wanted |= {p.resolve() for p in path.glob("*.toml")}
            elif path.is_file():
                wanted.add(path.resolve())
                if path.parent.resolve() != cat.builtin_dir().resolve():
                    extra.append(path.parent)
            else:
                raise UsageError(f"{raw}: no such file or directory")
    catalogue = cat.load(extra)
    checked = failed = 0
    for sig in catalogue.signatures:
        if wanted is not None and sig.path.resolve() not in wanted:
            continue
        checked += 1
        problems = check(sig, catalogue)
        if problems:
            failed += 1
            for p in problems:
                out.print(Text(p, style="red"))
    out.print(Text(f"{checked - failed} passed, {failed} failed", style="green" if not failed else "red"))
    return 1 if failed else 0
