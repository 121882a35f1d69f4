"""Approvals the user chose to remember: "always run this playbook on this cluster without asking".

Kept in ``approvals.json`` in the config directory (next to ``cluster.toml``). An approval names the
cluster by its nodes (name and SSH address, so moving the cluster file keeps it and pointing a name at
another machine does not) and the playbook by its id and a digest of its file: an edited playbook is
asked about again. Approvals only skip the question; the commands are still shown, read-only mode still
refuses, and every command is still audited. Delete the file (or an entry) to revoke.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from sparktui.core import cluster as config
from sparktui.core import dirs
from sparktui.core.remedy.playbook import Playbook


def cluster_id(cluster: config.Cluster | None, nodes: tuple[str, ...]) -> str:
    if cluster is None:
        return " ".join(nodes)
    return " ".join(f"{n.name}={n.ssh}" for n in sorted(cluster.nodes, key=lambda n: n.name))


def digest(playbook: Playbook) -> str:
    return hashlib.sha256(playbook.path.read_bytes()).hexdigest()


@dataclass
class Approvals:
    """The remediations a user chose to run without asking again on a cluster (``a`` for always), kept in a
    JSON file of the user's configuration."""

    path: Path

    @classmethod
    def default(cls) -> Approvals:
        return cls(dirs.config_dir() / "approvals.json")

    def _entries(self) -> list[dict[str, str]]:
        try:
            doc = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return []  # missing or unreadable: nothing is approved, so sparktui asks
        entries = doc.get("approvals", []) if isinstance(doc, dict) else []
        return [e for e in entries if isinstance(e, dict)]

    def granted(self, cluster: str, playbook: Playbook) -> bool:
        want = {"cluster": cluster, "playbook": playbook.id, "digest": digest(playbook)}
        return any(all(e.get(k) == v for k, v in want.items()) for e in self._entries())

    def grant(self, cluster: str, playbook: Playbook) -> None:
        entries = [e for e in self._entries() if (e.get("cluster"), e.get("playbook")) != (cluster, playbook.id)]
        entries.append(
            {
                "cluster": cluster,
                "playbook": playbook.id,
                "digest": digest(playbook),
                "granted": datetime.now(UTC).isoformat(timespec="seconds"),
            }
        )
        os.close(dirs.private_dir(self.path.parent))  # what runs unasked is the user's alone to read or change
        temporary = self.path.with_suffix(".tmp")
        with dirs.private_file(temporary, append=False) as out:
            out.write(json.dumps({"approvals": entries}, indent=2) + "\n")
        os.replace(temporary, self.path)
