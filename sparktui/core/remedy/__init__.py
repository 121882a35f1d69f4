"""Remediations: playbooks loaded, rendered purely into exact commands per node, planned, asked for and run
(the only place sparktui changes a node), with the audit log."""
