"""The user's signature folders are held to what ``catalogue test`` checks when they load: a file that fails
is left out with one line naming the file, the key and the reason, and everything else loads, the
built-in catalogue always."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparktui.cli import main
from sparktui.core import catalogue as cat
from sparktui.core.analysis import userfiles

from .test_loader import GOOD, NESTED_REPEATS, write

#: A signature right in all but one thing: its pattern has no literal to find its lines by.
NO_LITERAL = NESTED_REPEATS.format(id="no-literal", pattern="(a+)+$")
#: A track with a stage that no example shows, and a stall signature on it.
TRACK = """track = "mine"
label = "Mine"
programs = ["other"]
[[stages]]
id = "begun"
label = "begun"
any = ['my job begun']
[[stages]]
id = "done"
label = "done"
any = ['my job done']
[[examples]]
line = 'my job begun'
stage = "begun"
"""
STALL = """id = "mine-stalled"
kind = "stall"
category = "port_in_use"
severity = "error"
title = "My job began and never finished"
[stall]
track = "mine"
reached = "begun"
not_reached = "done"
[explain]
what = "Made up for the test."
why = "It stands on a track that is left out."
[[examples.log]]
text = 'my job begun'
"""


def test_a_failing_user_signature_is_left_out_and_the_rest_loads(tmp_path: Path) -> None:
    write(tmp_path, GOOD)
    path = write(tmp_path, NO_LITERAL, "no-literal.toml")
    loaded = userfiles.load([tmp_path])
    assert loaded.get("my-sig")
    assert "no-literal" not in {s.id for s in loaded.signatures}
    assert len(loaded.signatures) == len(cat.load().signatures) + 1
    (line,) = loaded.refused
    assert line == f"left out {path}: match.any[0]: no plain literal of 4+ characters that every match contains"


def test_a_refused_replacement_of_a_builtin_signature_gives_the_builtin_back(tmp_path: Path) -> None:
    builtin = cat.builtin_dir() / "server-port-in-use.toml"
    text = builtin.read_text().replace("'\\[Errno (?:98|48)\\] Address already in use'", "'(a+)+$'")
    assert text != builtin.read_text()
    text = "replaces = true\n" + text  # else its id alone refuses it
    write(tmp_path, text, builtin.name)
    loaded = userfiles.load([tmp_path])
    assert loaded.get("server-port-in-use").path == builtin
    assert [s.id for s in loaded.signatures] == [s.id for s in cat.load().signatures]  # in its place
    assert "server-port-in-use.toml: match.any[1]: no plain literal" in loaded.refused[0]


def test_a_pattern_out_of_time_on_its_own_example_is_refused(tmp_path: Path) -> None:
    # Exponential in the length of the run of a: each a is one branch or half of the other.
    slow = NO_LITERAL.replace("'(a+)+$'", "'port (a|aa)+$'").replace("'xx aaaaa'", "'port aaaa'")
    path = write(tmp_path, slow.replace("'bbbb'", "'port " + "a" * 100 + "!'"), "no-literal.toml")
    (line,) = userfiles.load([tmp_path]).refused
    assert line.startswith(f"left out {path}: examples.no_match[0]: the pattern 'port (a|aa)+$' took over")


def test_a_track_that_fails_takes_its_stall_signature_with_it(tmp_path: Path) -> None:
    (tmp_path / "stages").mkdir()
    track = write(tmp_path / "stages", TRACK, "mine.toml")
    stall = write(tmp_path, STALL, "mine-stalled.toml")
    loaded = userfiles.load([tmp_path])
    assert "mine" not in {t.id for t in loaded.tracks} and "mine-stalled" not in {s.id for s in loaded.signatures}
    assert loaded.refused == (
        f"left out {track}: stage 'done' has no example",
        f"left out {stall}: stall.track: the track 'mine' was left out",
    )


def test_the_cli_says_each_file_left_out_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path, GOOD)
    path = write(tmp_path, NO_LITERAL, "no-literal.toml")
    assert main(["catalogue", "list", "--signatures", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert err.splitlines() == [
        f"sparktui: left out {path}: match.any[0]: no plain literal of 4+ characters that every match contains"
    ]
    assert "my-sig" in out and "no-literal" not in out


#: Any good line signature, in a file named as the built-in one the README's hang fixture is found by.
HANG = "nccl-second-communicator-not-joined"
SHADOW = """id = "nccl-second-communicator-not-joined"
category = "engine_crash"
severity = "info"
title = "boom boom"
[match]
any = ['boom boom']
[explain]
what = "Made up for the test."
why = "Its id is a built-in signature's."
[[examples.match]]
line = 'boom boom'
[[examples.no_match]]
line = 'boom'
"""
FIXTURE = Path(__file__).parents[1] / "fixtures" / "nccl" / "two-hosts-second-group-not-joined"


def diagnose(folder: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, object], str]:
    """``sparktui diagnose --json --signatures folder`` on the README's hang fixture."""
    capsys.readouterr()
    code = main(["diagnose", "--json", "--signatures", str(folder), str(FIXTURE)])
    out, err = capsys.readouterr()
    return code, json.loads(out), err


def test_a_user_signature_with_a_builtins_id_is_refused_and_the_builtin_still_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, SHADOW, f"{HANG}.toml")
    code, found, err = diagnose(tmp_path, capsys)
    assert code != 0 and [f["signature"] for f in found["findings"]] == [HANG]  # type: ignore[index]
    line = f"left out {path}: id: '{HANG}' is a built-in signature's id (say replaces = true to replace it, or"
    assert err.splitlines() == [f"sparktui: {line} choose another id)"]
    assert found["warnings"] == [f"{line} choose another id)"]
    capsys.readouterr()
    assert main(["catalogue", "test", str(tmp_path)]) == 1
    assert f"{path}: id: '{HANG}' is a built-in signature's id" in capsys.readouterr().out


def test_replaces_true_replaces_the_builtin_and_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "replaces = true\n" + SHADOW, f"{HANG}.toml")
    code, found, err = diagnose(tmp_path, capsys)
    line = f"{path} replaces the built-in signature '{HANG}' (replaces = true)"
    assert (code, found["findings"], found["warnings"]) == (0, [], [line])
    assert err.splitlines() == [f"sparktui: {line}"]
    capsys.readouterr()
    assert main(["catalogue", "test", str(tmp_path)]) == 0
    loaded = userfiles.load([tmp_path])
    assert loaded.get(HANG).title == "boom boom"
    assert [s.id for s in loaded.signatures] == [s.id for s in cat.load().signatures]  # in the built-in's place


def test_replaces_needs_a_builtin_of_that_id(tmp_path: Path) -> None:
    path = write(tmp_path, "replaces = true\n" + GOOD)
    loaded = userfiles.load([tmp_path])
    assert "my-sig" not in {s.id for s in loaded.signatures}
    assert loaded.refused == (f"left out {path}: replaces: no built-in signature has the id 'my-sig'",)


def test_a_user_track_with_a_builtin_tracks_id_is_refused(tmp_path: Path) -> None:
    (tmp_path / "stages").mkdir()
    builtin = cat.builtin_dir() / "stages" / "nccl.toml"
    track = write(tmp_path / "stages", builtin.read_text().replace("label = ", 'label = "Mine"\n#', 1), "nccl.toml")
    loaded = userfiles.load([tmp_path])
    assert loaded.track("nccl") == cat.load().track("nccl")
    assert loaded.refused == (
        f"left out {track}: id: 'nccl' is a built-in stage track's id (say replaces = true to replace it, or choose"
        " another id)",
    )
    write(tmp_path / "stages", "replaces = true\n" + track.read_text(), "nccl.toml")
    assert userfiles.load([tmp_path]).track("nccl").label == "Mine"


def test_a_user_fallback_signature_replaces_the_builtin_families_with_its_own(tmp_path: Path) -> None:
    builtin = cat.builtin_dir() / "unrecognised-failure.toml"
    write(tmp_path, builtin.read_text(), builtin.name)
    refused = userfiles.load([tmp_path])
    assert refused.signatures == cat.load().signatures and len(refused.refused) == 1
    write(tmp_path, "replaces = true\n" + builtin.read_text(), builtin.name)
    replaced = userfiles.load([tmp_path])
    assert [s.id for s in replaced.signatures] == [s.id for s in cat.load().signatures]
    assert all(s.path.parent == tmp_path for s in replaced.signatures if s.id.startswith("unrecognised-failure"))


def test_the_builtin_folder_tested_by_a_relative_path_is_the_builtin_one(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`sparktui catalogue test diagnostics/`, as diagnostics/README.md has it, from the checkout: its files are
    the built-in ones, not a user's reusing their ids."""
    monkeypatch.chdir(cat.builtin_dir().parent)
    assert main(["catalogue", "test", "diagnostics/"]) == 0
    assert "built-in signature's id" not in capsys.readouterr().out


@pytest.mark.parametrize(
    ("folder", "counted"),
    [("stages", 4), ("formats", 32), ("formats/programs.toml", 18), ("stacks", 9), ("launch", 3), ("checks", None)],
)
def test_each_folder_of_the_catalogue_is_tested_as_what_it_holds(
    folder: str, counted: int | None, capsys: pytest.CaptureFixture[str]
) -> None:
    """diagnostics/README.md: `catalogue test` takes the whole catalogue, one folder or one file, whatever the
    folder holds (a folder of stage tracks, formats, wait kinds or launch tables was once read as signatures)."""
    path = cat.builtin_dir() / folder
    assert main(["catalogue", "test", str(path)]) == 0
    tested = len(list(path.glob("*.toml"))) if counted is None else counted
    assert capsys.readouterr().out.strip().endswith(f"{tested} passed, 0 failed")


def test_a_folder_sparktui_reads_only_from_its_own_catalogue_is_refused_elsewhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "stacks").mkdir()
    assert main(["catalogue", "test", str(tmp_path / "stacks")]) == 2
    assert "sparktui reads stacks/ only from its own catalogue" in capsys.readouterr().err
