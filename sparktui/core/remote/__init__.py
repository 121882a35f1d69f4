"""How sparktui reaches a node: SSH, the command runner, a Docker engine."""
