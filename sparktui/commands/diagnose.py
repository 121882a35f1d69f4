"""``sparktui diagnose``: the analysis without the interface, for scripts and CI.

Exit status: 0 when no finding reaches ``--fail-on``, 1 when one does, 2 for bad usage or an input that could
not be read (to its end; followed, never opened or connected), always with a one-line message on stderr:
2 outranks 1, so it never says healthy while an input went unread.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.text import Text

from sparktui.commands import native_stderr
from sparktui.commands.common import (
    USAGE_ERROR,
    UsageError,
    catalogue,
    duration,
    err,
    open_sources,
    out,
    signatures_option,
    spool_raw_option,
    trust_option,
)
from sparktui.core import cluster as clusterfile
from sparktui.core.analysis.diagnosis import Diagnosis
from sparktui.core.catalogue import Catalogue
from sparktui.core.errors import Invalid
from sparktui.core.events import Severity, State
from sparktui.core.floods import Flood
from sparktui.core.liveness.stamps import Stamps
from sparktui.core.liveness.verdict import kept, merged
from sparktui.core.liveness.watch import Live, Watcher, for_session
from sparktui.core.pipeline import Input, Pipeline, Update, run
from sparktui.core.redact import Redactor
from sparktui.core.report.incident import Incident
from sparktui.core.sources import bundle
from sparktui.core.sources.files import FileRead, SourceError
from sparktui.core.sources.open import UriError, file_sources, ray_uri, scheme, ssh_targets
from sparktui.core.sources.spool import Spool
from sparktui.core.text import display, display_text, json_inert_pieces
from sparktui.core.words import size, span
from sparktui.richtext import print_stacks, print_text

if TYPE_CHECKING:  # imported where they are used: a run reading files needs neither Ray's edge nor an export
    from sparktui.core.edge.head import RayEdge

NAME = "diagnose"


def add(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    d = sub.add_parser(NAME, help="analyse log files and directories, print ranked findings")
    d.add_argument(
        "sources", nargs="+", metavar="SOURCE", help="log file, directory of logs, .gz or .xz file, - for stdin"
    )
    fmt = d.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print the JSON contract (same as --format json)")
    fmt.add_argument("--format", choices=("text", "md", "json"), default="text")
    d.add_argument(
        "--fail-on",
        default="error",
        metavar="SEVERITY",
        help="exit 1 if a finding is at least this severe (info, warning, error, critical; default error)",
    )
    signatures_option(d)
    d.add_argument("--quiet", action="store_true", help="no progress on stderr")
    d.add_argument(
        "-j",
        "--jobs",
        type=int,
        metavar="N",
        help="processes that scan the files (default: one per core, at most one per file; 1: in this process)",
    )
    d.add_argument("--follow", action="store_true", help="keep reading as the sources grow (live sources)")
    d.add_argument(
        "--edge",
        action="store_true",
        help="ray://head[:port]: scan each node's logs on the node, as a Ray actor, and bring back only the findings",
    )
    d.add_argument("--for", dest="duration", metavar="DURATION", help="with --follow: stop after e.g. 20s, 5m, 1h")
    d.add_argument("--report", metavar="DIR", help="also export the incident: Markdown, HTML, JSON and a bundle")
    d.add_argument(
        "--no-redact", action="store_true", help="keep secrets in what is printed and in --report (redacted by default)"
    )
    d.add_argument(
        "--anonymise-hosts",
        action="store_true",
        help="with --report: also replace host names and addresses, consistently",
    )
    d.add_argument("--launch", metavar="COMMAND", default="", help="with --report: the launch command to include")
    trust_option(d)
    spool = d.add_mutually_exclusive_group()
    spool.add_argument(
        "--no-spool",
        action="store_true",
        help="with --follow: do not keep a copy of the received lines (kept by default, as a bundle)",
    )
    spool_raw_option(spool)
    d.add_argument(
        "--fresh",
        action="store_true",
        help="with --follow: read every source from its start into a new incident, instead of resuming the last "
        "session of the same sources from the spool's checkpoint",
    )
    d.set_defaults(run=main)


def main(args: argparse.Namespace) -> int:
    try:
        fail_on = Severity.parse(args.fail_on)
    except ValueError as exc:
        raise UsageError(f"--fail-on: {exc}") from None
    if args.duration and not args.follow:
        raise UsageError("--for needs --follow")
    if args.jobs is not None and args.jobs < 1:
        raise UsageError("--jobs: give 1 or more")
    if args.spool_raw and not args.follow:
        raise UsageError("--spool-raw needs --follow (only live sources are spooled)")
    if args.no_spool and not args.follow:
        raise UsageError("--no-spool needs --follow (only live sources are spooled)")
    if args.fresh and (not args.follow or args.no_spool):
        raise UsageError("--fresh needs --follow and the spool (a session resumes from the spool's checkpoint)")
    if args.anonymise_hosts and not args.report:
        raise UsageError("--anonymise-hosts needs --report DIR (it says how the exported incident is written)")
    if args.launch and not args.report:
        raise UsageError("--launch needs --report DIR (the launch command goes into the exported incident)")
    edges = [a for a in args.sources if a.startswith("ray://")]
    if args.edge and (len(edges) != 1 or len(args.sources) != 1):
        raise UsageError("--edge takes one ray://head[:port] source and nothing else (one Ray driver per run)")
    with _ending_as_ctrl_c():
        return _main(args, fail_on)


@contextmanager
def _ending_as_ctrl_c() -> Iterator[None]:
    """SIGTERM and SIGHUP (what ``timeout``, systemd, CI runners and a closed terminal send) end the run as
    ctrl+c does: reading stops, what was read is diagnosed and printed, the spool is closed, the exit status
    is the one ctrl+c gives."""
    if threading.current_thread() is not threading.main_thread():  # signals can only be handled there
        yield
        return
    before = {number: signal.signal(number, signal.default_int_handler) for number in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for number, handler in before.items():
            signal.signal(number, handler)


def _main(args: argparse.Namespace, fail_on: Severity) -> int:
    found = catalogue(args.signatures)
    problems = err()
    edge = _edge(args, found) if args.edge else None
    if args.follow:
        diagnosis, incident = _follow(args, found, problems, edge)
    else:
        diagnosis, incident = _files(args, found, problems, edge)
    if edge is not None and not args.quiet and (edge.totals.nodes or edge.totals.pulled):
        problems.print(Text(_edge_summary(edge), style="dim"))
    flood, whose = Flood(), {s.error: s.name for s in diagnosis.sources if s.error}
    for warning in diagnosis.warnings:
        if warning not in found.refused and flood.admit(whose.get(warning, ""), warning):  # refused: said already
            problems.print(Text(display(f"sparktui: {warning}"), style="yellow"))
    for line in flood.folded():
        problems.print(Text(display(f"sparktui: {line} (--json lists each)"), style="yellow"))
    if native := native_stderr.said():
        problems.print(Text(display(f"sparktui: {native}"), style="dim"))
    # A bundle's capture of the stacks is folded into the stall findings it was taken for and the grids, as
    # the replay and the export show them, and said after them in a section of its own (a capture taken with
    # no stall finding is folded nowhere). What is printed is redacted as a report is (a token in an evidence
    # line, a private key's body in its context): output that is pasted into tickets and CI logs; --no-redact
    # keeps the secrets.
    shown = Incident(incident.folded().diagnosis, stacks=incident.stacks)
    _print(args, shown if args.no_redact else shown.redacted(Redactor()))
    if args.report:
        _report(args, incident, problems)
    if any(s.error for s in diagnosis.sources):
        return USAGE_ERROR  # an input could not be read (to its end): what was read is diagnosed above
    worst = diagnosis.worst()
    return 1 if worst is not None and worst >= fail_on else 0


def _edge(args: argparse.Namespace, found: Catalogue) -> RayEdge:
    """The edge scan of the one ``ray://`` source, with the files and containers the cluster file names."""
    from sparktui.core.edge.head import RayEdge

    try:
        address, glob = ray_uri(args.sources[0])
    except UriError as exc:
        raise UsageError(str(exc)) from None
    where = clusterfile.find()
    cluster = clusterfile.load(where) if where is not None else None
    return RayEdge(
        address, found, glob, follow=args.follow, cluster=cluster, trust_new_host_key=args.trust_new_host_key
    )


def _edge_summary(edge: RayEdge) -> str:
    """One line: where the logs were scanned, and what that moved."""
    t = edge.totals
    line = (
        f"sparktui: scanned at the edge on {len(t.nodes)} node{'' if len(t.nodes) == 1 else 's'}: "
        f"{size(t.read)} of logs read there, {size(t.results)} of results sent back "
        f"(and the {size(t.package)} package of code and catalogue)"
    )
    line += f"; pulled instead: {', '.join(t.pulled)}" if t.pulled else ""
    unread = f"; not read (they are followed: add --follow): {', '.join(t.unread)}" if t.unread else ""
    return line + unread


def _files(
    args: argparse.Namespace, found: Catalogue, problems: Console, edge: RayEdge | None
) -> tuple[Diagnosis, Incident]:
    try:
        kinds = [(a, scheme(a)) for a in args.sources]
    except UriError as exc:
        raise UsageError(str(exc)) from None
    live = [a for a, kind in kinds if kind is not None and kind.once is None]
    if live:
        raise UsageError(
            f"{live[0]}: a live source, read with --follow (add --for 30s to stop after that long); "
            "without --follow, diagnose reads files, directories, bundles and ray://head (every node's logs, once)"
        )
    paths = [a for a, kind in kinds if kind is None]
    sources, skipped = file_sources(paths) if paths else ([], [])
    if not sources and len(paths) == len(args.sources):
        raise UsageError(skipped[0] if skipped else "no log files found in " + " ".join(args.sources))
    for problem in skipped:
        problems.print(Text(f"sparktui: {problem}", style="yellow"))
    inputs: list[Input] = [FileRead(s) for s in sources]
    try:
        inputs += [edge] if edge is not None else [kind.once(a) for a, kind in kinds if kind and kind.once]
    except UriError as exc:
        raise UsageError(str(exc)) from None
    reading = run(found, inputs, show=False, refresh=False, workers=args.jobs)
    diagnosis = _analyse(reading, args, problems, "reading", states=False)
    single = Path(args.sources[0]) if len(args.sources) == 1 else None
    if single is not None and bundle.is_bundle(single):
        # a hang its capture of the stacks saw is a finding, as it was in the session that exported it
        replayed = Incident.of_bundle(
            bundle.load(single), diagnosis, command=args.launch, unread=partial(_warn, problems)
        )
        diagnosis = kept(diagnosis, replayed.stacks)
        return diagnosis, replace(replayed, diagnosis=diagnosis)
    title = "sparktui diagnose " + " ".join(args.sources)
    return diagnosis, Incident(diagnosis, title=title, logs=tuple(sources), command=args.launch)


def _follow(
    args: argparse.Namespace, found: Catalogue, problems: Console, edge: RayEdge | None
) -> tuple[Diagnosis, Incident]:
    seconds = duration(args.duration) if args.duration else None
    sources: list[Input] = (
        [edge] if edge is not None else list(open_sources(args.sources, trust_new_host_key=args.trust_new_host_key))
    )
    spool = None if args.no_spool else _spool(args)
    if spool is not None and spool.resumed and not args.quiet:
        problems.print(
            Text(
                f"sparktui: resuming {spool.path}: what the last session of these sources kept is read back from "
                "there, and each source read on from where it stopped (--fresh reads them all from their start)",
                style="dim",
            )
        )
    # Diagnoses as it goes (refresh), for the time each finding was first made; the live watch reads every
    # rank's stack when the logs go quiet, and says a hung rank on stderr as soon as it is named.
    stamps = Stamps()
    watch = _watch(args, problems)  # made before the pipeline starts: from then on, ctrl+c ends the reading
    following = run(found, sources, spool=spool, seconds=seconds, show=False, refresh=True)
    watch.start()

    def each(update: Update) -> None:
        watch.feed(update)
        if update.diagnosis is not None:
            stamps.see(update.diagnosis)

    try:
        diagnosis = _analyse(following, args, problems, "following", states=True, each=each)
    finally:
        watch.stop()
    live = watch.live
    hung = live.reading.snapshot if live.finding is not None and live.reading is not None else None
    diagnosis = stamps.stamp(merged(diagnosis, live.finding, hung, live.jobs.values()))
    if spool is not None and hung is not None and bundle.is_bundle(spool.path):
        try:
            hung.write(spool.path)  # the bundle carries the capture that named the hang
        except OSError as exc:
            _warn(problems, f"the capture of the stacks was not kept in {spool.path}: {exc.strerror or exc}")
    if spool is None or not bundle.is_bundle(spool.path):  # no spool, or nothing was received
        return diagnosis, Incident(diagnosis, command=args.launch, stacks=hung)
    if not args.quiet:
        kept = "as received, secrets included" if spool.raw else "secrets redacted"
        problems.print(
            Text(f"sparktui: received lines kept in {spool.path} ({kept}; sparktui replay / diagnose it)", style="dim")
        )
    return diagnosis, Incident.of_bundle(
        bundle.load(spool.path), diagnosis, command=args.launch, unread=partial(_warn, problems)
    )


def _watch(args: argparse.Namespace, problems: Console) -> Watcher:
    """The live watch over the cluster file's nodes (else the nodes of the ``ssh://`` sources, else this
    machine), saying on stderr each hung rank it names and each hang that clears."""
    cluster = None
    where = clusterfile.find()
    if where is not None:
        try:
            cluster = clusterfile.load(where)
        except Invalid as exc:
            _warn(problems, f"the live watch reads this machine only: {exc}")
    said: set[str] = set()  # the problems said, and each hung job's sentence said
    hung: dict[str, str] = {}

    def say(live: Live) -> None:
        for problem in live.problems:
            if problem not in said and not args.quiet:
                said.add(problem)
                _warn(problems, problem)
        now = {job: (when, who, title) for job, when, who, title in live.said()}
        for job, (when, who, title) in now.items():
            if hung.get(job) != who:  # said once per culprit, not again for each reading's wording
                line = f"sparktui: {when.isoformat(timespec='milliseconds')} HANG: job {job}: {title}"
                problems.print(Text(display(line), style="bold red"))
        for job in [j for j in hung if j not in now]:
            problems.print(Text(display(f"sparktui: job {job}: the hang cleared, its ranks move again"), style="green"))
        hung.clear()
        hung.update({job: who for job, (_, who, _) in now.items()})

    watch, problem = for_session(cluster, ssh_targets(args.sources), say)
    if problem:
        _warn(problems, problem)
    return watch


def _warn(problems: Console, text: str) -> None:
    problems.print(Text(display(f"sparktui: {text}"), style="yellow"))


def _spool(args: argparse.Namespace) -> Spool:
    """A new spool, or with the same sources (a path by where it is) the last session's, resumed."""
    title = "sparktui diagnose --follow"
    inputs = ["--edge"] if args.edge else []
    inputs += [a if a == "-" or scheme(a) is not None else os.path.abspath(a) for a in args.sources]
    if args.fresh:  # not resumed, yet resumable: its checkpoint names the inputs as any other's does
        return Spool.new(title, raw=args.spool_raw, inputs=inputs)
    return Spool.resume(title, inputs, raw=args.spool_raw)


def _analyse(
    pipeline: Pipeline,
    args: argparse.Namespace,
    problems: Console,
    doing: str,
    *,
    states: bool,
    each: Callable[[Update], None] | None = None,
) -> Diagnosis:
    """Run ``pipeline`` to its end (ctrl+c ends it early, with what was read), with its progress on a
    terminal; with ``states``, each source that retries, fails or has news is printed as it happens; each
    update handed to ``each``."""
    show = not args.quiet and problems.is_terminal
    started = time.monotonic()
    flood = Flood()  # thousands of sources retrying: a few lines of each kind, then one that counts the rest
    with problems.status(f"{doing}…", spinner="dots") if show else nullcontext() as status:
        updates = pipeline.updates()
        while True:
            try:
                update = next(updates)
            except KeyboardInterrupt:
                pipeline.stop()
                updates = pipeline.updates()  # the interrupted one ended with the interruption
                continue
            try:
                if each is not None:
                    each(update)
                for change in update.changes:
                    if states and not args.quiet and change.state in (State.RETRYING, State.FAILED):
                        said = f"{change.state.value} {change.detail}".rstrip()
                        if flood.admit(change.source, said):
                            problems.print(Text(display(f"sparktui: {change.source}: {said}"), style="yellow"))
                for note in update.notes:
                    if states and not args.quiet and flood.admit(note.source, note.text):
                        problems.print(Text(display(f"sparktui: {note.source}: {note.text}"), style="yellow"))
                if status is not None:
                    status.update(progress(doing, update, time.monotonic() - started))
            except KeyboardInterrupt:  # while saying how it goes (thousands of sources retrying): the same end
                pipeline.stop()
            if update.error:
                raise UsageError(f"the analysis stopped: {update.error}")
            if update.done:
                assert pipeline.result is not None
                for line in flood.folded():
                    problems.print(Text(display(f"sparktui: {line}"), style="yellow"))
                return _unread_warned(pipeline.result)


def _unread_warned(diagnosis: Diagnosis) -> Diagnosis:
    """``diagnosis`` with each input that could not be read (to its end) among its warnings too, as its
    source's error says it: in the JSON's ``warnings`` and on stderr, not only under its source."""
    unread = tuple(s.error for s in diagnosis.sources if s.error and s.error not in diagnosis.warnings)
    return replace(diagnosis, warnings=(*diagnosis.warnings, *unread)) if unread else diagnosis


def progress(doing: str, update: Update, elapsed: float) -> str:
    """The progress line: the lines read, and where the size of what is read is known, the bytes, the
    share and the time left at the pace so far."""
    count = len(update.states)
    line = f"{doing} {count} source{'' if count == 1 else 's'}: {update.read:,} lines"
    extents = [t.extent for t in update.tallies.values()]
    if update.done or not extents or any(e is None or e.size is None for e in extents):
        return line  # a stream among them: no size to measure against
    read, total = sum(e.read for e in extents if e), sum(e.size or 0 for e in extents if e)
    if not total:
        return line
    line += f", {size(read)} of {size(total)} ({100 * read / total:.0f} %)"
    if read and elapsed >= 1:
        line += f", about {span((total - read) * elapsed / read)} left"
    return line


def _print(args: argparse.Namespace, incident: Incident) -> None:
    """The diagnosis, then the bundle's capture of the stacks where it has one (``stacks`` in the JSON)."""
    diagnosis, stacks = incident.diagnosis, incident.stacks
    fmt = "json" if args.json else args.format
    if fmt == "json":
        # Written as it is encoded: the diagnosis of a big cluster's logs is tens of megabytes of JSON.
        encoder = json.JSONEncoder(indent=2, ensure_ascii=False)
        shape = diagnosis.as_dict() if stacks is None else {**diagnosis.as_dict(), "stacks": stacks.as_dict()}
        sys.stdout.writelines(json_inert_pieces(encoder.iterencode(shape)))
        sys.stdout.write("\n")
    elif fmt == "md":
        from sparktui.core.report.markdown import diagnosis_markdown, stacks_markdown

        more = "" if stacks is None else "\n" + display_text("\n".join(stacks_markdown(stacks)))
        sys.stdout.write(diagnosis_markdown(diagnosis) + more + "\n")
    else:
        print_text(diagnosis, out())
        if stacks is not None:
            print_stacks(stacks, out())


def _report(args: argparse.Namespace, incident: Incident, problems: Console) -> None:
    """Export the incident where --report says, redacted unless --no-redact."""
    from sparktui.core.report.export import export  # the HTML and Markdown writers: only for a report

    hosts: list[str] = []
    found = clusterfile.find()
    if found is not None and args.anonymise_hosts:
        cluster = clusterfile.load(found)
        hosts = [n.name for n in cluster.nodes] + [n.address.host for n in cluster.nodes]
    try:
        written = export(
            incident, Path(args.report), redact=not args.no_redact, anonymise_hosts=args.anonymise_hosts, hosts=hosts
        )
    except (OSError, SourceError) as exc:
        raise UsageError(f"--report {args.report}: {getattr(exc, 'strerror', None) or exc}") from None
    shown = ", ".join(p.name for p in written if p.parent == Path(args.report))
    problems.print(Text(f"sparktui: report written to {args.report} ({shown}, bundle/)", style="green"))
