"""Before launch: what each node runs and holds (one read-only script per node), the facts read from it, the
pre-launch checks and advisories matched against them, and what differs between the nodes."""
