"""Messages of shared libraries and binaries: their printable strings (what ``strings`` prints, done here in
Python so that the result does not hang on binutils), kept where they look like something printed.

Heuristics (every kind):

- a run of at least 12 printable ASCII characters with a space in it and at least three words of two or more
  letters (two where it holds a printf conversion), at least half of it letters (or holding a conversion);
- not PTX (``.extern ...``), not a C++ signature or template name (``ncclResult_t f(int)``, ``a<b>``,
  ``x::y``), not a path or a format made only of conversions.

Then per kind:

- ``nccl`` (libnccl): a printf conversion, or wording of a message: failed, error, unable, cannot, could not,
  timeout, invalid, mismatch, abort, connect, socket, bootstrap, ``NET/``, ``Using``, ...;
- ``c10d`` (libtorch, libc10): C++ builds its messages from pieces (``c10::str``), so the pieces are kept where
  they name distributed things: c10d, TCPStore, ProcessGroup, Watchdog, NCCL, Gloo, store, rendezvous, rank,
  collective, heartbeat, barrier, socket, timed out, send/recv, connect, address, server/client, or CUDA's
  out of memory and capability;
- ``ray`` (raylet, gcs_server, _raylet.so; RAY_LOG streams pieces too): the pieces that name Ray things: GCS,
  raylet, node, worker, actor, placement group, object store, plasma, Redis, cluster, lease, without the
  vendored gRPC and protobuf strings;
- ``generic`` (ptxas, nvcc, safetensors' Rust library): failure wording or a printf conversion;
- ``all`` (libcudart, whose strings are its error descriptions): every string that looks like a message.

The level is ``native-error`` where the text reads as a failure (fail, error, unable, cannot, timeout, ...),
else ``native``: a binary does not say at what level it prints a string.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

RUN = re.compile(rb"[\x20-\x7e]{12,}")
PRINTF = re.compile(r"%[-#0 +]*(?:\*|\d+)?(?:\.(?:\*|\d+))?[hlLqjzt]*[diouxXeEfFgGcsp]")
WORD = re.compile(r"[A-Za-z]{2,}")
NOT_MESSAGE = re.compile(
    r"^\.|::|<[\w ,*&:]+>|^[\w:<>*& ]+\([\w:<>*&, ]*\)(?: const)?$|^/|^[\w.]+\.(?:cc|cpp|h|hpp|cu|py|so)$|"
    r"^(?:std|boost|absl|grpc|google|bazel|external)\b"
)
#: Ray's binaries carry gRPC, its load balancers and resolvers, and protobuf: not Ray's own messages.
VENDORED = re.compile(
    r"(?i)grpc|xds|_lb\b|\[RR |chttp2|tsi_|c-ares|ares_|ZeroCopy|upb_|lb_calld|subchannel|%p|protobuf|\.proto\b"
)
FAILURE = re.compile(
    r"(?i)fail|error|unable|cannot|can't|could not|couldn't|timeout|timed out|invalid|mismatch|abort|refused|"
    r"denied|not found|no such|exceed|lost|died|dead|killed|unreachable|not available|unavailable|too small|"
    r"too large|not supported|unsupported|expected"
)
KEYWORDS = {
    "nccl": re.compile(
        r"(?i)connect|socket|bootstrap|NET/|\bUsing\b|NCCL|retry|closed|warn|init|version|interface|\bIB\b|"
        r"plugin|proxy|shm|cuda|driver|\bP2P\b|channel|transport|rank"
    ),
    "c10d": re.compile(
        r"c10d|TCPStore|ProcessGroup|Watchdog|watchdog|NCCL|Gloo|gloo|\bstore\b|Store|rendezvous|\brank\b|Rank|"
        r"collective|heartbeat|barrier|[Ss]ocket|[Tt]imed out|timeout|world size|\bPG\b|Work|recv|send|[Cc]onnect|"
        r"address|[Ss]erver|[Cc]lient|shutdown|out of memory|CUDA capability|GPU"
    ),
    "ray": re.compile(
        r"GCS|gcs|[Rr]aylet|\bnode\b|Node|[Ww]orker|[Aa]ctor|placement group|[Oo]bject store|plasma|[Rr]edis|"
        r"[Cc]luster|lease|[Hh]ead|RPC|rpc|port|address|dead|heartbeat|[Rr]esource|infeasible|[Ss]chedul"
    ),
    # the CUDA runtime's error strings, the compilers' (ptxas, nvcc) and safetensors' messages: any failure
    # wording or printf format (the rule of ``nccl`` without its keywords)
    "generic": re.compile(r"(?!)"),
    "all": re.compile(r""),
}


def runs(data: bytes) -> Iterator[str]:
    """The printable runs of a binary (as ``strings -n 12`` finds them)."""
    for m in RUN.finditer(data):
        # Rust strings end in no NUL, so a run may begin with the tail of the string before: a quote or comma
        yield m.group().decode("ascii").strip().lstrip("\"'`,;")


def looks_like_message(text: str) -> bool:
    formatted = PRINTF.search(text) is not None
    if len(text) < 12 or len(text) > 400 or " " not in text or len(WORD.findall(text)) < (2 if formatted else 3):
        return False
    letters = sum(ch.isalpha() for ch in text)
    if letters < 0.5 * len(text) and not PRINTF.search(text):
        return False
    return not NOT_MESSAGE.search(text)


def messages(data: bytes, kind: str) -> Iterator[tuple[str, str]]:
    """(level, template) of each string of ``data`` kept by the heuristics of ``kind``."""
    keyword = KEYWORDS[kind]
    seen: set[str] = set()
    for text in runs(data):
        if text in seen or not looks_like_message(text):
            continue
        seen.add(text)
        failure = bool(FAILURE.search(text))
        if kind in ("nccl", "generic"):
            keep = failure or PRINTF.search(text) is not None or keyword.search(text) is not None
        else:
            keep = keyword.search(text) is not None and not (kind == "ray" and VENDORED.search(text))
        if not keep:
            continue
        yield ("native-error" if failure else "native"), template(text)


#: A printf conversion (``%s``, ``%%``), or a field of C++ fmt (``{}``, ``{:d}``, ``{0}``), as c10d writes them.
FIELD = re.compile(r"%[-#0 +]*(?:\*|\d+)?(?:\.(?:\*|\d+))?[hlLqjzt]*[diouxXeEfFgGcsp]|%%|\{\d*(?::[^{}]*)?\}")


def template(text: str) -> str:
    """A string of a binary as a template: printf conversions and fmt fields are placeholders."""
    out, last = [], 0
    for m in FIELD.finditer(text):
        field = m.group()
        out.append(text[last : m.start()].replace("{", "{{").replace("}", "}}"))
        if field == "%%":
            out.append("%")
        elif field.startswith("{"):
            out.append(field)  # fmt's own field syntax is the template's
        else:
            out.append("{" + field + "}")
        last = m.end()
    out.append(text[last:].replace("{", "{{").replace("}", "}}"))
    return "".join(out)
