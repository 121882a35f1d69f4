"""The engines' command lines as data (diagnostics/launch/): every flag they name checked against the help
captured from the real programs (tests/helptext.py), every example read or translated as it says, and a
broken file refused in one line naming the key."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sparktui.core.launch import examples as launch_examples
from sparktui.core.launch import tables
from sparktui.core.launch.lexer import Takes
from sparktui.core.launch.serve import parse_launch
from sparktui.core.launch.sglang_to_vllm import _Custom, _Drop, _Flag, _Switch, _table, sglang_to_vllm
from sparktui.core.launch.tables import TableError, cli

from .. import helptext

ENGINES = tuple(helptext.HELP)


def help_options(engine: str) -> dict[str, str]:
    """Every flag of an engine's captured help, with its metavar ("" for a switch)."""
    return {flag: option.metavar for flag, option in helptext.options(engine).items()}


def is_the_engines(engine: str, flag: str) -> bool:
    """A flag of the help, or for SGLang a prefix argparse takes for one of its flags (--tp for --tp-size)."""
    options = help_options(engine)
    return flag in options or (engine == "sglang" and any(o.startswith(flag) for o in options))


@pytest.mark.parametrize("engine", ENGINES)
def test_the_captured_help_is_whole(engine: str) -> None:
    assert len(help_options(engine)) > 300
    assert {"--tensor-parallel-size", "--port", "--host"} <= help_options(engine).keys()


@pytest.mark.parametrize("engine", ENGINES)
def test_without_the_engines_parser_switches_are_told_from_valued_flags(engine: str) -> None:
    """Every flag of the captured help is a switch exactly when it takes no value."""
    table = cli(engine)
    wrong = [flag for flag, metavar in help_options(engine).items() if table.is_switch(flag) != (not metavar)]
    assert wrong == []


@pytest.mark.parametrize("engine", ENGINES)
def test_every_flag_an_engine_table_names_is_the_engines(engine: str) -> None:
    table = cli(engine)
    named = {*table.switches, *table.valued, *(f for flags in table.settings.values() for f in flags)}
    assert [flag for flag in sorted(named) if not is_the_engines(engine, flag)] == []
    assert all(not help_options(engine)[flag] for flag in table.switches)
    assert all(help_options(engine)[flag] for flag in table.valued)


def examples(name: str) -> Iterator[Any]:
    yield from tables.read(name).data["examples"]


@pytest.mark.parametrize("name", launch_examples.NAMES)
def test_each_example_reads_or_translates_as_it_says(name: str) -> None:
    assert launch_examples.check(name) == []


def test_an_example_that_reads_otherwise_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    doc = tables.read("vllm")
    example = dict(doc.data["examples"][0], read={"tensor_parallel": 99})
    monkeypatch.setattr(tables, "read", lambda name: type(doc)({**doc.data, "examples": [example]}, doc.error))
    assert launch_examples.check("vllm") == ["vllm.toml: examples[0]: tensor_parallel is 2, expected 99"]


def takes(metavar: str) -> Takes:
    """How many values argparse takes for a flag printed with this metavar."""
    if not metavar:
        return Takes.NOTHING
    return Takes.SOME if metavar.endswith("...]") else Takes.ONE


def test_every_sglang_flag_the_capture_has_takes_as_many_values_there() -> None:
    """A rule's flag takes as many values as SGLang's own parser gives it (a list taken as one or more);
    flags of older releases, which the capture no longer has, are named here and nowhere else."""
    options = help_options("sglang")
    wrong, gone = [], []
    for flag, rule in _table().rules.items():
        if flag not in options:
            gone.append(flag)
            continue
        if rule.takes is not (Takes.ONE if isinstance(rule, _Custom) else takes(options[flag])):
            wrong.append(flag)
    assert wrong == []
    assert sorted(gone) == sorted(OLDER)


#: SGLang flags the translator knows that the capture (SGLang 0.5.23) has not: argparse prefixes of its flags,
#: and flags of older releases (--enable-ep-moe and --enable-deepep-moe to 0.4.10, --cuda-graph-max-bs and
#: --cuda-graph-bs to 0.5.5, as their server_args.py says).
OLDER = ["--tp", "--pp", "--dp", "--enable-ep-moe", "--enable-deepep-moe", "--cuda-graph-max-bs", "--cuda-graph-bs"]


def test_every_vllm_flag_the_table_writes_or_names_is_vllms() -> None:
    table = _table()
    rules = table.rules.values()
    written = {r.to for r in rules if isinstance(r, _Flag | _Switch | _Custom) and r.to}
    written |= {r.also for r in rules if isinstance(r, _Custom) and r.also}
    words = [*table.texts.values(), *(r.reason for r in rules if isinstance(r, _Drop))]
    words += [r.note for r in rules if isinstance(r, _Flag | _Switch | _Custom)]
    named = {flag for text in words for flag in re.findall(r"(?<![\w-])--[a-z0-9][a-z0-9-]*[a-z0-9]", text)}
    options = help_options("vllm")
    assert sorted(f for f in written if f not in options) == []
    assert sorted(f for f in named if f not in options and f not in table.rules) == []


# --- broken files -------------------------------------------------------------------------------------------


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A launch folder of the test's own, in place of the built-in one."""
    for path in tables.folder().glob("*.toml"):
        (tmp_path / path.name).write_text(path.read_text())
    monkeypatch.setattr(tables, "folder", lambda: tmp_path)
    cli.cache_clear()
    _table.cache_clear()
    yield tmp_path
    cli.cache_clear()
    _table.cache_clear()


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


@pytest.mark.parametrize(
    ("old", "new", "says"),
    [
        (
            'tp = ["--tensor-parallel-size", "-tp"]',
            'tensor = ["--tensor-parallel-size"]',
            "settings.tensor: unknown key (model, tp, pp, dp, nnodes, node_rank, executor, port, host)",
        ),
        ('model = ["--model"]', "model = []", "settings.model: needs at least one flag"),
        ('engine = "vllm"', 'engine = "sglang"', "engine: must be 'vllm', as the file is named"),
        ("default_port = 8000", 'default_port = "8000"', "default_port: needs a port number"),
    ],
)
def test_a_broken_engine_table_is_refused_naming_the_key(folder: Path, old: str, new: str, says: str) -> None:
    edit(folder / "vllm.toml", old, new)
    with pytest.raises(TableError) as caught:
        parse_launch("vllm serve m")
    assert str(caught.value) == f"{folder / 'vllm.toml'}: {says}"


@pytest.mark.parametrize(
    ("old", "new", "says"),
    [
        ('drop = "@dp_attention"', 'drop = "@dp"', "no text 'dp' in [texts]"),
        ('custom = "nnodes"', 'custom = "nodes"', "custom: 'nodes' is not one of"),
        ('values = "dtypes"', 'values = "dtype"', "values: no [values.dtype]"),
        ('vllm = "--tokenizer"', 'vllm = "--tokenizer"\ndrop = "twice"', "give vllm (or custom) or drop"),
        ('sglang = ["--revision"]', 'sglang = ["--tokenizer-path"]', "--tokenizer-path has a rule already"),
        ('takes = "any"', 'takes = "many"', "takes: 'many' is not one of"),
    ],
)
def test_a_broken_translation_table_is_refused_naming_the_key(folder: Path, old: str, new: str, says: str) -> None:
    edit(folder / "sglang-to-vllm.toml", old, new)
    with pytest.raises(TableError, match=re.escape(says)) as caught:
        sglang_to_vllm("python3 -m sglang.launch_server --model-path m")
    assert str(caught.value).startswith(str(folder / "sglang-to-vllm.toml")) and "\n" not in str(caught.value)
