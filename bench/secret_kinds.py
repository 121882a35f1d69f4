"""Which kinds of secret redaction catches, and that it stays linear on lines made to slow it down.

    python bench/secret_kinds.py [--against CHECKOUT] [--mb 2]

The kinds are the rule families of the common secret scanners (gitleaks, trufflehog, detect-secrets): a token
of each, made up here in its documented shape (its prefix, alphabet and length; seeded, so every run has the
same), stands bare in a log line, as a log would print it. A kind is caught when none of its secret part is
left in the redacted line. ``--against`` imports sparktui from another checkout (the figure before a change).

Then times :func:`redact` on lines built to make a pattern try hard (runs of the characters a token is made of,
after each prefix; one long run of base64 on a line that names AWS), at ``--mb`` and twice that: a linear
redaction takes about twice as long on twice the text.
"""

from __future__ import annotations

import argparse
import random
import string
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_RNG = random.Random(20261206)
ALNUM = string.ascii_letters + string.digits
LOWER_HEX = "0123456789abcdef"
URL_SAFE = ALNUM + "_-"
BASE64 = ALNUM + "+/"


def token(alphabet: str, length: int) -> str:
    return "".join(_RNG.choice(alphabet) for _ in range(length))


def aws_secret() -> str:
    """40 characters of base64 with both cases and a digit, as AWS issues them."""
    while True:
        value = token(BASE64, 40)
        if any(c.isupper() for c in value) and any(c.islower() for c in value) and any(c.isdigit() for c in value):
            return value


#: (kind, the line a log prints, the secret part that must go). Families as the scanners group them.
KINDS: list[tuple[str, str, str]] = []


def kind(name: str, line: str, secret: str) -> None:
    KINDS.append((name, line.format(secret), secret))


kind("Hugging Face token", "Using token {} for the hub", "hf_" + token(ALNUM, 34))
kind("Hugging Face org token", "org token {}", "api_org_" + token(ALNUM, 34))
kind("OpenAI project key", "client key {} set", "sk-proj-" + token(URL_SAFE, 48))
kind("Anthropic API key", "anthropic key {}", "sk-ant-api03-" + token(URL_SAFE, 93) + "AA")
kind("AWS access key id", "creds {} in use", "AKIA" + token(string.ascii_uppercase + "234567", 16))
kind("AWS session key id", "temporary creds {}", "ASIA" + token(string.ascii_uppercase + "234567", 16))
kind("AWS secret access key, bare (AWS named on its line)", "aws credentials loaded: {}", aws_secret())
kind("GitHub personal token", "cloning with {}", "ghp_" + token(ALNUM, 36))
kind("GitHub fine-grained token", "GH {}", "github_pat_" + token(ALNUM, 22) + "_" + token(ALNUM, 59))
kind("GitHub app token", "installation token {}", "ghs_" + token(ALNUM, 36))
kind("GitLab personal token", "remote uses {}", "glpat-" + token(URL_SAFE, 20))
kind("GitLab deploy token", "deploy {}", "gldt-" + token(URL_SAFE, 20))
kind("GitLab runner token", "runner {}", "glrt-" + token(URL_SAFE, 20))
kind("GitLab CI job token", "job {}", "glcbt-" + token(URL_SAFE, 20))
kind("GitLab runner registration", "register {}", "GR1348941" + token(URL_SAFE, 20))
kind("Slack bot token", "bot {}", f"xoxb-{token(string.digits, 12)}-{token(string.digits, 13)}-{token(ALNUM, 24)}")
kind(
    "Slack user token", "user {}", f"xoxp-{token(string.digits, 12)}-{token(string.digits, 13)}-{token(LOWER_HEX, 32)}"
)
kind(
    "Slack app token",
    "socket {}",
    f"xapp-1-A{token(string.ascii_uppercase + string.digits, 10)}-{token(string.digits, 13)}-{token(LOWER_HEX, 64)}",
)
kind(
    "Slack webhook",
    "posting to https://{}",
    f"hooks.slack.com/services/T{token(ALNUM, 10)}/B{token(ALNUM, 10)}/{token(ALNUM, 24)}",
)
kind(
    "Discord webhook", "notify https://{}", f"discord.com/api/webhooks/{token(string.digits, 18)}/{token(URL_SAFE, 68)}"
)
kind("npm token", "registry auth {}", "npm_" + token(ALNUM, 36))
kind("PyPI token", "upload with {}", "pypi-AgEIcHlwaS5vcmc" + token(URL_SAFE, 70))
kind("Google API key", "maps key {}", "AIza" + token(URL_SAFE, 35))
kind("Google OAuth client secret", "client secret {}", "GOCSPX-" + token(URL_SAFE, 28))
kind("Google OAuth access token", "access {}", "ya29." + token(URL_SAFE, 80))
kind("Azure client secret", "sp secret {}", token(ALNUM, 3) + "8Q~" + token(ALNUM + "_~.-", 34))
kind(
    "Azure storage account key",
    "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={};EndpointSuffix=core.windows.net",
    token(BASE64, 86) + "==",
)
kind(
    "Azure SAS signature",
    "GET https://acct.blob.core.windows.net/c/f?sv=2022-11-02&sp=r&sig={}",
    token(BASE64, 43) + "%3D",
)
kind("Stripe secret key", "charging with {}", "sk_live_" + token(ALNUM, 99))
kind("Stripe restricted key", "reporting with {}", "rk_live_" + token(ALNUM, 24))
kind("Stripe webhook secret", "verifying {}", "whsec_" + token(ALNUM, 32))
kind("SendGrid key", "mail {}", f"SG.{token(URL_SAFE, 22)}.{token(URL_SAFE, 43)}")
kind("DigitalOcean token", "doctl {}", "dop_v1_" + token(LOWER_HEX, 64))
kind("Databricks token", "workspace {}", "dapi" + token(LOWER_HEX, 32))
kind("Shopify token", "shop {}", "shpat_" + token(LOWER_HEX, 32))
kind("HashiCorp Vault token", "vault {}", "hvs." + token(URL_SAFE, 90))
kind("Terraform Cloud token", "tfc {}", f"{token(ALNUM, 14)}.atlasv1.{token(URL_SAFE, 67)}")
kind("Grafana service account", "grafana {}", f"glsa_{token(ALNUM, 32)}_{token(LOWER_HEX, 8)}")
kind("Postman key", "postman {}", f"PMAK-{token(LOWER_HEX, 24)}-{token(LOWER_HEX, 34)}")
kind("Linear key", "linear {}", "lin_api_" + token(ALNUM, 40))
kind("Replicate token", "replicate {}", "r8_" + token(ALNUM, 37))
kind("Groq key", "groq {}", "gsk_" + token(ALNUM, 52))
kind("Perplexity key", "pplx {}", "pplx-" + token(ALNUM, 48))
kind("NVIDIA API key", "ngc {}", "nvapi-" + token(URL_SAFE, 64))
kind("Pulumi token", "pulumi {}", "pul-" + token(LOWER_HEX, 40))
kind("Atlassian token", "jira {}", "ATATT3" + token(URL_SAFE, 186))
kind("Doppler token", "doppler {}", "dp.pt." + token(ALNUM, 43))
kind(
    "Telegram bot token",
    "bot https://api.telegram.org/bot{}/send",
    f"{token(string.digits, 10)}:AA{token(URL_SAFE, 33)}",
)
kind("age secret key", "identity {}", "AGE-SECRET-KEY-1" + token("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L".upper(), 58))
kind("JWT", "kube token {}", f"eyJ{token(URL_SAFE, 20)}.eyJ{token(URL_SAFE, 40)}.{token(URL_SAFE, 43)}")


def caught(redact: object, line: str, secret: str) -> bool:
    out = redact(line)  # type: ignore[operator]
    body = secret[len(secret) // 4 :]  # the part past any prefix a redaction keeps
    return body not in out and secret not in out


def timing(redact: object, mb: float) -> list[tuple[str, float, float]]:
    """Seconds to redact each slow-down text at ``mb`` MB and at twice that."""
    prefixes = ["xoxb-", "glpat-", "npm_", "AIza", "sig=", "dapi", "sk_live_", "aws key "]
    rows = []
    for prefix in prefixes:
        times = []
        for size in (mb, 2 * mb):
            run = int(size * 1e6)
            text = prefix + ("a" * run if prefix != "aws key " else "A1b/" * (run // 4))
            start = time.perf_counter()
            redact(text)  # type: ignore[operator]
            times.append(time.perf_counter() - start)
        rows.append((prefix, times[0], times[1]))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--against", type=Path, default=ROOT, help="the checkout whose sparktui is measured")
    parser.add_argument("--mb", type=float, default=2.0, help="size of the slow-down texts, in MB")
    args = parser.parse_args()
    sys.path.insert(0, str(args.against.resolve()))
    from sparktui.core.redact import redact

    hits = 0
    width = max(len(name) for name, _, _ in KINDS)
    for name, line, secret in KINDS:
        ok = caught(redact, line, secret)
        hits += ok
        print(f"{name:<{width}}  {'caught' if ok else 'LEAKS'}")
    print(f"\n{hits} of {len(KINDS)} kinds caught ({args.against})\n")
    print(f"{'a long run after':<16} {args.mb:>6.1f} MB  {2 * args.mb:>6.1f} MB  ratio")
    for prefix, once, twice in timing(redact, args.mb):
        print(f"{prefix!r:<16} {once:>8.3f} s {twice:>8.3f} s  {twice / once:5.2f}")


if __name__ == "__main__":
    main()
