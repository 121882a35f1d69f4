"""The one launch lexer, and the cases where the two readers it replaced (the pre-launch reader's and the
translator's) read the same command differently: each is read now as a shell user means it, by both."""

from __future__ import annotations

import pytest

from sparktui.core.launch.lexer import LaunchError, NotALaunch, Option, Takes, options, read, without_env
from sparktui.core.launch.serve import parse_launch
from sparktui.core.launch.sglang_to_vllm import TranslateError, sglang_to_vllm

SGLANG = "python3 -m sglang.launch_server"


def test_quoting_as_a_posix_shell_quotes() -> None:
    line = read("""vllm serve '/models/my model' --served-model-name "it's \\"q\\" \\$HOME" --api-key a\\ b""")
    assert line.args == ("/models/my model", "--served-model-name", 'it\'s "q" $HOME', "--api-key", "a b")


@pytest.mark.parametrize(
    "program",
    [
        *("python3", "python", "python3.12", "/usr/bin/python3.12", "'/opt/my env/bin/python3'"),
        *("python3 -u -B", "python3 -X faulthandler -W ignore", "python3 -Xdev -OO"),
    ],
)
def test_python_with_its_own_options_before_m(program: str) -> None:
    """serve.py took any path without a blank and skipped every -word (so '-X dev' broke it); the translator
    took python[0-9.]* under any path and only switches (-u, -B ...). Now: python, python3 or python3.N under
    any path, python's switches, and -W/-X with their values."""
    assert read(f"{program} -m sglang.launch_server --model-path m").engine == "sglang"
    assert parse_launch(f"{program} -m vllm.entrypoints.openai.api_server --model m").model == "m"
    assert sglang_to_vllm(f"{program} -m sglang.launch_server --model-path m").argv[:3] == ("vllm", "serve", "m")


@pytest.mark.parametrize("program", ["python2", "pythonista", "python3 train.py", "python3 -c 'x' -m vllm"])
def test_what_is_not_python_running_an_engine(program: str) -> None:
    with pytest.raises(NotALaunch):
        read(f"{program} -m sglang.launch_server --model-path m")


def test_line_continuations_with_blanks_after_the_backslash_and_crlf() -> None:
    """The translator allowed blanks after the backslash and CRLF; serve.py took only backslash-newline."""
    command = "NCCL_DEBUG=INFO \\  \r\n vllm serve m \\\t\n  --tensor-parallel-size 2 \\\r\n  --port 8001"
    launch = parse_launch(command)
    assert (launch.env, launch.tensor_parallel, launch.port) == ((("NCCL_DEBUG", "INFO"),), 2, 8001)


@pytest.mark.parametrize("number", ["-1", "-.5", "-0.25", "-1e-3"])
def test_a_negative_number_is_a_value_not_a_flag(number: str) -> None:
    """serve.py took only -N and -N.N as numbers (so -.5 and -1e-3 were flags); the translator any - followed
    by a digit or .digit. Now the translator's rule, in both."""
    assert options(["--x", number, "--y"], lambda _: Takes.ONE) == [Option("--x", (number,)), Option("--y", ())]
    launch = parse_launch(f"vllm serve m --some-factor {number} --port 8001")
    assert (launch.model, launch.port) == ("m", 8001)
    t = sglang_to_vllm(f"{SGLANG} --model-path m --chunked-prefill-size -1", mode="native")
    assert t.argv[3:] == ("--no-enable-chunked-prefill",)


def test_flag_equals_value_and_flag_value_read_alike() -> None:
    spaced = parse_launch("vllm serve m --tensor-parallel-size 2 --port 8001 -pp 2")
    joined = parse_launch("vllm serve m --tensor-parallel-size=2 --port=8001 -pp=2")
    assert (spaced.world_size, spaced.port) == (joined.world_size, joined.port) == (4, 8001)


def test_each_engine_reads_its_own_aliases() -> None:
    """serve.py shared one table of aliases between the engines, the translator had SGLang's: now each engine
    its own, as its parser takes them (SGLang's argparse takes --tp for --tp-size; vLLM has no --tp)."""
    assert parse_launch("vllm serve m -tp 2 -pp 2 -dp 2").world_size == 4
    assert parse_launch(f"{SGLANG} --model-path m --tp 2 --pp-size 2 --dp 2").world_size == 4
    assert parse_launch("sglang serve m --tensor-parallel-size 2").tensor_parallel == 2
    assert parse_launch("vllm serve m --tp 2").tensor_parallel == 1


def test_what_follows_the_launch() -> None:
    """serve.py read '2>&1', '|' and 'tee' as words of the launch; the translator refused any ';', '&' or '|'.
    Now a redirection is no word, and a launch may be piped into a log or sent to the background: the reader
    reads it, the translator (whose vllm serve replaces the whole command) says what it cannot carry."""
    piped = "vllm serve m --port 8001 > /tmp/vllm.log 2>&1 | tee -a all.log"
    assert read(piped).redirections == (">/tmp/vllm.log", "2>&1")
    assert read(piped).after == ("tee", "-a", "all.log")
    assert parse_launch(piped).port == 8001 and parse_launch(piped).flags == ("--port",)
    assert parse_launch("vllm serve m --port 8001 &").port == 8001
    assert parse_launch("vllm serve m --port 8001 2>&1 | tee log &").port == 8001
    assert read("vllm serve m &").background and not read("vllm serve m & vllm serve n").background
    for command in (
        "vllm serve m && echo up",
        "vllm serve m; echo done",
        "vllm serve m & vllm serve n",
        "vllm serve m | tee log; rm log",
    ):
        with pytest.raises(LaunchError, match=r"shell operator '(&&|;|&)': give the launch alone"):
            parse_launch(command)
    with pytest.raises(TranslateError, match="redirection '2>&1': give the SGLang launch alone"):
        sglang_to_vllm(f"{SGLANG} --model-path m 2>&1")


def test_sh_c_gives_its_script_the_arguments_after_dollar_zero() -> None:
    """The playbooks relaunch as `sh -c '<serve> "$@" ...' sh --more --flags`: serve.py read "$@" as a word and
    lost the flags after it, the translator refused any shell. Now "$@" gets them, as the shell gives them."""
    command = (
        "docker exec -d -e VLLM_HOST_IP=10.0.0.1 vllm_node sh -c "
        "'vllm serve /models/m --tensor-parallel-size 2 \"$@\" >/proc/1/fd/1 2>/proc/1/fd/2' "
        "sh --distributed-executor-backend ray --port 8001"
    )
    launch = parse_launch(command)
    assert (launch.container, launch.executor, launch.port, launch.world_size) == ("vllm_node", "ray", 8001, 2)
    assert launch.env == (("VLLM_HOST_IP", "10.0.0.1"),)
    t = sglang_to_vllm(f"bash -c 'exec {SGLANG} --model-path m --tp 2'", mode="native")
    assert t.command == "vllm serve m --tensor-parallel-size 2"


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ("", "empty command"),
        ("vllm serve 'm", "cannot split the command: no closing quotation"),
        ('vllm serve "m', "cannot split the command: no closing quotation"),
        ("vllm serve m\\", "cannot split the command: no escaped character"),
        ("HF_HOME=/x", "no command after the environment assignments"),
        ("docker exec -it", "docker exec without a container"),
        ("ray start --head", "not a vLLM or SGLang launch: it starts with 'ray start'"),
        ("docker run --gpus all img vllm serve m", "not a vLLM or SGLang launch: it starts with 'docker run'"),
    ],
)
def test_what_cannot_be_read_is_said_in_one_line(command: str, message: str) -> None:
    with pytest.raises(LaunchError) as caught:
        read(command)
    assert message in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("command", "left"),
    [
        ("NCCL_IB_HCA=a,b NCCL_IB_GID_INDEX=3 vllm serve /m -tp 2", "vllm serve /m -tp 2"),
        (
            "FOO=1 NCCL_IB_HCA='a b' env NCCL_IB_GID_INDEX=3 BAR=\"x y\" vllm serve /m > log 2>&1",
            'FOO=1 env BAR="x y" vllm serve /m > log 2>&1',
        ),
        (
            "NCCL_IB_HCA=a \\\n  python3 -m vllm.entrypoints.openai.api_server --model /m",
            "python3 -m vllm.entrypoints.openai.api_server --model /m",
        ),
        ("vllm serve /m --served-model-name NCCL_IB_HCA=x", "vllm serve /m --served-model-name NCCL_IB_HCA=x"),
    ],
)
def test_without_env_takes_out_only_the_assignments_in_front(command: str, left: str) -> None:
    assert without_env(command, {"NCCL_IB_HCA", "NCCL_IB_GID_INDEX"}) == left
