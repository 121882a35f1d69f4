"""Redaction: secrets go wherever they stand, real logs stay untouched, lines stay lines, and hosts get the
same placeholder everywhere."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bench.secret_kinds import KINDS, caught
from sparktui.core.redact import PEM_LINES, REDACTED, PieceRedactor, Redactor, redact
from sparktui.core.report.export import redact_bundle
from sparktui.core.sources import bundle

from ..conftest import FIXTURES, ROOT

DEMO = ROOT / "sparktui" / "demo" / "second-communicator"

#: (line, the secret in it, what must stay around it)
SECRETS = [
    ("export HF_TOKEN=hf_aBcDeFgHiJkLmNoPqRsTuVwXyZ01234567", "hf_aBcDeFgHiJkLmNoPqRsTuVwXyZ01234567", "HF_TOKEN="),
    ("Using token hf_aBcDeFgHiJkLmNoPqRsTuVwXyZ01234567 for the hub", "aBcDeFgHiJkLmNoPqRsTu", "Using token hf_"),
    ("docker run -e HUGGING_FACE_HUB_TOKEN='hf_secretvalue' img", "hf_secretvalue", "HUGGING_FACE_HUB_TOKEN='"),
    ("key sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz012345 leaked", "AbCdEfGhIjKlMnOpQrStUvWxYz", "key sk-"),
    ("vllm serve m --api-key hunter2hunter2 --port 8000", "hunter2", "--api-key [REDACTED] --port 8000"),
    ("vllm serve m --api-key=hunter2hunter2", "hunter2", "--api-key="),
    ("python -m sglang.launch_server --hf-token hunter2hunter2", "hunter2", "--hf-token "),
    ("argv: ['vllm', 'serve', '--api-key', 'hunter2hunter2', '--port', '8000']", "hunter2", "'--port', '8000'"),
    ("non-default args: {'api_key': ['hunter2', 'other'], 'model': 'x'}", "hunter2", "'model': 'x'"),
    ('{"hf_token": "hunter2hunter2", "port": 8000}', "hunter2", '"port": 8000'),
    ("Namespace(api_key='hunter2hunter2', port=8000)", "hunter2", "port=8000"),
    ("AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE", "IOSFODNN7EXAMPLE", "AWS_ACCESS_KEY_ID="),
    ("creds AKIAIOSFODNN7EXAMPLE in a sentence", "IOSFODNN7EXAMPLE", "creds AKIA"),
    ("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCY", "wJalrXUtnFEMI", "AWS_SECRET_ACCESS_KEY="),
    ("GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123456789", "ghp_abcdefghij", "GITHUB_TOKEN="),
    ("MY_SERVICE_SECRET=s3cr3t-value rest", "s3cr3t-value", " rest"),
    ('PASSWORD=hunter2 DB_PASSWORD="pass with space"', "pass with space", 'DB_PASSWORD="'),
    ("PASSWORD=hunter2hunter2", "hunter2", "PASSWORD="),
    ("curl -H 'Authorization: Bearer abc.def.ghi-123' http://x", "abc.def.ghi-123", "Authorization: Bearer "),
    ('headers={"Authorization": "Basic dXNlcjpwYXNz"}', "dXNlcjpwYXNz", '"Authorization": "Basic '),
    ("sent Bearer eyJhbGciOiJIUzI1NiJ9abcdef to the proxy", "eyJhbGciOiJIUzI1NiJ9abcdef", "sent Bearer "),
    ("git clone https://builder:pa55w0rd@git.example.com/x.git", "pa55w0rd", "https://builder:"),
    ("HTTPS_PROXY=http://proxy:pa55w0rd@proxy.example.com:3128", "pa55w0rd", "@proxy.example.com:3128"),
    ("GET /v1/models?token=abcd1234&stream=1", "abcd1234", "&stream=1"),
    (
        "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "dozjgNryP4J3jVmNHl0w5N",
        "jwt eyJ",
    ),
    # the trial's new kinds (2026-12c X6), bare in a line as a log prints them
    ("bot xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx ready", "AbCdEfGhIjKlMnOp", "bot xoxb-"),
    ("remote https://gitlab.example/x.git token glpat-Ab1Cd2Ef3Gh4Ij5Kl6Mn", "Ab1Cd2Ef3Gh4Ij5Kl6Mn", "token glpat-"),
    ("npm notice auth npm_Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0Uv1Wx2Yz done", "Ab1Cd2Ef3Gh4", "npm notice auth npm_"),
    ("aws configure: secret wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY set", "wJalrXUtnFEMI", "aws configure: secret "),
    ("AKIAIOSFODNN7EXAMPLE wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "K7MDENG", "AKIA"),
    ("places key AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY in use", "9tSrke72PouQMnMX", "places key AIza"),
    (
        "conn AccountName=acct;AccountKey=Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4;EndpointSuffix=x",
        "Zm9vYmFy",
        ";EndpointSuffix=x",
    ),
    ("charging sk_live_51HxAbCdEfGhIjKlMnOpQrStUv", "51HxAbCdEfGhIjKlMnOp", "charging sk_live_"),
    ("GH github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789ABCDEF", "abcdefghijkl", "GH github_pat_"),
    ("hub org api_org_AbCdEfGhIjKlMnOpQrStUvWxYz012345 ok", "AbCdEfGhIjKlMnOp", "hub org api_org_"),
]

#: Lines that look close to a secret and are not one: they must come back unchanged.
CLEAN = [
    "TOKENIZERS_PARALLELISM=false max_num_batched_tokens=8192 max_tokens=16",
    "To enable token authentication, set RAY_AUTH_MODE=token.",
    "Namespace(api_key=None, hf_token=None)",
    "HF_TOKEN=$HF_TOKEN docker run -e HF_TOKEN img",
    "vllm serve m --ssl-keyfile /etc/ssl/key.pem --tokenizer Qwen/Qwen2.5-7B",
    "PWD=/home/nvidia OLDPWD=/ KEY_COLUMN=",
    "spark-a:839:839 [0] NCCL INFO NCCL_IB_PKEY set by environment to 0",
    "https://docs.ray.io/en/latest/ray-security/token-auth.html",
    "disk-usage 93% task-id=7",
    "    for prefix, group in itertools.groupby(weights_by_parts, key=lambda x: x[0][0]):",
    "non-default args: {'host': '127.0.0.1', 'port': 18441, 'api_key': '***', 'served_model_name': ['qwen-tiny']}",
    # near the new kinds' shapes, and none of them
    "aws s3 cp s3://bucket/3f2e52c1a2b3c4d5e6f708192a3b4c5d6e7f8091 . # the commit's digest, hex",
    "aws region us-east-1 layer sha256:ABCDEFGHIJKLMNOPQRSTUVWXYZABCDEFGHIJKLMN",
    "loading model-00001-of-00004.safetensors from /models/QwenABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
    "glibc 2.39, gloo backend: global rank 0; glpat- and npm_ without a token after them",
    "GET /v1/files?sig=abc&sv=1 200",
]


@pytest.mark.parametrize(("line", "secret", "kept"), SECRETS)
def test_a_secret_goes_and_its_context_stays(line: str, secret: str, kept: str) -> None:
    out = redact(line)
    assert secret not in out
    assert kept in out
    assert REDACTED in out
    assert redact(out) == out


@pytest.mark.parametrize(("kind", "line", "secret"), KINDS, ids=[k for k, _, _ in KINDS])
def test_every_kind_the_scanners_know_goes(kind: str, line: str, secret: str) -> None:
    """The bench's table of secret kinds (bench/secret_kinds.py: the families of gitleaks, trufflehog and
    detect-secrets, a token of each in its shape) is caught whole."""
    assert caught(redact, line, secret)


@pytest.mark.parametrize("line", CLEAN)
def test_what_is_not_a_secret_stays(line: str) -> None:
    assert redact(line) == line


#: Every captured file but the programs' --help texts, which show the flags that take secrets with their
#: placeholders (``--api-key API_KEY``) and are no logs. A capture of a server given a key on purpose holds
#: that key, which alone must go (GIVEN_KEYS).
LOGS = sorted(
    p
    for p in [*FIXTURES.rglob("*"), *DEMO.rglob("*")]
    if p.is_file() and p.suffix != ".toml" and not p.parent.name.endswith("-help")
)


#: Fixture folders whose capture gave a secret on purpose (tools/capture/vllm: `--api-key`), with its value.
GIVEN_KEYS = {"vllm/served-model-name-api-key": "sparktui-capture"}


@pytest.mark.parametrize("path", LOGS, ids=lambda p: str(p.relative_to(ROOT)))
def test_real_logs_come_back_unchanged(path: Path) -> None:
    """The captured logs carry no secret but the ones given on purpose; redaction must not touch another
    character of them."""
    text = path.read_text(encoding="utf-8", errors="replace")
    secret = GIVEN_KEYS.get(path.parent.relative_to(FIXTURES).as_posix()) if path.is_relative_to(FIXTURES) else None
    assert redact(text) == (text.replace(secret, REDACTED) if secret else text)


def test_a_private_key_goes_line_by_line() -> None:
    key = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\nAAAAB3NzaC1yc2E\n-----END OPENSSH PRIVATE KEY-----"
    text = f"before\n{key}\nafter"
    out = redact(text)
    assert "b3BlbnNzaC1rZXk" not in out and "AAAAB3NzaC1yc2E" not in out
    assert out.split("\n") == ["before", REDACTED, REDACTED, REDACTED, REDACTED, "after"]


def test_a_key_is_followed_across_pieces_but_not_forever() -> None:
    """A BEGIN line whose END never comes blanks at most PEM_LINES lines of the pieces after it."""
    pieces = PieceRedactor()
    assert (
        pieces("log line\n-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n") == f"log line\n{REDACTED}\n{REDACTED}\n"
    )
    assert pieces("more\n" * (PEM_LINES - 2)) == f"{REDACTED}\n" * (PEM_LINES - 2)
    assert pieces("a log line again\n") == "a log line again\n"  # past the longest key: no key was open
    assert pieces("x\n-----END RSA PRIVATE KEY-----\ny\n") == "x\n-----END RSA PRIVATE KEY-----\ny\n"


def test_redaction_never_changes_the_number_of_lines() -> None:
    text = "\n".join(line for line, _, _ in SECRETS)
    assert redact(text).count("\n") == text.count("\n")
    assert [redact(line) for line in text.split("\n")] == redact(text).split("\n")


def test_hosts_are_left_alone_unless_asked() -> None:
    line = "spark-a:839:839 [0] NCCL INFO Bootstrap: Using eth0:10.0.0.17<0>"
    assert Redactor().text(line) == line


def test_the_same_host_gets_the_same_placeholder_everywhere() -> None:
    r = Redactor(anonymise_hosts=True)
    first = "spark-a:839:839 [0] NCCL INFO Bootstrap: Using eth0:10.0.0.17<0>"
    second = "rank 1 on spark-b connects to spark-a at 10.0.0.17:29500 from 10.0.0.18"
    third = "spark-b:841:841 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.18<0>"
    for text in (first, second, third):
        r.learn(text)
    assert r.text(first) == "node-1:839:839 [0] NCCL INFO Bootstrap: Using eth0:198.51.100.1<0>"
    assert r.text(second) == "rank 1 on node-2 connects to node-1 at 198.51.100.1:29500 from 198.51.100.2"
    assert r.text(third) == "node-2:841:841 [0] NCCL INFO NET/Socket : Using [0]eth0:198.51.100.2<0>"
    assert r.text(first) == r.text(first)
    assert (r.node("spark-a"), r.node("SPARK-B"), r.node("10.0.0.17")) == ("node-1", "node-2", "198.51.100.1")


def test_hosts_are_learnt_from_where_logs_name_them() -> None:
    r = Redactor(anonymise_hosts=True)
    texts = [
        "(RayWorkerWrapper pid=12, ip=10.0.0.5) gpu-a:12:40 [0] NCCL INFO Channel 00/02",
        "NCCL_HOSTID set by environment to gpu-b",
        "MASTER_ADDR=gpu-c MASTER_PORT=29500",
        "python -m sglang.launch_server --dist-init-addr gpu-d:5000 --host 0.0.0.0",
        "Uvicorn running on http://gpu-e:8000 (Press CTRL+C to quit)",
        "ssh://nvidia@gpu-f/docker/vllm_node",
        "rank0_hostname=gpu-g",
    ]
    for text in texts:
        r.learn(text)
    assert [r.node(f"gpu-{c}") for c in "abcdefg"] == [f"node-{n}" for n in range(1, 8)]
    assert r.text("gpu-a gpu-b gpu-c gpu-d gpu-e gpu-f gpu-g") == " ".join(f"node-{n}" for n in range(1, 8))


def test_private_registries_and_hosts_in_urls_with_a_user_are_hosts() -> None:
    """The registry of an image reference is a host of the user's (by its port, or by its DNS name where the
    reference has a tag), as is the host of a URL with a user in it; public registries and hubs, and
    documentation links, say nothing of the user's network and stay."""
    r = Redactor(anonymise_hosts=True)
    texts = [
        "Unable to find image 'registry.example:5000/team/vllm:26.05' locally",
        "docker pull registry.corp.example/inference/vllm@sha256:" + "0" * 64,
        "git clone https://builder:[REDACTED]@git.corp.example/ml/serve.git",
        "docker run nvcr.io/nvidia/vllm:26.05-py3 and docker.io/rayproject/ray:2.40.0",
        "pulled from registry-1.docker.io/library/busybox:latest via huggingface.co/Qwen/Qwen3-8B:main",
        "See https://docs.ray.io/en/latest/cluster/running-applications/job-submission/index.html",
        "File lib/python3.11/site-packages/torch/distributed/rendezvous.py:123 in Qwen/Qwen2.5-7B:main",
    ]
    for text in texts:
        r.learn(text)
    assert [r.node(h) for h in ("registry.example", "registry.corp.example", "git.corp.example")] == [
        "node-1",
        "node-2",
        "node-3",
    ]
    assert r.text(texts[0]) == "Unable to find image 'node-1:5000/team/vllm:26.05' locally"
    for text in texts[3:]:
        assert r.text(text) == text


def test_a_host_seen_late_is_replaced_early_too() -> None:
    r = Redactor(anonymise_hosts=True)
    early, late = "waiting for spark-b to join", "spark-b:841:841 [0] NCCL INFO Init COMPLETE"
    r.learn(early)
    r.learn(late)
    assert r.text(early) == "waiting for node-1 to join"


def test_given_hosts_come_first() -> None:
    r = Redactor(anonymise_hosts=True, hosts=["head-node", "192.168.100.10", "worker-node"])
    r.learn("gpu-x:1:1 [0] NCCL INFO Init START")
    assert [r.node(h) for h in ("head-node", "worker-node", "gpu-x")] == ["node-1", "node-2", "node-3"]
    assert r.text("ssh nvidia@192.168.100.10 on head-node.cluster.local") == (
        "ssh nvidia@198.51.100.1 on node-1.cluster.local"
    )


def test_what_is_not_a_host_stays() -> None:
    r = Redactor(anonymise_hosts=True)
    r.learn("head:1:1 [0] NCCL INFO Init START")  # a host really named "head"
    line = (
        "ray start --head --port 6379 at 127.0.0.1 and ::1; NCCL 2.28.9, driver 580.95.05, mask 255.255.255.0, "
        "0.0.0.0:8000, c10d::ProcessGroupNCCL, version 1.2.3.4.5, localhost"
    )
    assert r.text(line) == line
    assert r.node("worker") == "worker"  # a node named after its file is not a host


def test_ipv6_addresses_are_replaced() -> None:
    r = Redactor(anonymise_hosts=True)
    out = r.text("peer [2001:4860:4860::8888]:29500 and fe80::1%eth0 and 2001:4860:4860::8888 again")
    assert out == "peer [2001:db8::1]:29500 and 2001:db8::2%eth0 and 2001:db8::1 again"


def test_a_bundle_is_redacted_whole(tmp_path: Path) -> None:
    source = tmp_path / "source"
    shutil.copytree(DEMO, source)
    log = source / "spark-b" / "nccl.log"
    lines = log.read_text().split("\n")
    lines[5] += " HF_TOKEN=hf_PlantedTokenForTheBundleTest0123"
    log.write_text("\n".join(lines))
    manifest = source / "bundle.toml"
    manifest.write_text(manifest.read_text().replace('title = "', 'title = "api_key=PlantedTitleKey '))
    target = tmp_path / "target"
    written = redact_bundle(source, target, anonymise_hosts=True)
    assert written[-1] == target / "bundle.toml"
    for path in written:
        text = path.read_text()
        assert "Planted" not in text and "spark-a" not in text and "spark-b" not in text, path
    copy = bundle.load(target)
    assert [(s.name, s.node) for s in copy.sources] == [("node-1/nccl.log", "node-1"), ("node-2/nccl.log", "node-2")]
    assert copy.title.startswith("api_key=[REDACTED] ")
    assert copy.duration_ms == bundle.load(DEMO).duration_ms
    for theirs, ours in zip(bundle.load(source).sources, copy.sources, strict=True):
        assert ours.path.with_name(ours.path.name + ".times").read_text() == (
            theirs.path.with_name(theirs.path.name + ".times").read_text()
        )
        assert len(ours.path.read_text().splitlines()) == len(theirs.path.read_text().splitlines())
