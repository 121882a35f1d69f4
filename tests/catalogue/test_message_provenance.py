"""The catalogue's wording is the programs' own: every line signature has an example line that matches a
message template of a released version (tools/messages/tables, extracted from the wheels on PyPI) or occurs
verbatim in a real capture (tests/fixtures), and its ``checked`` key names the releases whose tables its
match examples were found in (``python tools/messages/stamp.py`` rewrites it).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sparktui.core import catalogue as cat
from tools.messages import templates as tp
from tools.messages.provenance import checked, family_example_proven, proven
from tools.messages.releases import programs
from tools.messages.stamp import stampable, stamped

#: Signatures whose wording no table can hold, with the reason. Keep it short: a signature whose program's
#: wheels are on PyPI belongs in tools/messages/releases.toml instead.
UNPROVABLE = {
    # Docker's CLI and daemon (Go binaries outside PyPI; the others are proven by tests/fixtures/docker)
    "docker-ulimit-not-permitted": "docker daemon / runc",
    # NVIDIA Container Toolkit (libnvidia-container; distro packages, not PyPI)
    "nvidia-container-cli-error": "nvidia-container-cli",
    "nvidia-container-cuda-requirement": "nvidia-container-cli",
    # sparktui's own words (its edge scan on a Ray node), not a program's
    "ray-edge-scan-not-run": "sparktui edge",
    # a traceback frame (file and function) that the exception passed through, not a message: the tables
    # hold what programs print, not where their functions are
    "ray-init-failed-connecting": "frame of ray.init",
    "transformers-autoconfig-raised": "frame of AutoConfig.from_pretrained",
    "vllm-ray-cluster-init-raised": "frame of initialize_ray_cluster",
}


@pytest.fixture(scope="module")
def tables() -> tp.Tables:
    return tp.Tables.read()


def signatures(catalogue: cat.Catalogue) -> list[cat.Signature]:
    return stampable(catalogue)


def test_every_line_signature_has_real_wording(catalogue: cat.Catalogue, tables: tp.Tables) -> None:
    unproven = sorted(s.id for s in signatures(catalogue) if not proven(s, tables))
    unexplained = [sid for sid in unproven if sid not in UNPROVABLE]
    assert not unexplained, (
        "no example line of these signatures matches a message of the programs' releases (tools/messages/tables)"
        f" or occurs in a real capture: {unexplained}; add an [[examples.match]] line in the program's own wording"
    )


def test_every_family_has_real_wording(catalogue: cat.Catalogue, tables: tp.Tables) -> None:
    """A fallback signature's families sort failures by words; at least one example of each is a line a
    program prints (its template holds the word) or occurs in a real capture."""
    families = [f for sig in catalogue.signatures for f in sig.families]
    assert families
    unproven = [f.name for f in families if not any(family_example_proven(f, e, tables) for e in f.examples)]
    assert not unproven, f"no example of these families is in a program's own wording: {unproven}"


def test_allow_list_is_needed(catalogue: cat.Catalogue, tables: tp.Tables) -> None:
    ids = {s.id: s for s in signatures(catalogue)}
    assert set(UNPROVABLE) <= set(ids), f"gone from the catalogue: {sorted(set(UNPROVABLE) - set(ids))}"
    now_proven = sorted(sid for sid in UNPROVABLE if proven(ids[sid], tables))
    assert not now_proven, f"proven now, take them off UNPROVABLE: {now_proven}"
    assert len(UNPROVABLE) <= 12, "the allow-list grows: prove the wording instead (see tools/messages/README.md)"


def test_checked_says_what_the_tables_say(catalogue: cat.Catalogue, tables: tp.Tables) -> None:
    stale = [s.id for s in signatures(catalogue) if list(s.checked) != checked(s, tables)]
    assert not stale, f"`checked` is not current in {stale}: run python tools/messages/stamp.py"


def test_checked_names_releases_of_the_tables(catalogue: cat.Catalogue) -> None:
    known = {f"{p} {label}" for p, prog in programs().items() for label in prog.labels()}
    for sig in catalogue.signatures:
        assert set(sig.checked) <= known, f"{sig.id}: {sorted(set(sig.checked) - known)}"


def test_loader_validates_checked(tmp_path: Path) -> None:
    source = (cat.builtin_dir() / "ray-gcs-connect-failed.toml").read_text(encoding="utf-8")
    good = tmp_path / "good" / "ray-gcs-connect-failed.toml"
    good.parent.mkdir()
    good.write_text(stamped(source, ["ray 2.9.3", "ray 2.60.0"]), encoding="utf-8")
    assert cat.load_signature(good).checked == ("ray 2.9.3", "ray 2.60.0")
    for wrong, reason in ((["ray"], "is not '<program> <version>'"), (["ray 2.9.3", "ray 2.9.3"], "twice")):
        bad = tmp_path / "bad" / "ray-gcs-connect-failed.toml"
        bad.parent.mkdir(exist_ok=True)
        bad.write_text(stamped(source, wrong), encoding="utf-8")
        with pytest.raises(cat.CatalogueError, match=reason):
            cat.load_signature(bad)


def test_stamp_changes_only_its_line() -> None:
    text = 'id = "x"\nprograms = ["ray"]\n\n# the patterns\n[match]\nany = [\'a\']\n'
    once = stamped(text, ["ray 2.9.3"])
    assert once == 'id = "x"\nprograms = ["ray"]\nchecked = ["ray 2.9.3"]\n\n# the patterns\n[match]\nany = [\'a\']\n'
    assert stamped(once, ["ray 2.60.0"]) == once.replace("2.9.3", "2.60.0")
    assert stamped(once, []) == text


def test_template_as_regex() -> None:
    regex = tp.to_regex("NET/IB : Got completion from peer {%s} with status={%d} opcode={%d}")
    assert regex is not None
    line = "host:1:2 [0] NCCL INFO NET/IB : Got completion from peer 10.0.0.2<1234> with status=12 opcode=0"
    assert regex.search(line)
    assert not regex.search("NET/IB : Got completion from peer")
    assert tp.to_regex("{}: {}") is None  # nothing literal to tell it from any other line
    assert tp.literal("use {{braces}} and {x}", "X") == "use {braces} and X"
    order = ["a", "b", "c", "d"]
    assert tp.compress(["a", "b", "d"], order) == "a..b,d"
    assert tp.expand("a..b,d", order) == ("a", "b", "d")
