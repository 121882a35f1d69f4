"""Redaction: secrets taken out of everything sparktui exports or keeps (reports, bundles, the spool of a
live session), host names and addresses replaced on request.

Secrets are recognised by where they stand (``HF_TOKEN=…``, ``--api-key …``, ``"api_key": "…"``,
``Authorization: Bearer …``, ``https://user:…@host``) and by their shape wherever they stand (Hugging
Face, OpenAI-style, AWS, GitHub, GitLab, Slack, npm, Google, Azure, Stripe tokens, JWTs and more: the
families the common secret scanners know, :data:`_TOKENS`), and a bare AWS secret access key on a line that
speaks of AWS. The name, the option or the scheme stays, so a reader still sees *that* a token was given;
only the value becomes :data:`REDACTED`.

Armoured blocks (PEM private keys, certificates, PGP blocks: ``-----BEGIN … KEY-----`` to ``-----END …-----``)
go whole, each of their lines becoming :data:`REDACTED`, and so does the part of one that a text holds when
it was cut out of a longer one (:func:`redact`: some lines around an evidence line, a block of a log file):
its lines up to an END line whose BEGIN came before the text, and from a BEGIN line whose END comes after it
(at most :data:`PEM_LINES` lines either way). A text that comes in pieces is followed from piece to piece
(:class:`PieceRedactor`).

With ``anonymise_hosts`` a :class:`Redactor` also replaces host names and addresses, consistently: the same
host gets the same placeholder in every text, file name and node field it handles (``node-1``,
``node-2`` ...). Host names are the names the logs put in a host position (the NCCL ``host:pid:tid``
prefix, ``NCCL_HOSTID=``, ``MASTER_ADDR=``, ``--host``, ``--dist-init-addr``, a URL with a port or a
user, an ``ssh://`` source, the registry of an image reference: ``host:port/…``, or a dotted name before a
path with a tag, ``registry.corp.example/team/vllm:0.9``) plus the names the caller gives (the cluster file's
nodes); a node name made up from a file name (``head``, ``worker``) is not a host name and stays, and
neither do public registries and hubs (``nvcr.io``, ``docker.io``, ``huggingface.co``...): they say where an
image or a model came from, nothing of the user's network. A documentation link (a URL with neither port
nor user) names no host of the user's either. Addresses are every IPv4 and IPv6 address
except loopback and unspecified ones; they become documentation addresses (``198.51.100.N``,
``2001:db8::N``) so a signature that expects an address still matches when the logs are analysed again.
Call :meth:`Redactor.learn` on every text first, so a host seen only in the last file is replaced in the
first one too.

Every rule keeps to one line: redacting a log never changes its number of lines, so line numbers and
``.times`` files stay true.
"""

from __future__ import annotations

import functools
import ipaddress
import re
from collections.abc import Callable, Iterable

from sparktui.core.classify import nccl_hosts
from sparktui.core.search.engines import Engine, word_engine

REDACTED = "[REDACTED]"

_WORDS = r"(?:token|key|secret|password|passwd|pass|passphrase|credentials?|apikey)"
_NAME = rf"(?:[A-Za-z0-9]+[_.-])*{_WORDS}"
_QUOTED = r"'[^'\n]*'|\"[^\"\n]*\""
_VALUE = rf"{_QUOTED}|\[[^\]\n]*\]|[^\s'\",;)}}\]&]+"
#: Values that say no secret was given; they stay so the reader knows. With them the words of Python that can
#: follow ``=`` in a keyword argument, as a traceback's source lines show one (``key=lambda x: x[0]``).
_EMPTY = frozenset({"", "none", "null", "nil", "true", "false", REDACTED.lower(), "lambda", "not", "await", "yield"})
#: A value the program masked itself (vLLM prints ``'api_key': '***'``): nothing left to hide.
_MASKED = re.compile(r"\*{3,}")

#: The label of an armoured block whose body is redacted: a key (private or public), a certificate (or a
#: request for one) or a PGP block.
_ARMOUR = r"(?=[A-Z0-9 ]*(?:KEY|CERTIFICATE|PGP))[A-Z0-9 ]+"
_PEM = re.compile(rf"-----BEGIN {_ARMOUR}-----.*?-----END {_ARMOUR}-----", re.DOTALL)
_PEM_BEGIN = re.compile(rf"-----BEGIN {_ARMOUR}-----")
_PEM_END = re.compile(rf"-----END {_ARMOUR}-----")
_LINE_TEXT = re.compile(r"[^\n]+")
#: The most lines a private key that began in one piece of a stream is followed into the next ones (one of
#: RSA's longest, 16384 bits, takes about 210): past it, what followed a stray BEGIN line was no key.
PEM_LINES = 256
_URL_PASSWORD = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://[^\s/@:'\"]*):([^\s/@'\"]+)@")
_AUTHORIZATION = re.compile(
    r"(\bauthorization['\"]?[ \t]*[:=][ \t]*['\"]?(?:(?:bearer|basic|token|digest|apikey)[ \t]+)?)([^\s'\",]+)",
    re.IGNORECASE,
)
_BEARER = re.compile(r"\b(Bearer[ \t]+)([A-Za-z0-9._~+/=-]{8,})")
_ARGV = re.compile(rf"((['\"])--?{_NAME}\2,[ \t]*)({_QUOTED})", re.IGNORECASE)
_OPTION = re.compile(rf"(?<![\w-])(--?{_NAME}(?:=|[ \t]+))(?!-)({_VALUE})", re.IGNORECASE)
_KEYED = re.compile(rf"((['\"]){_NAME}\2[ \t]*:[ \t]*)({_QUOTED}|\[[^\]\n]*\])", re.IGNORECASE)
_ASSIGNED = re.compile(rf"(?<![\w.-])({_NAME}[ \t]*=[ \t]*)({_VALUE})", re.IGNORECASE)


#: Tokens known by their shape wherever they stand, by family (the families the common secret scanners know:
#: gitleaks, trufflehog, detect-secrets), each written here as (lower-case words one of which the line must hold,
#: the pattern, whose group ``keep`` is what stays: the part that says what the token is, never a secret). Each is
#: a literal prefix and a run of one character class, or a few, so every one is matched in linear time; each is
#: a rule of its own, looked for only on the lines that hold one of its words. A word is looked for in every
#: block redacted: the fewer and the longer, the faster.
_WORD_START = r"(?<![A-Za-z0-9_])"
_TOKENS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("hf_",), r"(?P<keep>hf_)[A-Za-z0-9]{20,}"),  # Hugging Face
    (("api_org_",), r"(?P<keep>api_org_)[A-Za-z0-9]{30,}"),  # Hugging Face, an organisation's
    (("sk-",), r"(?P<keep>sk-)(?:proj-|ant-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"),  # OpenAI, Anthropic, DeepSeek...
    (("akia", "asia"), r"(?P<keep>AKIA|ASIA)[0-9A-Z]{16}(?![0-9A-Z])"),  # AWS, an access key's id
    (("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"), r"(?P<keep>gh[pousr]_|github_pat_)[A-Za-z0-9_]{30,}"),
    (("eyj",), r"(?P<keep>eyJ)[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),  # a JWT
    (("xox",), r"(?P<keep>xox[abposre]-|xoxe\.xox[bp]-)[0-9A-Za-z-]{10,}"),  # Slack: bot, user, app, refresh...
    (("xapp-",), r"(?P<keep>xapp-)\d-[A-Z0-9]{6,}-\d{6,}-[a-z0-9]{20,}"),  # Slack, an app-level token
    (("hooks.slack.com/",), r"(?P<keep>hooks\.slack\.com/(?:services|workflows|triggers)/)[A-Za-z0-9_/+-]{20,}"),
    (("/api/webhooks/",), r"(?P<keep>discord(?:app)?\.com/api/webhooks/\d{5,}/)[A-Za-z0-9_-]{40,}"),
    # GitLab: personal, OAuth application, deploy, runner, CI job, pipeline trigger, feed, incoming mail, agent,
    # SCIM, feature flag client and workspace tokens (all ``gl…-``), Grafana's (``glsa_``, ``glc_``), and
    # GitLab's runner registration token
    (("gl",), r"(?P<keep>gl(?:pat|oas|dt|rt|cbt|ptt|ft|imt|agent|soat|ffct|wt)-)[0-9A-Za-z_.-]{20,}"),
    (("gl",), r"(?P<keep>glsa_)[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}"),
    (("gl",), r"(?P<keep>glc_)[A-Za-z0-9+/]{32,}={0,2}"),
    (("gr1348941",), r"(?P<keep>GR1348941)[0-9A-Za-z_-]{20,}"),
    (("npm_",), r"(?P<keep>npm_)[A-Za-z0-9]{36,}"),  # npm
    (("pypi-",), r"(?P<keep>pypi-)AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}"),  # PyPI
    (("aiza",), r"(?P<keep>AIza)[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])"),  # Google API key
    (("gocspx-",), r"(?P<keep>GOCSPX-)[0-9A-Za-z_-]{28}"),  # Google OAuth client secret
    (("ya29.",), r"(?P<keep>ya29\.)[0-9A-Za-z_-]{20,}"),  # Google OAuth access token
    (("q~",), r"(?P<keep>)[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,34}"),  # Azure (Entra ID) client secret
    # Azure connection strings (storage, Service Bus, Event Hubs) and shared access signatures
    (
        ("accountkey=", "sharedaccess"),
        r"(?P<keep>(?i:AccountKey|SharedAccessKey|SharedAccessSignature)=)[^;\s'\"]{16,}",
    ),
    (("sig=",), r"(?P<keep>(?<=[?&])sig=)[A-Za-z0-9%/+]{20,}={0,2}"),
    (("_live_", "_test_"), r"(?P<keep>[sr]k_(?:live|test)_)[0-9A-Za-z]{10,99}"),  # Stripe, secret and restricted
    (("whsec_",), r"(?P<keep>whsec_)[A-Za-z0-9+/]{24,}"),  # Stripe, a webhook's signing secret
    (("sg.",), r"(?P<keep>SG\.)[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}"),  # SendGrid
    (("dop_v1_", "doo_v1_", "dor_v1_"), r"(?P<keep>do[opr]_v1_)[a-f0-9]{64}"),  # DigitalOcean
    (("dapi",), r"(?P<keep>dapi)[a-f0-9]{32}(?:-\d)?(?![A-Za-z0-9])"),  # Databricks
    (("shpat_", "shpss_"), r"(?P<keep>shp(?:at|ca|pa|ss)_)[a-fA-F0-9]{32}"),  # Shopify
    (("hvs.",), r"(?P<keep>hvs\.)[A-Za-z0-9_-]{24,}"),  # HashiCorp Vault
    ((".atlasv1.",), r"(?P<keep>)[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,}"),  # Terraform Cloud
    (("pmak-",), r"(?P<keep>PMAK-)[a-f0-9]{24}-[a-f0-9]{34}"),  # Postman
    (("lin_api_",), r"(?P<keep>lin_api_)[A-Za-z0-9]{40}"),  # Linear
    (("r8_",), r"(?P<keep>r8_)[A-Za-z0-9]{37}"),  # Replicate
    (("gsk_",), r"(?P<keep>gsk_)[A-Za-z0-9]{48,}"),  # Groq
    (("pplx-",), r"(?P<keep>pplx-)[A-Za-z0-9]{48,}"),  # Perplexity
    (("nvapi-",), r"(?P<keep>nvapi-)[A-Za-z0-9_-]{40,}"),  # NVIDIA (NGC, build.nvidia.com)
    (("pul-",), r"(?P<keep>pul-)[a-f0-9]{40}"),  # Pulumi
    (("atatt3",), r"(?P<keep>ATATT3)[A-Za-z0-9_=-]{100,}"),  # Atlassian
    (("dp.pt.",), r"(?P<keep>dp\.pt\.)[A-Za-z0-9]{40,}"),  # Doppler
    (("age-secret-key-1",), r"(?P<keep>AGE-SECRET-KEY-1)[0-9A-Z]{58}"),  # age
)
#: Tokens that may follow a letter: a Telegram bot's token comes right after ``/bot`` in the API's URLs.
_GLUED: tuple[tuple[tuple[str, ...], str], ...] = (((":aa",), r"(?<!\d)(?P<keep>\d{8,10}:)AA[0-9A-Za-z_-]{33}"),)
#: A bare AWS secret access key: 40 characters of base64 standing alone, on a line that speaks of AWS (a token
#: of that shape elsewhere is as likely a hash). One of mixed case and digits only (:func:`_aws_secret`): a hex
#: digest is not one.
_AWS_SECRET = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")

_HOST = r"[a-z0-9](?:[\w.-]{0,251}[a-z0-9])?"
_DNS = r"(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}"  # a dotted name ending in a word
_HOST_OPTIONS = r"host|hostname|master[-_]addr|node[-_]ip[-_]address|dist[-_]init[-_]addr|address"
#: Where logs name a host besides the NCCL line prefix, matched in the lower-cased text: (a word the text must
#: contain, the pattern whose group 1 is the host).
_LEARN = (
    ("host", re.compile(rf"host(?:name|id)(?:[ \t]*[=:][ \t]*| set by environment to )['\"]?({_HOST})")),
    ("master_addr", re.compile(rf"master_addr[ \t]*[=:][ \t]*['\"]?({_HOST})")),
    ("--", re.compile(rf"--(?:{_HOST_OPTIONS})[= \t]+['\"]?({_HOST})")),
    ("://", re.compile(rf"://(?:[^@/\s]*@)?({_HOST}):\d")),
    ("ssh://", re.compile(rf"ssh://(?:[^@/\s]*@)?({_HOST})")),
    ("@", re.compile(rf"://[^@/\s'\"]*@({_HOST})")),  # a URL with a user in it: a private host, port or not
    # A host and port before a path, as a registry in an image reference (registry.example:5000/team/vllm).
    ("/", re.compile(rf"(?<![\w./@:-])({_HOST}):\d{{1,5}}/[a-z0-9]")),
    # An image reference with a registry by its DNS name, told from a path by its tag or digest
    # (registry.corp.example/team/vllm:0.9).
    (
        "/",
        re.compile(
            rf"(?<![\w./@:-])({_DNS})/[a-z0-9._-]+(?:/[a-z0-9._-]+)*(?::\w[\w.-]{{0,127}}|@sha256:[0-9a-f]{{64}})"
        ),
    ),
)
_NOT_HOSTS = frozenset({"localhost", "ip6-localhost", "none", "null", "true", "false", "auto"})
#: Public registries and hubs: where an image came from, not a host of the user's (a name ending in one of
#: them stays too: registry-1.docker.io, us-docker.pkg.dev).
_PUBLIC = (
    "docker.io",
    "nvcr.io",
    "ghcr.io",
    "quay.io",
    "gcr.io",
    "pkg.dev",
    "public.ecr.aws",
    "mcr.microsoft.com",
    "registry.k8s.io",
    "huggingface.co",
    "hf.co",
    "github.com",
)
_IPV4 = re.compile(r"\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}")
_IPV4_HINT = re.compile(r"\.\d{1,3}\.\d{1,3}\.\d")  # starts with a literal: searched far faster than _IPV4
_IPV4_BEFORE = re.compile(r"[\w.]")
_IPV4_AFTER = re.compile(r"\w|\.\d")
_IPV6 = re.compile(
    r"(?<![\w:.])(?:(?:[0-9A-Fa-f]{1,4}:){7}[0-9A-Fa-f]{1,4}"
    r"|(?:[0-9A-Fa-f]{1,4}(?::[0-9A-Fa-f]{1,4})*)?::(?:[0-9A-Fa-f]{1,4}(?::[0-9A-Fa-f]{1,4})*)?)(?![\w:])"
)


def redact(text: str) -> str:
    """``text`` with its secrets replaced by :data:`REDACTED` (host names and addresses kept), ``text`` taken
    as maybe cut out of a longer one: an armoured block that it holds only a part of goes too."""
    return _redact(text, cut=True)


def _redact(text: str, *, cut: bool) -> str:
    """:func:`redact`; without ``cut``, only the armoured blocks ``text`` holds whole go."""
    low = _ascii_lower(text)
    if "-----begin " in low or "-----end " in low:
        text = _PEM.sub(_pem, text)
        if cut:
            text = _cut_blocks(text)
        low = _ascii_lower(text)
    # Every rule needs one of the trigger words on its line, so only those lines are looked at closely: all
    # the words are searched for at once (:func:`_engine`).
    lines: list[str] | None = None
    for row, line_low, words in _engine().scan(low):
        rules = (
            _RULES_OF_WORDS[words[0]]
            if len(words) == 1
            else sorted(set().union(*map(_RULES_OF_WORDS.__getitem__, words)))
        )
        if lines is None:
            lines = text.split("\n")
        lines[row] = _line(lines[row], line_low, rules)
    return text if lines is None else "\n".join(lines)


class PieceRedactor:
    """:func:`redact` for one text that comes in pieces of whole lines (a live source's batches, as the
    spool keeps them): a private key that begins in one piece and ends in a later one is redacted whole,
    line for line. All it carries from one piece to the next is whether a key is open, and for how many
    lines (at most :data:`PEM_LINES`)."""

    def __init__(self) -> None:
        self._open = 0  # lines of a private key redacted so far, whose END line has not come yet

    def __call__(self, text: str) -> str:
        head = ""
        if self._open:
            end = _PEM_END.search(text)
            if end is not None:
                head, text = _LINE_TEXT.sub(REDACTED, text[: end.end()]), text[end.end() :]
                self._open = 0
            elif self._open + text.count("\n") <= PEM_LINES:
                self._open += text.count("\n")
                return _LINE_TEXT.sub(REDACTED, text)
            else:
                self._open = 0
        out = _redact(text, cut=False)  # the text is followed from its start: a lone END line ends no key
        begin = _PEM_BEGIN.search(out) if "-----BEGIN " in out else None
        if begin is not None:  # what is left is a key that ends in a later piece
            tail = out[begin.start() :]
            out = out[: begin.start()] + _LINE_TEXT.sub(REDACTED, tail)
            self._open = max(tail.count("\n"), 1)
        return head + out


def _cut_blocks(text: str) -> str:
    """``text``, whose whole armoured blocks are redacted already, with the part of a block that began before
    it (up to its first END line) and of one that ends after it (from its first BEGIN line left) redacted,
    each at most :data:`PEM_LINES` lines besides its END or BEGIN line."""
    end = _PEM_END.search(text)  # no BEGIN is left before it: that would have made a whole block
    if end is not None:
        stop = text.find("\n", end.end())
        stop = len(text) if stop < 0 else stop
        start = stop
        for _ in range(PEM_LINES + 1):
            start = text.rfind("\n", 0, start)
            if start < 0:
                break
        start += 1
        text = text[:start] + _LINE_TEXT.sub(REDACTED, text[start:stop]) + text[stop:]
    begin = _PEM_BEGIN.search(text)
    if begin is not None:
        start = text.rfind("\n", 0, begin.start()) + 1
        stop = begin.start()
        for _ in range(PEM_LINES + 1):
            stop = text.find("\n", stop + 1)
            if stop < 0:
                stop = len(text)
                break
        text = text[:start] + _LINE_TEXT.sub(REDACTED, text[start:stop]) + text[stop:]
    return text


def _line(line: str, low: str, rules: Iterable[int]) -> str:
    """``line`` (``low`` lower-cased) with the rules of indexes ``rules`` applied, in order."""
    for rule in rules:
        char, _, pattern, replacement = _LINE_RULES[rule]
        if char in low:
            line = pattern.sub(replacement, line)
    return line


def _ascii_lower(text: str) -> str:
    """Lower-cased ASCII letters, every other character kept: the same length, so positions still match."""
    if text.isascii():
        return text.lower()
    return text.encode("utf-8", "surrogatepass").lower().decode("utf-8", "surrogatepass")


def _pem(m: re.Match[str]) -> str:
    return "\n".join([REDACTED] * (m.group().count("\n") + 1))


def _value(m: re.Match[str]) -> str:
    lead, value = m.group(1), m.group(m.re.groups)
    inner = value[1:-1] if value[:1] in "'\"" else value
    if inner.strip().lower() in _EMPTY or inner.startswith("$") or _MASKED.fullmatch(inner):
        return m.group()
    if value[:1] in "'\"":
        return f"{lead}{value[0]}{REDACTED}{value[0]}"
    return f"{lead}{REDACTED}"


def _shape(m: re.Match[str]) -> str:
    return f"{m.group('keep')}{REDACTED}"


def _aws_secret(m: re.Match[str]) -> str:
    token = m.group()
    mixed = not token.isdigit() and token.lower() != token and token.upper() != token
    return REDACTED if mixed and any(c.isdigit() for c in token) else token


#: The lower-case words one of which every name that :data:`_WORDS` allows holds.
_NAMED = ("token", "key", "secret", "pass", "credential")
#: The lower-case words that say a line speaks of AWS.
_AWS = ("aws", "akia", "asia", "amazon")

#: Rules for one line: (a word the lower-cased line must contain for the rule to apply, the words of which it
#: must contain one, pattern, replacement). The words only spare a pattern lines it cannot match.
_LINE_RULES: tuple[tuple[str, tuple[str, ...], re.Pattern[str], str | Callable[[re.Match[str]], str]], ...] = (
    ("://", ("://",), _URL_PASSWORD, rf"\1:{REDACTED}@"),
    ("authori", ("authori",), _AUTHORIZATION, rf"\1{REDACTED}"),
    ("bearer", ("bearer",), _BEARER, rf"\1{REDACTED}"),
    ("-", _NAMED, _ARGV, _value),
    ("-", _NAMED, _OPTION, _value),
    (":", _NAMED, _KEYED, _value),
    ("=", _NAMED, _ASSIGNED, _value),
    *(("", words, re.compile(f"{_WORD_START}{pattern}"), _shape) for words, pattern in _TOKENS),
    *(("", words, re.compile(pattern), _shape) for words, pattern in _GLUED),
    ("", _AWS, _AWS_SECRET, _aws_secret),
)
#: Lower-case words of which every rule needs one on the line it matches, and for each (by its index) the
#: indexes of the rules it lets apply, in order. All are looked for in one search of a block
#: (:func:`_engine`): one pass over the text, however many words there are.
_WORDS_OF_RULES = tuple(dict.fromkeys(word for _, words, _, _ in _LINE_RULES for word in words))
_RULES_OF_WORDS = tuple(
    tuple(rule for rule, (_, words, _, _) in enumerate(_LINE_RULES) if word in words) for word in _WORDS_OF_RULES
)


@functools.cache
def _engine() -> Engine:
    """The engine that finds the lines holding one of :data:`_WORDS_OF_RULES`, with the words each holds."""
    return word_engine(_WORDS_OF_RULES)


class Redactor:
    """Redacts secrets (unless ``secrets`` is false) and, with ``anonymise_hosts``, replaces host names and
    addresses; ``hosts`` are names or addresses known to be hosts, numbered first, in the order given."""

    def __init__(self, *, secrets: bool = True, anonymise_hosts: bool = False, hosts: Iterable[str] = ()) -> None:
        self.secrets = secrets
        self.anonymise_hosts = anonymise_hosts
        self._names: dict[str, str] = {}  # lower-cased host name -> node-N
        self._addresses: dict[str, str] = {}  # canonical address -> documentation address
        self._counts = {4: 0, 6: 0}
        for host in hosts if anonymise_hosts else ():
            if _address(host):
                self._placeholder(host)
            else:
                self._add(host)

    def learn(self, text: str) -> None:
        """Note the host names ``text`` puts in a host position (only when anonymising hosts)."""
        if not self.anonymise_hosts:
            return
        low = _ascii_lower(text)
        found = [_ascii_lower(host) for host in nccl_hosts(text)]
        found += [name for word, pattern in _LEARN if word in low for name in pattern.findall(low)]
        for name in found:
            if name in self._names or name in _NOT_HOSTS or name.isdigit() or _address(name) or _public(name):
                continue
            self._add(name)

    def text(self, text: str) -> str:
        """``text`` with its secrets redacted and, when anonymising, its hosts and addresses replaced."""
        if self.secrets:
            text = redact(text)
        if not self.anonymise_hosts:
            return text
        if self._names:
            text = self._hosts(text)
        return self._ipv6(self._ipv4(text))

    def node(self, name: str) -> str:
        """A node name as shown in a node field: its placeholder when it is a host or an address."""
        if not self.anonymise_hosts:
            return name
        if _address(name):
            return self._placeholder(name) or name
        return self._names.get(name.lower(), name)

    def _add(self, name: str) -> None:
        if name.lower() not in self._names:
            self._names[name.lower()] = f"node-{len(self._names) + 1}"

    def _hosts(self, text: str) -> str:
        """Host names replaced where they stand as a whole name (not inside a longer one); each is looked
        for with ``str.find``, far faster than a pattern of all of them."""
        low = _ascii_lower(text)
        found: list[tuple[int, int, str]] = []
        for name, placeholder in self._names.items():
            start = low.find(name)
            while start >= 0:
                end = start + len(name)
                if not (_in_name(low, start - 1) or _in_name(low, end)):
                    found.append((start, -end, placeholder))
                start = low.find(name, start + 1)
        pieces: list[str] = []
        done = 0
        for start, end, placeholder in sorted(found):  # at one place, the longest name first
            if start >= done:
                pieces += [text[done:start], placeholder]
                done = -end
        return "".join([*pieces, text[done:]]) if pieces else text

    def _ipv4(self, text: str) -> str:
        """Addresses replaced; each is found from the ``.N.N.N`` it must hold, which is quick to search for."""
        pieces: list[str] = []
        done = 0
        hint = _IPV4_HINT.search(text)
        while hint is not None:
            start = hint.start()
            while start > hint.start() - 3 and start > done and text[start - 1].isdigit():
                start -= 1
            m = _IPV4.match(text, start)
            if m is None or (start and _IPV4_BEFORE.match(text, start - 1)) or _IPV4_AFTER.match(text, m.end()):
                hint = _IPV4_HINT.search(text, hint.start() + 1)  # part of a longer number, version or name
                continue
            pieces += [text[done:start], self._placeholder(m.group()) or m.group()]
            done = m.end()
            hint = _IPV4_HINT.search(text, done)
        return "".join([*pieces, text[done:]]) if pieces else text

    def _ipv6(self, text: str) -> str:
        """Addresses replaced, on the lines that can hold one (a ``::`` or seven colons)."""
        if "::" not in text and text.count(":") < 7:
            return text
        lines = text.split("\n")
        for i, line in enumerate(lines):
            if "::" in line or line.count(":") >= 7:
                lines[i] = _IPV6.sub(lambda m: self._placeholder(m.group()) or m.group(), line)
        return "\n".join(lines)

    def _placeholder(self, text: str) -> str | None:
        """The documentation address standing for ``text``; None for what is not an address worth hiding."""
        address = _address(text)
        if address is None or address.is_loopback or address.is_unspecified:
            return None
        if address.version == 4 and address.packed[0] in (0, 255):  # 0.x and netmasks
            return None
        key = address.compressed
        if key not in self._addresses:
            n = self._counts[address.version]
            self._counts[address.version] += 1
            self._addresses[key] = (
                f"198.51.{100 + n // 254}.{n % 254 + 1}" if address.version == 4 else f"2001:db8::{n + 1:x}"
            )
        return self._addresses[key]


def _public(name: str) -> bool:
    """Whether ``name`` is one of the :data:`_PUBLIC` services or a name under one."""
    return any(name == p or name.endswith(f".{p}") for p in _PUBLIC)


def _in_name(text: str, index: int) -> bool:
    """Whether the character at ``index`` would continue a host name (so a match there is part of another)."""
    return 0 <= index < len(text) and (text[index].isalnum() or text[index] in "_-")


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    if address.version == 6 and len([g for g in text.split(":") if g]) < 2 and not address.is_loopback:
        return None  # "c10d::" and the like: a C++ scope, not an address
    return address
