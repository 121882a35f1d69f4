"""A broken user signature file is rejected with the file, the key and the reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparktui.cli import main
from sparktui.core import catalogue as cat

GOOD = """
id = "my-sig"
category = "port_in_use"
severity = "error"
title = "Something is already listening"
[match]
any = ['address already in use on port (?P<port>\\d+)']
[explain]
what = "A made-up signature used to test the loader in isolation."
why = "It exists so that one key at a time can be broken below."
[[examples.match]]
line = 'ERROR: address already in use on port 8000'
facts = { port = "8000" }
[[examples.no_match]]
line = 'INFO: listening on port 8000'
"""


#: A signature whose pattern has nested repeats (``pattern``, e.g. ``(a+)+$``): right in every other way, for
#: the checks on load and the time budget. Its examples hold for any such pattern over runs of ``a``.
NESTED_REPEATS = """id = "{id}"
category = "port_in_use"
severity = "error"
title = "A run of the letter a"
[match]
any = ['{pattern}']
[explain]
what = "Made up for the tests: a pattern with nested repeats."
why = "It backtracks without bound on a long run of a that does not end the line."
[[examples.match]]
line = 'xx aaaaa'
[[examples.no_match]]
line = 'bbbb'
"""


def write(tmp_path: Path, text: str, name: str = "my-sig.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_good_user_file_loads_on_top_of_the_builtin_catalogue(tmp_path: Path) -> None:
    write(tmp_path, GOOD)
    loaded = cat.load([tmp_path])
    assert loaded.get("my-sig").category == "port_in_use"
    assert len(loaded.signatures) > 40


@pytest.mark.parametrize(
    ("change", "key", "reason"),
    [
        (('category = "port_in_use"', 'category = "nope"'), "category", "unknown category"),
        (('severity = "error"', 'severity = "fatal"'), "severity", "unknown severity"),
        (("any = ['address", "any = ['(unclosed address"), "match.any[0]", "does not compile"),
        (('id = "my-sig"', 'id = "other"'), "id", "must equal the file name"),
        (("[[examples.no_match]]\nline = 'INFO: listening on port 8000'\n", ""), "examples.no_match", "at least one"),
        (('title = "Something is already listening"\n', ""), "title", "non-empty string"),
        (
            ('severity = "error"\n', 'severity = "error"\nlost_peer = true\n'),
            "lost_peer",
            "needs waits_for_peers = true",
        ),
        (
            ("[[examples.no_match]]", "[[examples.log]]\nfires = true\n[[examples.no_match]]"),
            "examples.log[0].text",
            "or nodes",
        ),
        (
            ("[[examples.no_match]]", "[[examples.log]]\ntext = 'x'\nnodes = { a = 'x' }\n[[examples.no_match]]"),
            "examples.log[0].text",
            "one of the two",
        ),
        (
            ("[[examples.no_match]]", "[[examples.log]]\nnodes = { a = 1 }\n[[examples.no_match]]"),
            "examples.log[0].nodes",
            "table of each node's lines",
        ),
    ],
)
def test_broken_files_name_file_key_and_reason(tmp_path: Path, change: tuple[str, str], key: str, reason: str) -> None:
    path = write(tmp_path, GOOD.replace(*change))
    with pytest.raises(cat.CatalogueError) as info:
        cat.load([tmp_path])
    assert info.value.path == path
    assert info.value.key == key
    assert reason in info.value.reason


def test_invalid_toml_is_reported_with_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "id = \n")
    with pytest.raises(cat.CatalogueError, match="not valid TOML") as info:
        cat.load([tmp_path])
    assert info.value.path == path


def test_cli_reports_a_broken_file_on_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path, GOOD.replace('severity = "error"', 'severity = "bad"'))
    assert main(["catalogue", "test", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "my-sig.toml: severity: unknown severity" in err


def test_catalogue_test_reports_a_failing_example(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path, GOOD.replace("INFO: listening on port 8000", "ERROR: address already in use on port 1"))
    assert main(["catalogue", "test", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "examples.no_match[0]: matched, but must not" in out
    assert "0 passed, 1 failed" in out
