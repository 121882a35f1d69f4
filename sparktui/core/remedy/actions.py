"""Running a rendered playbook: the only module that changes anything on a node.

The commands are exactly those :func:`sparktui.core.remedy.playbook.render` produced (and a dry run showed):
each runs on its node over that node's SSH connection, or on this machine for ``local`` steps, in order;
the first failure stops the run and the rollback steps run; every command becomes an
:class:`~sparktui.core.audit.AuditEntry`, appended to the audit log as it finishes. Read-only mode
refuses any playbook whose risk is not ``read-only`` before a single command runs.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from sparktui.core.audit import AuditEntry, AuditLog
from sparktui.core.remedy.render import Rendered
from sparktui.core.remedy.verify import Verdict, run_check
from sparktui.core.remote.runner import Captured, Output, Runner, recorded


class ActionError(Exception):
    """The run was refused before anything ran (read-only mode); one line."""


@dataclass
class Outcome:
    """How a remediation's run went: the audit entries of its steps and check, the check's verdict, what was
    rolled back, and whether anything was changed."""

    entries: list[AuditEntry] = field(default_factory=list)  # the steps, then the verification
    verdict: Verdict | None = None  # None when a step failed before the check
    rolled_back: list[AuditEntry] = field(default_factory=list)
    changed: bool = False  # whether a command that changes something ran (only checks: nothing to undo)

    @property
    def ok(self) -> bool:
        return all(e.exit_code == 0 for e in self.entries)

    @property
    def failure(self) -> str:
        """One line: what went wrong, or "" when nothing did."""
        if self.verdict is not None and not self.verdict.passed:
            return f"verification failed: {self.verdict.note}"
        for entry in self.entries:
            if entry.exit_code != 0:
                return f"{entry.node}: {entry.step}: {entry.outcome}"
        return ""


#: Asked, with what went wrong, whether to run the rollback now; None runs it without asking.
OfferRollback = Callable[[Outcome], Awaitable[bool]]


async def execute(
    rendered: Rendered,
    runner: Runner,
    *,
    readonly: bool = False,
    audit: AuditLog | None = None,
    output: Output = lambda node, text: None,
    offer_rollback: OfferRollback | None = None,
) -> Outcome:
    """Run the commands in order, then the verification; on the first failure (or a failed verification)
    stop, and run the rollback commands (after asking ``offer_rollback``, when given) unless every command
    that ran was one that changes nothing."""
    if refusal := rendered.playbook.refused(readonly):
        raise ActionError(refusal)
    outcome = Outcome()
    for command in rendered.commands:
        outcome.changed = outcome.changed or command.changes
        entry = await recorded(runner, command, output, audit, rendered.playbook.id)
        outcome.entries.append(entry)
        if entry.exit_code != 0:
            break
    else:
        outcome.verdict = await _verify(rendered, runner, output, audit, outcome)
    if outcome.ok or not rendered.rollback or not outcome.changed:
        return outcome
    if offer_rollback is None or await offer_rollback(outcome):
        for step in rendered.rollback:
            outcome.rolled_back.append(await recorded(runner, step, output, audit, rendered.playbook.id))
    return outcome


async def _verify(
    rendered: Rendered, runner: Runner, output: Output, audit: AuditLog | None, outcome: Outcome
) -> Verdict:
    check = rendered.check
    started, clock = datetime.now(UTC), time.monotonic()
    printed = Captured(output)
    output(check.node, f"[verify] {check.describe()}")
    verdict = await run_check(check, runner, printed.line)
    output(check.node, f"[verify] {'passed' if verdict.passed else 'FAILED'}: {verdict.note}")
    if check.kind != "none":
        entry = AuditEntry(
            check.describe(),
            check.node,
            started,
            0 if verdict.passed else 1,
            printed.text() + verdict.note + "\n",
            time.monotonic() - clock,
            "host",
            rendered.playbook.id,
            "verify",
        )
        outcome.entries.append(entry)
        if audit is not None:
            audit.add(entry)
    return verdict
