"""Reading a launch command: which engine, which model, how it is spread over GPUs and nodes, where it
listens, and the environment it is given. Pure: no I/O but the engines' tables, read once.

The words are the one launch lexer's (:mod:`.lexer`: the forms it reads, quoting, env, ``docker exec``,
``bash -c``). A launch may be piped into another program (``| tee log``) or end with ``&``; after ``;``,
``&&`` or ``||``, which command is the launch is not for the reader to guess.

Whether a flag takes a value decides what the next word is. vLLM's own parser knows (the in-image probe
reads it: pass ``switches``); without it, the engine's table in ``diagnostics/launch/`` says (:mod:`.tables`:
a flag spelt ``--enable-...``, ``--disable-...`` or ``--no-...`` takes none, and the few switches spelt
otherwise are listed), as it says which flags give the settings read here.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass

from sparktui.core.launch.lexer import LaunchError as LaunchError  # the readers' error, as before
from sparktui.core.launch.lexer import Takes, options, read
from sparktui.core.launch.tables import cli


@dataclass(frozen=True, slots=True)
class Launch:
    """An engine's launch command, read. Sizes not given are the engines' defaults (1); ``nnodes`` and
    ``executor`` are None and "" when not given, since their absence is what the checks look at."""

    engine: str
    command: str
    model: str
    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    data_parallel: int = 1
    nnodes: int | None = None
    node_rank: int | None = None
    executor: str = ""
    port: int = 8000
    host: str = ""
    headless: bool = False
    container: str = ""  # the container a `docker exec` runs it in
    env: tuple[tuple[str, str], ...] = ()
    flags: tuple[str, ...] = ()  # every flag given, as written (without =value)

    @property
    def world_size(self) -> int:
        """The GPUs one copy of the model takes: tensor x pipeline parallel."""
        return self.tensor_parallel * self.pipeline_parallel

    @property
    def gpus_per_node(self) -> int:
        """The GPUs each node must have: the world size, shared by ``--nnodes`` where given."""
        nodes = self.nnodes or 1
        return -(-self.world_size // nodes)


def parse_launch(command: str, switches: Callable[[str], bool] | Collection[str] | None = None) -> Launch:
    """The launch in ``command``. ``switches`` says which flags take no value (a set of them, or a test);
    by default the engine's table. Raises :class:`LaunchError` for anything else."""
    line = read(command)
    refused = [op for op in line.operators if op != "|"][: -1 if line.background else None]
    if refused:
        raise LaunchError(f"shell operator {refused[0]!r}: give the launch alone")
    engine = line.engine
    table = cli(engine)
    takes_none: Callable[[str], bool]
    if switches is None:
        takes_none = table.is_switch
    elif callable(switches):
        takes_none = switches
    else:
        takes_none = frozenset(switches).__contains__
    given = options(line.args, lambda flag: Takes.NOTHING if takes_none(flag) else Takes.ONE)
    by_flag = {flag: name for name, flags in table.settings.items() for flag in flags}
    values = {by_flag[o.flag]: (o.values[0] if o.values else "") for o in given if o.flag in by_flag}
    flags = [o.flag for o in given if o.flag]
    positional = [o.values[0] for o in given if not o.flag]
    model = values.get("model") or (positional[0] if positional else "")
    if not model:
        raise LaunchError("no model in the launch command (vllm serve MODEL, --model or --model-path)")

    def whole(name: str) -> int | None:
        raw = values.get(name)
        if raw is None:
            return None
        if not raw.isdigit():
            raise LaunchError(f"{table.settings[name][0]} {raw!r}: not a whole number")
        return int(raw)

    return Launch(
        engine=engine,
        command=command,
        model=model,
        tensor_parallel=whole("tp") or 1,
        pipeline_parallel=whole("pp") or 1,
        data_parallel=whole("dp") or 1,
        nnodes=whole("nnodes"),
        node_rank=whole("node_rank"),
        executor=values.get("executor", ""),
        port=whole("port") or table.default_port,
        host=values.get("host", ""),
        headless="--headless" in flags,
        container=line.container,
        env=line.env,
        flags=tuple(flags),
    )
