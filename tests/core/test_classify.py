"""Which program, layer, process and node each line comes from, across the prefix formats of §0.1."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparktui.core.classify import (
    BARE_NCCL,
    FORMATS,
    PANES,
    PREFIXES,
    PROGRAMS,
    classify,
    nccl_hosts,
    node_in,
    peeled_by,
)
from sparktui.core.formats import FormatError, load_prefixes, load_programs

from ..conftest import FIXTURES

# The programs' own formats are checked by their examples (diagnostics/formats/programs.toml, through
# tests/catalogue/test_examples.py); these are what no format claims and how the formats fit together.


def test_a_line_no_format_knows_is_other_with_what_its_prefixes_said() -> None:
    got = classify("[rank3]: just some text")
    assert (got.program, got.layer, got.level, got.rank) == ("other", "other", "", 3)


def test_every_program_a_format_files_under_has_a_pane() -> None:
    assert {f.program for f in FORMATS} <= set(PROGRAMS) and set(PANES.values()) == {"nccl", "ray", "engine", "other"}


def test_the_nccl_block_scan_finds_the_host_the_nccl_format_reads() -> None:
    """node_in() and nccl_hosts() look for NCCL's prefix in a whole block with their own pattern; on every
    example of the nccl format that carries no launcher prefix they agree with the format's host."""
    nccl = next(f for f in FORMATS if f.id == "nccl")
    own = [e for e in nccl.examples if not e["line"].startswith("(")]
    assert own and all(node_in(e["line"]) == nccl_hosts(e["line"])[0] == e["node"] for e in own)


def test_vllm_process_names_are_layers() -> None:
    assert classify("(APIServer pid=1) INFO 11-30 04:55:01 [api_server.py:1] x").layer == "vllm:APIServer"


def test_lines_that_begin_with_nccl_own_prefix_lose_nothing_to_the_launchers_prefixes() -> None:
    """classify() skips peeling for a line that starts with ``host:pid:tid [dev]``; no prefix may take
    anything off such a line, in any captured log or any prefix's own example."""
    lines = [e["line"] for p in PREFIXES for e in p.examples]
    for path in FIXTURES.rglob("*.log"):
        lines += path.read_text(encoding="utf-8", errors="replace").split("\n")
    bare = [line for line in lines if BARE_NCCL.match(line)]
    assert len(bare) > 10_000
    assert [line for line in bare if peeled_by(line)] == []


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("[[prefixes]]\nwhat = 'x'\npattern = '^x'\n", "prefixes[0].id: needs a non-empty string"),
        ("[[prefixes]]\nid = 'x'\nwhat = 'x'\npattern = '^(x'\n", "prefixes[0].pattern: not a regular expression"),
        ("[[prefixes]]\nid = 'x'\nwhat = 'x'\npattern = '^x'\nneeds = ['a']\n", "prefixes[0].needs: unknown key"),
        ("prefixes = 3\n", "prefixes: needs an array of [[prefixes]] tables"),
        ("[[prefixes]\n", "not valid TOML"),
    ],
)
def test_a_broken_prefix_file_is_refused_in_one_line_naming_the_key(tmp_path: Path, text: str, said: str) -> None:
    path = tmp_path / "prefixes.toml"
    path.write_text(text)
    with pytest.raises(FormatError) as refused:
        load_prefixes(path)
    message = str(refused.value)
    assert message.startswith(f"{path}: ") and said in message and "\n" not in message


def test_the_built_in_prefixes_load_whole() -> None:
    assert [p.id for p in load_prefixes()] == [p.id for p in PREFIXES] and all(p.examples for p in PREFIXES)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            "[[programs]]\nname = 'x'\npane = 'x'\n[[formats]]\nid = 'y'\nprogram = 'z'\nlayer = 'y'\nwhat = 'y'\n"
            "pattern = '^y'\n",
            "formats[0].program: 'z' is not one of x",
        ),
        (
            "[[programs]]\nname = 'x'\npane = 'x'\n[[formats]]\nid = 'y'\nprogram = 'x'\nlayer = 'y'\nwhat = 'y'\n",
            "formats[0].pattern: a format needs a pattern, words or prefixed",
        ),
        (
            "[[programs]]\nname = 'x'\npane = 'x'\n[[formats]]\nid = 'y'\nprogram = 'x'\nlayer = 'y'\nwhat = 'y'\n"
            "prefixed = ['ray']\n",
            "formats[0].prefixed: 'ray' is not one of",
        ),
        ("[[programs]]\nname = 'x'\npane = 'x'\nshown = true\n", "programs[0].shown: unknown key"),
    ],
)
def test_a_broken_programs_file_is_refused_in_one_line_naming_the_key(tmp_path: Path, text: str, said: str) -> None:
    path = tmp_path / "programs.toml"
    path.write_text(text)
    with pytest.raises(FormatError) as refused:
        load_programs(path)
    message = str(refused.value)
    assert message.startswith(f"{path}: ") and said in message and "\n" not in message
