"""Translate an SGLang launch command into the `vllm serve` command that does the same.

`sglang_to_vllm` reads `python3 -m sglang.launch_server …` or `sglang serve …` with the one launch lexer
(:mod:`.lexer`: `exec`, `env` and VAR=value assignments in front are kept, a `bash -c` around is peeled; a
container, a redirection or a second command is refused) and sends every flag through one table: renamed,
kept, or dropped with the reason, plus a note wherever the vLLM flag is only close. SGLang's multi-node flags
become a Ray launch on the head (mode "ray") or vLLM's own multi-node flags (mode "native"). The tests check
every vLLM flag written here against captured `vllm serve --help=all` output. Pure: no I/O.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import ClassVar, Literal

from sparktui.core.errors import Invalid
from sparktui.core.launch.lexer import LaunchError, NotALaunch, Option, Takes, is_flag, options, read

Mode = Literal["ray", "native"]


@dataclass(frozen=True, slots=True)
class Dropped:
    """An SGLang flag that has no place in the vLLM command."""

    flag: str
    value: str | None
    reason: str


@dataclass(frozen=True, slots=True)
class Translation:
    """The vLLM command, the environment the SGLang command set, and what did not carry over as is."""

    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    dropped: tuple[Dropped, ...]
    notes: tuple[str, ...]

    @property
    def command(self) -> str:
        """The argv as one shell-quoted line (without the environment)."""
        return shlex.join(self.argv)

    @property
    def launch(self) -> str:
        """The command with the SGLang launch's environment in front, as one line for ``sh -c``."""
        return " ".join([*(f"{name}={shlex.quote(value)}" for name, value in self.env), self.command])


class TranslateError(Invalid):
    """The command is not an SGLang launch that can be translated; the message is one line."""


@dataclass(frozen=True, slots=True)
class _Names:
    """How the values of one flag are spelled in SGLang and in vLLM."""

    what: str
    same: frozenset[str]
    renamed: Mapping[str, str] = field(default_factory=dict)
    closed: bool = False  # vLLM accepts only its own names: an unknown value is dropped, not passed on
    hint: str = ""


@dataclass(frozen=True, slots=True)
class _Flag:
    """A flag with one value, written under vLLM's name."""

    takes: ClassVar[Takes] = Takes.ONE
    to: str
    note: str = ""
    names: _Names | None = None


@dataclass(frozen=True, slots=True)
class _Switch:
    """A switch, written under vLLM's name."""

    takes: ClassVar[Takes] = Takes.NOTHING
    to: str
    note: str = ""


@dataclass(frozen=True, slots=True)
class _Drop:
    """A flag vLLM has no counterpart for."""

    reason: str
    takes: Takes = Takes.ONE


@dataclass(frozen=True, slots=True)
class _Custom:
    """A flag with one value that takes more than a rename."""

    takes: ClassVar[Takes] = Takes.ONE
    apply: Callable[[_Out, str, str], None]


_Rule = _Flag | _Switch | _Drop | _Custom


@dataclass
class _Out:
    """The vLLM command as it is being built."""

    mode: Mode
    given: frozenset[str]  # every SGLang flag in the command
    model: str | None = None
    node_rank: int = 0
    flags: list[str] = field(default_factory=list)
    dropped: list[Dropped] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def emit(self, flag: str, value: str | None = None) -> None:
        """Writes a switch once, or a flag and its value (as one word when the value looks like a flag)."""
        if value is None:
            if flag not in self.flags:
                self.flags.append(flag)
            return
        self.shell_syntax(value)
        self.flags += [f"{flag}={value}"] if is_flag(value) else [flag, value]

    def drop(self, flag: str, value: str | None, reason: str) -> None:
        self.dropped.append(Dropped(flag, value, reason))

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def shell_syntax(self, value: str) -> None:
        if _SHELL_SYNTAX.search(value):
            self.note(
                f"{value!r} holds $ or `: if the shell that ran SGLang expanded it, put the expanded value in "
                "(the vLLM command keeps it literal)"
            )


_FLAG_NAME = re.compile(r"--?[A-Za-z0-9][A-Za-z0-9_.-]*")
_SHELL_SYNTAX = re.compile(r"[$`]")
_DIGITS = re.compile(r"\d+", re.ASCII)

_LAUNCH_FORMS = "python3 -m sglang.launch_server … or sglang serve …"
_NOT_SGLANG = {
    "vllm": "this is already a vLLM command",
    "docker": "give the command the container runs, not docker's",
    "podman": "give the command the container runs, not podman's",
}

_RAY = "Ray forms the cluster; vLLM runs only on the head"
_UNKNOWN = "no vLLM equivalent known to sparktui"
_EXPERT_PARALLEL = (
    "vLLM has no expert-parallel size: --enable-expert-parallel spreads the experts over all TP and DP ranks"
)
_DP_ATTENTION = (
    "SGLang's data-parallel attention inside the TP group has no vLLM flag; the nearest is "
    "--data-parallel-size D with --tensor-parallel-size TP/D and --enable-expert-parallel"
)
_ATTENTION = (
    "vLLM picks its attention backend itself; to force one, its --attention-backend takes vLLM's own names "
    "(FLASHINFER, FLASH_ATTN, TRITON_ATTN, FLASHINFER_MLA…)"
)
_ALL_TO_ALL = "vLLM picks the MoE all-to-all with --all2all-backend (e.g. deepep_high_throughput, deepep_low_latency)"


def _whole(flag: str, value: str, least: int) -> int:
    if not _DIGITS.fullmatch(value) or int(value) < least:
        raise TranslateError(f"{flag} wants a whole number of at least {least}, got {value!r}")
    return int(value)


def _host_port(flag: str, value: str) -> tuple[str, str]:
    host, colon, port = value.rpartition(":")
    bracketed = host.startswith("[") and host.endswith("]")
    if bracketed:
        host = host[1:-1]
    if not colon or not host or not _DIGITS.fullmatch(port) or not 0 < int(port) < 65536:
        raise TranslateError(f"{flag} wants HOST:PORT, got {value!r}")
    if ":" in host and not bracketed:
        raise TranslateError(f"{flag} {value!r}: write an IPv6 address as [address]:port")
    return host, port


def _keep(out: _Out, rule: _Flag, flag: str, value: str) -> None:
    names = rule.names
    if names is not None:
        if value in names.renamed:
            out.note(f"{flag} {value}: vLLM calls this {names.what} {names.renamed[value]!r}")
            value = names.renamed[value]
        elif value not in names.same:
            if names.closed:
                out.drop(flag, value, f"vLLM has no {names.what} {value!r}")
                return
            out.note(f"{flag} {value!r} is passed as is: sparktui does not know it as a vLLM {names.what}{names.hint}")
    out.emit(rule.to, value)
    if rule.note:
        out.note(rule.note)


def _model(out: _Out, flag: str, value: str) -> None:
    if is_flag(value):
        raise TranslateError(f"{flag} {value!r}: a model path cannot start with '-' (write ./{value})")
    out.model = value
    out.shell_syntax(value)


def _data_parallel(out: _Out, flag: str, value: str) -> None:
    if "--enable-dp-attention" in out.given:
        out.drop(flag, value, _DP_ATTENTION)
    else:
        out.emit("--data-parallel-size", value)


def _expert_parallel(out: _Out, flag: str, value: str) -> None:
    if _whole(flag, value, 1) == 1:
        out.drop(flag, value, "an expert-parallel size of 1 is no expert parallelism")
        return
    out.emit("--enable-expert-parallel")
    out.note(_EXPERT_PARALLEL)


def _chunked_prefill(out: _Out, flag: str, value: str) -> None:
    if value == "-1":
        out.emit("--no-enable-chunked-prefill")
        return
    out.emit("--max-num-batched-tokens", value)
    out.note(
        "--max-num-batched-tokens caps every token of a step (prefill and decode), "
        "SGLang's --chunked-prefill-size only a prefill chunk"
    )


def _tool_call_parser(out: _Out, flag: str, value: str) -> None:
    _keep(out, _Flag("--tool-call-parser", names=_TOOL_CALL_PARSERS), flag, value)
    out.emit("--enable-auto-tool-choice")
    out.note('--enable-auto-tool-choice added: vLLM answers tool_choice "auto" only with it')


def _chat_template(out: _Out, flag: str, value: str) -> None:
    out.emit("--chat-template", value)
    if not ("/" in value or "{" in value or value.endswith(".jinja")):
        out.note(f"{flag} {value!r} looks like an SGLang built-in template name; vLLM wants a file or the template")


def _multi_node(out: _Out, flag: str, value: str, options: dict[str, str]) -> None:
    if out.mode == "ray":
        out.drop(flag, value, _RAY)
        return
    for name, setting in options.items():
        out.emit(name, setting)


def _nnodes(out: _Out, flag: str, value: str) -> None:
    _multi_node(out, flag, value, {"--nnodes": str(_whole(flag, value, 1))})


def _node_rank(out: _Out, flag: str, value: str) -> None:
    out.node_rank = _whole(flag, value, 0)
    _multi_node(out, flag, value, {"--node-rank": str(out.node_rank)})


def _dist_init_addr(out: _Out, flag: str, value: str) -> None:
    host, port = _host_port(flag, value)
    _multi_node(out, flag, value, {"--master-addr": host, "--master-port": port})


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


def _aliases(names: str, rule: _Rule) -> dict[str, _Rule]:
    return dict.fromkeys(names.split(), rule)


_TOOL_CALL_PARSERS = _Names(
    "tool-call parser",
    _words(
        "cohere_command4 dots gemma4 gigachat3 glm45 glm47 hermes inkling k2_horizon kimi_k2 kimi_k3 lfm2 ling3 "
        "mimo minicpm5 mistral poolside_v1 pythonic qwen3_coder step3 step3p5"
    ),
    {
        "deepseekv3": "deepseek_v3",
        "deepseekv31": "deepseek_v31",
        "deepseekv32": "deepseek_v32",
        "deepseekv4": "deepseek_v4",
        "deepseekv41": "deepseek_v41",
        "gpt-oss": "openai",
        "llama3": "llama3_json",
        "minimax-m2": "minimax_m2",
        "minimax-m3": "minimax_m3",
        "muse": "muse_glimmer",
        "qwen": "hermes",
        "qwen25": "hermes",
    },
)
_REASONING_PARSERS = _Names(
    "reasoning parser",
    _words(
        "cohere_command4 gemma4 glm45 granite_thinking_parser inkling k2_horizon kimi_k2 kimi_k3 ling3 mimo "
        "mistral poolside_v1 qwen3 step3 step3p5"
    ),
    {
        "deepseek-r1": "deepseek_r1",
        "deepseek-v3": "deepseek_v3",
        "deepseek-v4": "deepseek_v4",
        "deepseek-v41": "deepseek_v41",
        "gpt-oss": "openai_gptoss",
        "minimax-append-think": "minimax_m2_append_think",
        "minimax-m3": "minimax_m3",
        "muse": "muse_glimmer",
    },
)
_QUANTIZATION = _Names(
    "quantization method",
    _words("awq awq_marlin compressed-tensors fp8 gptq gptq_marlin modelopt_fp4 modelopt_mixed moe_wna16 mxfp4 quark"),
    {"modelopt_fp8": "modelopt"},
    hint="; without --quantization vLLM reads the method from the checkpoint",
)
_DTYPES = _Names("data type", _words("auto half float16 bfloat16 float float32"), closed=True)
_KV_CACHE_DTYPES = _Names(
    "KV cache type", _words("auto fp8_e4m3 fp8_e5m2 bfloat16 nvfp4"), {"bf16": "bfloat16"}, closed=True
)
_LOAD_FORMATS = _Names("load format", _words("auto pt safetensors npcache dummy sharded_state mistral"))
_TOKENIZER_MODES = _Names("tokenizer mode", _words("auto"), closed=True)
_SCHEDULING_POLICIES = _Names("scheduling policy", _words("fcfs priority"), closed=True)
_LOG_LEVELS = _Names("log level", _words("critical error warning info debug trace"), closed=True)
_MODEL_IMPLS = _Names("model implementation", _words("auto transformers"), {"sglang": "vllm"}, closed=True)

_RULES: dict[str, _Rule] = {
    # What to serve.
    **_aliases("--model-path --model", _Custom(_model)),
    "--tokenizer-path": _Flag("--tokenizer"),
    "--tokenizer-mode": _Flag("--tokenizer-mode", names=_TOKENIZER_MODES),
    "--revision": _Flag("--revision"),
    "--served-model-name": _Flag("--served-model-name"),
    "--trust-remote-code": _Switch("--trust-remote-code"),
    "--skip-tokenizer-init": _Switch("--skip-tokenizer-init"),
    "--download-dir": _Flag("--download-dir"),
    "--load-format": _Flag("--load-format", names=_LOAD_FORMATS),
    "--model-loader-extra-config": _Flag("--model-loader-extra-config"),
    "--model-impl": _Flag("--model-impl", names=_MODEL_IMPLS),
    "--json-model-override-args": _Flag("--hf-overrides"),
    "--dtype": _Flag("--dtype", names=_DTYPES),
    "--quantization": _Flag("--quantization", names=_QUANTIZATION),
    "--kv-cache-dtype": _Flag("--kv-cache-dtype", names=_KV_CACHE_DTYPES),
    "--context-length": _Flag("--max-model-len"),
    "--chat-template": _Custom(_chat_template),
    "--reasoning-parser": _Flag("--reasoning-parser", names=_REASONING_PARSERS),
    "--tool-call-parser": _Custom(_tool_call_parser),
    "--tool-server": _Flag("--tool-server"),
    "--enable-multimodal": _Drop("vLLM enables multimodal input from the model's config", Takes.NOTHING),
    "--enable-lora": _Switch("--enable-lora"),
    "--max-lora-rank": _Flag("--max-lora-rank"),
    "--max-loras-per-batch": _Flag("--max-loras"),
    "--lora-paths": _Drop("give the adapters to vLLM as --lora-modules name=path", Takes.SOME),
    # Parallelism.
    **_aliases("--tp --tp-size --tensor-parallel-size", _Flag("--tensor-parallel-size")),
    **_aliases("--pp --pp-size --pipeline-parallel-size", _Flag("--pipeline-parallel-size")),
    **_aliases("--dp --dp-size --data-parallel-size", _Custom(_data_parallel)),
    **_aliases("--ep --ep-size --expert-parallel-size", _Custom(_expert_parallel)),
    "--enable-ep-moe": _Switch("--enable-expert-parallel", _EXPERT_PARALLEL),
    "--enable-eplb": _Switch("--enable-eplb"),
    "--enable-dp-attention": _Drop(_DP_ATTENTION, Takes.NOTHING),
    "--attn-dp-size": _Drop(_DP_ATTENTION),
    "--moe-a2a-backend": _Drop(_ALL_TO_ALL),
    "--deepep-mode": _Drop(_ALL_TO_ALL),
    "--enable-deepep-moe": _Drop(_ALL_TO_ALL, Takes.NOTHING),
    "--moe-runner-backend": _Drop("vLLM picks its MoE kernels itself"),
    "--disable-custom-all-reduce": _Switch("--disable-custom-all-reduce"),
    "--enable-p2p-check": _Drop("vLLM checks GPU peer access itself", Takes.NOTHING),
    "--enable-nccl-nvls": _Drop("SGLang only sets NCCL_NVLS_ENABLE=1: set it in the environment", Takes.NOTHING),
    "--base-gpu-id": _Drop("choose the GPUs with CUDA_VISIBLE_DEVICES"),
    "--gpu-id-step": _Drop("choose the GPUs with CUDA_VISIBLE_DEVICES"),
    "--device": _Drop("vLLM detects the platform itself"),
    # Several nodes.
    "--nnodes": _Custom(_nnodes),
    "--node-rank": _Custom(_node_rank),
    **_aliases("--dist-init-addr --nccl-init-addr", _Custom(_dist_init_addr)),
    "--dist-timeout": _Flag("--distributed-timeout-seconds"),
    "--nccl-port": _Drop("vLLM picks its own NCCL and distributed ports"),
    # Memory, batching, scheduling.
    "--mem-fraction-static": _Flag(
        "--gpu-memory-utilization",
        "--gpu-memory-utilization is close to --mem-fraction-static, not equal: SGLang's fraction holds the weights "
        "and the KV cache, vLLM's all it allocates, so the same value leaves vLLM a smaller KV cache",
    ),
    "--max-total-tokens": _Drop("vLLM sizes the KV cache from --gpu-memory-utilization or --kv-cache-memory-bytes"),
    "--max-running-requests": _Flag("--max-num-seqs"),
    "--chunked-prefill-size": _Custom(_chunked_prefill),
    "--max-prefill-tokens": _Drop("vLLM bounds the tokens of a step with --max-num-batched-tokens"),
    "--page-size": _Drop("vLLM's --block-size has its own valid sizes; vLLM picks one per attention backend"),
    "--cpu-offload-gb": _Flag("--cpu-offload-gb"),
    "--disable-radix-cache": _Switch("--no-enable-prefix-caching"),
    "--schedule-policy": _Flag("--scheduling-policy", names=_SCHEDULING_POLICIES),
    "--disable-overlap-schedule": _Switch(
        "--no-async-scheduling", "--no-async-scheduling is vLLM's counterpart of SGLang's overlap scheduler, not a twin"
    ),
    "--enable-mixed-chunk": _Drop("vLLM always batches prefill chunks with decodes", Takes.NOTHING),
    "--stream-interval": _Flag("--stream-interval"),
    # Kernels, graphs, compilation.
    **_aliases(
        "--attention-backend --prefill-attention-backend --decode-attention-backend --mm-attention-backend",
        _Drop(_ATTENTION),
    ),
    "--sampling-backend": _Drop("vLLM picks its sampler itself"),
    "--grammar-backend": _Drop(
        "vLLM takes it as --structured-outputs-config '{\"backend\": …}' (xgrammar, guidance, outlines)"
    ),
    "--disable-cuda-graph": _Switch(
        "--enforce-eager", "--enforce-eager also turns off torch.compile; for CUDA graphs only: -cc.cudagraph_mode=none"
    ),
    **_aliases(
        "--cuda-graph-max-bs --cuda-graph-max-bs-decode",
        _Flag(
            "--max-cudagraph-capture-size",
            "--max-cudagraph-capture-size counts the tokens of a step; in decode that is SGLang's batch size",
        ),
    ),
    **_aliases(
        "--cuda-graph-bs --cuda-graph-bs-decode",
        _Drop("vLLM takes the capture sizes as --cudagraph-capture-sizes", Takes.SOME),
    ),
    "--enable-torch-compile": _Drop(
        "vLLM compiles with torch.compile by default (tune it with --compilation-config)", Takes.NOTHING
    ),
    "--torch-compile-max-bs": _Drop("vLLM's compile sizes are set in --compilation-config"),
    # Server, logs, metrics.
    "--host": _Flag("--host"),
    "--port": _Flag("--port"),
    "--api-key": _Flag("--api-key"),
    "--ssl-keyfile": _Flag("--ssl-keyfile"),
    "--ssl-certfile": _Flag("--ssl-certfile"),
    "--log-level": _Drop("vLLM takes its log level from VLLM_LOGGING_LEVEL (e.g. VLLM_LOGGING_LEVEL=DEBUG)"),
    "--log-level-http": _Flag("--uvicorn-log-level", names=_LOG_LEVELS),
    "--enable-metrics": _Drop("vLLM always serves Prometheus metrics at /metrics", Takes.NOTHING),
    "--enable-cache-report": _Switch("--enable-prompt-tokens-details"),
    "--random-seed": _Flag("--seed"),
}
_FAMILIES: tuple[tuple[str, _Rule], ...] = (
    (
        "--speculative-",
        _Drop(
            "vLLM takes speculative decoding as one --speculative-config JSON (method, model, num_speculative_tokens)",
            Takes.ANY,
        ),
    ),
    ("--disaggregation-", _Drop("vLLM disaggregates prefill and decode through --kv-transfer-config", Takes.ANY)),
)
_UNKNOWN_RULE = _Drop(_UNKNOWN, Takes.ANY)


def _rule(flag: str) -> _Rule:
    if flag in _RULES:
        return _RULES[flag]
    return next((rule for prefix, rule in _FAMILIES if flag.startswith(prefix)), _UNKNOWN_RULE)


def _read(command: str) -> tuple[tuple[tuple[str, str], ...], list[Option]]:
    """The environment assignments in front of the SGLang launch, and its flags."""
    try:
        line = read(command)
    except NotALaunch as exc:
        hint = _NOT_SGLANG.get(exc.words[0].rpartition("/")[2], f"want {_LAUNCH_FORMS}")
        raise TranslateError(f"not an SGLang launch ({hint}): it starts with {shlex.join(exc.words[:2])!r}") from None
    except LaunchError as exc:
        raise TranslateError(str(exc)) from None
    if line.operators:
        raise TranslateError(f"shell operator {line.operators[0]!r}: give the SGLang launch alone")
    if line.redirections:
        raise TranslateError(f"redirection {line.redirections[0]!r}: give the SGLang launch alone")
    if line.container or line.engine != "sglang":
        hint = _NOT_SGLANG["docker" if line.container else line.engine]
        raise TranslateError(f"not an SGLang launch ({hint}): it starts with {shlex.join(line.program)!r}")
    args = line.args
    if line.program[-1] == "serve" and args and not is_flag(args[0]):  # `sglang serve MODEL …`
        args = ("--model-path", *args)
    return line.env, options(args, lambda flag: _rule(flag).takes)


def _options(given: list[Option]) -> list[tuple[str, _Rule, tuple[str, ...]]]:
    """Each flag with its rule and its values, in the order given."""
    found: list[tuple[str, _Rule, tuple[str, ...]]] = []
    for option in given:
        if not option.flag:
            after = f" after {found[-1][0]}" if found else ""
            raise TranslateError(f"unexpected argument {option.values[0]!r}{after}")
        flag = option.flag
        token = f"{flag}={option.values[0]}" if option.inline else flag
        if not _FLAG_NAME.fullmatch(flag):
            raise TranslateError(f"not a flag: {token!r}")
        rule = _rule(flag)
        if option.inline and rule.takes is Takes.NOTHING:
            raise TranslateError(f"{flag} is a switch and takes no value, got {token!r}")
        if not option.values and rule.takes in (Takes.ONE, Takes.SOME):
            raise TranslateError(f"{flag} needs a value")
        found.append((flag, rule, option.values))
    return found


def _apply(out: _Out, flag: str, rule: _Rule, values: tuple[str, ...]) -> None:
    match rule:
        case _Switch():
            out.emit(rule.to)
            if rule.note:
                out.note(rule.note)
        case _Drop():
            out.drop(flag, " ".join(values) if values else None, rule.reason)
        case _Flag():
            (value,) = values
            _keep(out, rule, flag, value)
        case _Custom():
            (value,) = values
            rule.apply(out, flag, value)


def sglang_to_vllm(command: str, *, mode: Mode = "ray") -> Translation:
    """The `vllm serve` command for an SGLang launch command.

    Mode "ray": vLLM runs on a Ray cluster, started on the head only (--distributed-executor-backend ray);
    SGLang's --nnodes, --node-rank and --dist-init-addr are dropped. Mode "native": vLLM's own multi-node
    flags (--nnodes, --node-rank, --master-addr, --master-port, and --headless on every node but rank 0).
    Raises TranslateError when the command is not an SGLang launch or cannot be read.
    """
    env, given = _read(command)
    flags = _options(given)
    out = _Out(mode, frozenset(flag for flag, _, _ in flags))
    for _, value in env:
        out.shell_syntax(value)
    for flag, rule, values in flags:
        _apply(out, flag, rule, values)
    if out.model is None:
        raise TranslateError("no model: the SGLang command has no --model-path")
    if mode == "ray":
        out.emit("--distributed-executor-backend", "ray")
        if out.node_rank:
            out.note(
                f"this is node rank {out.node_rank}'s command: with Ray only the head runs vllm serve, "
                "the other nodes only join the Ray cluster"
            )
    elif out.node_rank:
        out.emit("--headless")
    if not out.node_rank:
        if "--host" not in out.given:
            out.note("no --host: SGLang listened on 127.0.0.1 only, vLLM listens on every interface")
        if "--port" not in out.given:
            out.note("no --port: SGLang served on port 30000, vLLM serves on 8000")
    return Translation(("vllm", "serve", out.model, *out.flags), env, tuple(out.dropped), tuple(out.notes))
