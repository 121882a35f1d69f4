"""A finding in full: what and why, the evidence from every node with context, facts and remediations.

The remediations, what a user acts on, are at the top with the title and never scroll away; a stall finding
offers there, on the cockpit's ``W``, where every rank is now (:mod:`sparktui.tui.screens.stacks`), and once
read, its "now" part (the odd rank named and what it does) joins the detail. The rest (what, why, the
evidence, the stages) scrolls under them with the usual keys, without having to focus it first.
Its footer shows its own keys. ``y`` copies the evidence and ``Y`` the whole finding as Markdown
(:mod:`sparktui.tui.clipboard`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from rich.console import Group
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

from sparktui.core.catalogue import Signature
from sparktui.core.cluster import Cluster
from sparktui.core.events import Finding
from sparktui.core.redact import Redactor
from sparktui.core.remedy import playbook as pb
from sparktui.core.remedy.plan import Plan, nodes_for
from sparktui.core.report import markdown
from sparktui.core.report.fold import fold_finding
from sparktui.core.report.incident import redacted_finding
from sparktui.core.text import display_text
from sparktui.core.words import listed
from sparktui.richtext import evidence, evidence_lines, finding_head
from sparktui.tui import clipboard
from sparktui.tui.bindings import FINDING, bindings, forwarded, key_label
from sparktui.tui.screens.playbook import RISK_STYLE, PlaybookScreen, PlayContext
from sparktui.tui.stacks import Captures


def evidence_text(finding: Finding) -> str:
    """The evidence as the screen shows it (each line with its place, its node and the lines around it), secrets
    redacted as reports have them (:func:`redacted_finding`: a private key cut by the context goes whole, and
    nothing after it): for ``y``."""
    shared = redacted_finding(finding, Redactor())
    return "\n\n".join("\n".join(line for line, _ in evidence_lines(e)) for e in shared.evidence)


def finding_markdown(finding: Finding) -> str:
    """The finding as a report writes it, secrets redacted as reports have them: for pasting into an issue
    (``Y``)."""
    return markdown.finding_markdown(redacted_finding(finding, Redactor()))


class FindingScreen(ModalScreen[None]):
    """One finding in full, its remediations on top (``enter`` on a finding opens it)."""

    BINDINGS: ClassVar[list[BindingType]] = [*bindings(FINDING), *forwarded("stacks")]
    AUTO_FOCUS = "#finding-body"

    def __init__(
        self,
        finding: Finding,
        signature: Signature | None,
        stages: dict[str, dict[str, str]],
        playbooks: Mapping[str, pb.Playbook] | None = None,
        cluster: Cluster | None = None,
        context: PlayContext | None = None,
        captures: Captures | None = None,
    ) -> None:
        super().__init__()
        self.finding, self.signature, self.stages, self.cluster = finding, signature, stages, cluster
        self.captures = captures
        self.stall = captures is not None and captures.is_stall(finding)
        self.context = context or PlayContext()
        self.playbooks = {i: playbooks[i] for i in finding.remediations if playbooks and i in playbooks}

    def on_key(self, event: events.Key) -> None:
        """A remediation's own key opens it (the keys are data, in playbooks/)."""
        for book in self.playbooks.values():
            if event.character == book.key:
                event.stop()
                f = self.finding
                given = self.context.given.setdefault(book.id, {})  # values typed in stay for the session
                plan = Plan(book, nodes_for(self.cluster, (), f.nodes), self.cluster, f.facts, f.nodes, given)
                self.app.push_screen(PlaybookScreen(plan, self.context))
                return

    def compose(self) -> ComposeResult:
        f = self.finding
        head = finding_head(f)
        meta = Text(f"{f.signature} · {f.category} · nodes {listed(f.nodes)} · seen {f.count}x", style="dim")
        with Vertical(id="detail"):
            yield Static(Group(head, meta), id="finding-head")
            yield Static(self._remedies(), id="finding-remedies")
            with VerticalScroll(id="finding-body"):
                yield from self._body()
        yield Footer()

    def _folded(self) -> Finding:
        """The finding with the last capture of the stacks folded in, when it was taken for it."""
        return fold_finding(self.finding, self.captures.latest if self.captures is not None else None)

    def on_screen_resume(self) -> None:
        """Back from the stacks' screen: the detail shows the capture just read."""
        folded = self._folded()
        for detail in self.query("#finding-detail").results(Static):
            if folded.detail:
                detail.update(Text(display_text(folded.detail)))
                detail.display = True

    def _body(self) -> ComposeResult:
        f, sig = self._folded(), self.signature
        detail = Static(Text(display_text(f.detail)), classes="section", id="finding-detail")
        detail.display = bool(f.detail)
        yield detail
        if f.because:
            yield Static(_section("Ranked here because", "\n".join(b.said() for b in f.because)), classes="section")
        if sig is not None:
            yield Static(_section("What", sig.what), classes="section")
            yield Static(_section("Why", sig.why), classes="section")
            if sig.fix:
                yield Static(_section("Fix", sig.fix), classes="section")
        elif f.explanation:  # a pre-launch check's finding: its explanation says what, why and the fix
            yield Static(_section("Explanation", f.explanation), classes="section")
        if f.facts:
            yield Static(_section("Facts", ", ".join(f"{k}={v}" for k, v in f.shown_facts.items())), classes="section")
        yield Static(Text("Evidence", style="bold underline"), classes="section")
        if not f.evidence:
            yield Static(Text("no log line: the facts above are what the nodes reported", style="dim"))
        for e in f.evidence:
            yield Static(evidence(e), classes="evidence")
        involved = {n: self.stages[n] for n in f.nodes if n in self.stages}
        if involved:
            text = "\n".join(
                f"{n}: " + "; ".join(f"{t} {p}" for t, p in sorted(s.items())) for n, s in involved.items()
            )
            yield Static(_section("Stages", text), classes="section")
        if sig is not None and sig.references:
            yield Static(_section("References", "\n".join(sig.references)), classes="section")

    def _body_scroll(self) -> VerticalScroll:
        return self.query_one("#finding-body", VerticalScroll)

    def action_down(self) -> None:
        self._body_scroll().scroll_down(animate=False)

    def action_up(self) -> None:
        self._body_scroll().scroll_up(animate=False)

    def action_page_down(self) -> None:
        self._body_scroll().scroll_page_down(animate=False)

    def action_page_up(self) -> None:
        self._body_scroll().scroll_page_up(animate=False)

    def action_top(self) -> None:
        self._body_scroll().scroll_home(animate=False)

    def action_bottom(self) -> None:
        self._body_scroll().scroll_end(animate=False)

    def action_copy_evidence(self) -> None:
        if not self.finding.evidence:
            self.notify("this finding has no evidence lines", severity="warning")
            return
        clipboard.copy(self.app, evidence_text(self.finding), f"the evidence of {self.finding.signature}")

    def action_copy_finding(self) -> None:
        clipboard.copy(self.app, finding_markdown(self.finding), f"{self.finding.signature} as Markdown")

    def _remedies(self) -> Text:
        text = Text.assemble(("Remediations", "bold underline"), "\n")
        if not self.finding.remediations:
            text.append("none in the catalogue\n")
        for rid in self.finding.remediations:
            book = self.playbooks.get(rid)
            if book is None:
                text.append(f"  {rid} (not available in this version)\n", style="dim")
            else:
                text.append(f" {book.key} ", style="reverse bold")
                text.append(f" {book.title}  ", style="")
                text.append(f"[{book.risk}]\n", style=RISK_STYLE.get(book.risk, ""))
        if self.stall:
            text.append(f" {key_label('stacks')} ", style="reverse bold")
            text.append(" Where every rank is now: its stack on the nodes (py-spy)  ")
            text.append("[read-only]\n", style=RISK_STYLE.get("read-only", ""))
        if self.playbooks:
            text.append("a remediation's key shows its exact commands, and runs them after asking", style="dim")
        text.rstrip()
        return text


def _section(title: str, body: str) -> Text:
    return Text.assemble((title, "bold underline"), "\n", body)
