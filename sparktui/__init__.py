"""sparktui: diagnose multi-node LLM inference bring-up from the logs of every node."""

__version__ = "0.1.0"
