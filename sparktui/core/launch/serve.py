"""Reading a launch command: which engine, which model, how it is spread over GPUs and nodes, where it
listens, and the environment it is given. Pure: no I/O.

Forms read: ``vllm serve MODEL ...``, ``python3 -m vllm.entrypoints.openai.api_server --model M ...``,
``python3 -m sglang.launch_server --model-path M ...`` and ``sglang serve ...``; in front of them any
``VAR=value`` assignments, ``env`` and ``exec``; around them ``docker exec [options] CONTAINER`` and one
``bash -c '...'`` (or ``sh -c``), as a launch script or a playbook writes them.

Whether a flag takes a value decides what the next word is. vLLM's own parser knows (the in-image probe
reads it: pass ``switches``); without it, a flag is taken as a switch when vLLM spells its switches that
way (``--enable-...``, ``--disable-...``, ``--no-...``) or it is one of the few others (``--enforce-eager``,
``--trust-remote-code``, ``--headless``...).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass

from sparktui.core.launch.lexer import LaunchError as LaunchError  # the readers' error, as before
from sparktui.core.launch.lexer import Takes, options, read

DEFAULT_PORT = {"vllm": 8000, "sglang": 30000}
#: vLLM's and SGLang's switches that are not spelled --enable-/--disable-/--no-.
SWITCHES = frozenset(
    {
        "--enforce-eager",
        "--trust-remote-code",
        "--headless",
        "--aggregate-engine-logging",
        "--skip-tokenizer-init",
        "--fully-sharded-loras",
        "--numa-bind",
        "--tokens-only",
        "--log-error-stack",
        "--kv-sharing-fast-prefill",
        "--language-model-only",
        "--mm-encoder-only",
        "--skip-mm-profiling",
        "--interleave-mm-strings",
        "--use-tqdm-on-load",
        "--return-tokens-as-token-ids",
        "--allow-credentials",
        "--dcp-q-replicate",
        "--ray-workers-use-nsight",
        "--specialize-active-lora",
        "--use-fp64-gumbel",
        "--use-replayssm",
        "--swa-bounded-replay",
        "--sleep-mode-offload-cudagraph",
        "--return-sampling-mask",
        "--mm-device-do-normalize",
        "--exclude-tools-when-tool-choice-none",
        "--trust-request-chat-template",
        "--trust-request-mm-kwargs",
        "--allow-deprecated-quantization",
        "--cohere-is-reasoning-model",
        "--data-parallel-external-lb",
        "--data-parallel-hybrid-lb",
        "--data-parallel-multi-port-external-lb",
        "--fail-on-environ-validation",
        "--grpc",
        "--cudagraph-metrics",
        "--jit-monitor-verbose",
        "--kv-cache-metrics",
        "--async-scheduling",
        "--long-prefill-token-threshold-adaptive",
        "--scheduler-reserve-full-isl",
        "-ep",
        "-dpe",
        "-dph",
        "-dpm",
        "-h",
        "--help",
        "--version",
        # SGLang
        "--skip-server-warmup",
        "--is-embedding",
        "--log-requests",
        "--show-time-cost",
        "--crash-dump-folder-on",
    }
)
_SWITCH_PREFIXES = ("--enable-", "--disable-", "--no-")
#: Flags spelt like switches that take a value.
_VALUED = frozenset({"--disable-access-log-for-endpoints"})
#: Each setting under the flags that give it (both engines; an alias of one is never a flag of the other).
_ALIASES: dict[str, tuple[str, ...]] = {
    "model": ("--model", "--model-path"),
    "tp": ("--tensor-parallel-size", "-tp", "--tp-size", "--tp"),
    "pp": ("--pipeline-parallel-size", "-pp", "--pp-size", "--pp"),
    "dp": ("--data-parallel-size", "-dp", "--dp-size", "--dp"),
    "nnodes": ("--nnodes", "-n"),
    "node_rank": ("--node-rank", "-r"),
    "executor": ("--distributed-executor-backend",),
    "port": ("--port",),
    "host": ("--host",),
}


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


def is_switch(flag: str) -> bool:
    """Whether a vLLM or SGLang flag takes no value, as far as known without the engine's own parser."""
    return flag in SWITCHES or (flag.startswith(_SWITCH_PREFIXES) and flag not in _VALUED)


def parse_launch(command: str, switches: Callable[[str], bool] | Collection[str] | None = None) -> Launch:
    """The launch in ``command``. ``switches`` says which flags take no value (a set of them, or a test);
    by default :func:`is_switch`. Raises :class:`LaunchError` for anything else."""
    takes_none: Callable[[str], bool]
    if switches is None:
        takes_none = is_switch
    elif callable(switches):
        takes_none = switches
    else:
        takes_none = frozenset(switches).__contains__

    line = read(command)
    first = line.operators[0] if line.operators else ""
    if first and not (first == "|" or (first == "&" and not line.after)):
        raise LaunchError(f"shell operator {first!r}: give the launch alone")
    engine = line.engine
    given = options(line.args, lambda flag: Takes.NOTHING if takes_none(flag) else Takes.ONE)
    by_flag = {flag: name for name, flags in _ALIASES.items() for flag in flags}
    values = {by_flag[o.flag]: (o.values[0] if o.values else "") for o in given if o.flag in by_flag}
    flags = [o.flag for o in given if o.flag]
    positional = [o.values[0] for o in given if not o.flag]
    model = values.get("model") or (positional[0] if positional else "")
    if not model:
        raise LaunchError("no model in the launch command (vllm serve MODEL, --model or --model-path)")
    return Launch(
        engine=engine,
        command=command,
        model=model,
        tensor_parallel=_whole(values, "tp") or 1,
        pipeline_parallel=_whole(values, "pp") or 1,
        data_parallel=_whole(values, "dp") or 1,
        nnodes=_whole(values, "nnodes"),
        node_rank=_whole(values, "node_rank"),
        executor=values.get("executor", ""),
        port=_whole(values, "port") or DEFAULT_PORT[engine],
        host=values.get("host", ""),
        headless="--headless" in flags,
        container=line.container,
        env=line.env,
        flags=tuple(flags),
    )


def _whole(values: dict[str, str], name: str) -> int | None:
    raw = values.get(name)
    if raw is None:
        return None
    if not raw.isdigit():
        flag = _ALIASES[name][0]
        raise LaunchError(f"{flag} {raw!r}: not a whole number")
    return int(raw)
