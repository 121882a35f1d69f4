"""One test per row of diagnostics/origins/ (areas.toml, exceptions.toml), generated from the files: each
row's examples are filed by that row into a family of the fallback signature, and a failure read by the
analyzer comes out filed as its origin says, with the step written on the finding."""

from __future__ import annotations

from pathlib import Path

import pytest
import regex

from sparktui.core import catalogue as cat
from sparktui.core.analysis.analyzer import Analyzer
from sparktui.core.analysis.provenance import Area, DomainException, OriginError, Origins, Provenance, load, load_areas
from sparktui.core.analysis.templates import Placed, Template, TemplatesError
from sparktui.core.analysis.templates import load as load_templates
from sparktui.core.classify import classify

ORIGINS = load()
CATALOGUE = cat.load()
FALLBACK = next(s for s in CATALOGUE.signatures if s.fallback)
FAMILIES = {f.name for f in FALLBACK.families}
#: A failure line as each program's logger prints it, naming its file.
LOGGED = {
    "vllm": "ERROR 03-02 09:14:07 [{name}:12] something failed",
    "nccl": "node-a:2201:2250 [0] {name}:12 NCCL WARN something failed",
}


def _installed(example: str) -> str:
    """An example place (``vllm/x.py:12``) as a traceback names it, below an installed package's folder."""
    return "/usr/local/lib/python3.12/dist-packages/" + example.partition(":")[0]


@pytest.mark.parametrize("area", ORIGINS.areas, ids=[a.prefix for a in ORIGINS.areas])
def test_area_examples_are_filed_by_their_row(area: Area) -> None:
    assert area.family in FAMILIES
    assert area.examples
    for example in area.examples:
        assert example.startswith(area.prefix)
        assert ORIGINS.area_of(_installed(example)) == area, example
        assert ORIGINS.area_of(example.partition(":")[0]) == area, example
    for name in area.files:
        said = classify(LOGGED[area.program].format(name=name))
        assert (said.program, said.file) == (area.program, name)
        filing = ORIGINS.file(Provenance(said.program, file=said.file))
        assert filing is not None and filing.family == area.family, name


@pytest.mark.parametrize("row", ORIGINS.exceptions, ids=[r.name for r in ORIGINS.exceptions])
def test_exception_examples_are_filed_by_their_row(row: DomainException) -> None:
    assert row.family in FAMILIES
    shapes = [regex.compile(p) for p in FALLBACK.any]
    for example in row.examples:
        m = next(m for shape in shapes if (m := shape.search(example)) is not None and m.groupdict().get("exception"))
        assert ORIGINS.exception_of(m["exception"]) == row, example


def test_a_bare_class_name_two_packages_share_files_nowhere() -> None:
    assert ORIGINS.exception_of("OutOfMemoryError") is None
    found = ORIGINS.exception_of("ray.exceptions.OutOfMemoryError")
    assert found is not None and found.family == "host-out-of-memory"


def _finding(text: str) -> tuple[str, str]:
    analyzer = Analyzer(CATALOGUE)
    analyzer.add_source("a.log", "node-a")
    analyzer.feed("a.log", text)
    first = analyzer.finish().findings[0]
    return first.signature, first.filed


def test_the_raising_frame_files_before_the_words() -> None:
    # words alone ("out of memory") would say out-of-memory; the frame says where it was raised
    signature, filed = _finding(
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3/dist-packages/vllm/model_executor/model_loader/weight_utils.py", line 562, in f\n'
        "    raise RuntimeError(msg)\n"
        "RuntimeError: could not read the weights\n"
    )
    assert signature == "unrecognised-failure-model-files"
    assert filed == "filed as model files: raised in vllm/model_executor/model_loader/weight_utils.py"


def test_the_logger_file_files_a_logged_failure() -> None:
    signature, filed = _finding("ERROR 03-02 09:14:07 [arg_utils.py:1228] the options disagree\n")
    assert signature == "unrecognised-failure-configuration"
    assert filed == "filed as configuration: logged by arg_utils.py of vllm/engine/arg_utils.py"


def test_a_domain_exception_files_where_no_area_does() -> None:
    signature, filed = _finding("ray.exceptions.LocalRayletDiedError: the task could not go on\n")
    assert signature == "unrecognised-failure-ray-cluster"
    assert (
        filed == "filed as ray cluster: a ray.exceptions.LocalRayletDiedError, a kind of ray.exceptions.NodeDiedError"
    )


def test_a_message_with_no_traceback_is_filed_where_its_template_is_raised() -> None:
    # huggingface_hub raises it in _snapshot_download.py; printed alone, no frame or logger names the file
    signature, filed = _finding(
        "ValueError: Invalid repo type: models. Accepted repo types are: ['model', 'dataset', 'space']\n"
    )
    assert signature == "unrecognised-failure-model-files"
    assert filed == (
        "filed as model files: its message is huggingface_hub's, raised in huggingface_hub/_snapshot_download.py:138"
    )


def test_the_pure_python_engine_places_them_too(monkeypatch: pytest.MonkeyPatch) -> None:
    # the base install has no Hyperscan: its engine over every template's whole pattern recursed too deep
    monkeypatch.setenv("SPARKTUI_ENGINE", "pure")
    placed = Placed(load_templates().templates)
    found = placed.places("ValueError: Invalid repo type: models. Accepted repo types are: ['model']")
    assert "huggingface_hub/_snapshot_download.py:138" in {t.where for t in found}


def test_a_message_raised_in_two_families_is_not_filed_by_its_place() -> None:
    config = Template("vllm", "vllm/config/parallel.py:10", "the option {} cannot be used here")
    loader = Template("vllm", "vllm/model_executor/model_loader/utils.py:20", "the option {} cannot be used here")
    line = "ValueError: the option --x cannot be used here"
    placed = Origins(ORIGINS.areas, (), Placed([config])).template_of(line)
    assert placed is not None and placed[0] == config and placed[1].family == "configuration"
    assert Origins(ORIGINS.areas, (), Placed([config, loader])).template_of(line) is None
    assert Origins(ORIGINS.areas, (), Placed([config])).template_of("the option is fine") is None


def test_a_templates_table_that_cannot_be_used_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "templates.tsv"
    path.write_text("program\twhere\n")
    with pytest.raises(TemplatesError, match="first row must name the columns program, where, template"):
        load_templates(path)
    path.write_text("program\twhere\ttemplate\nvllm\tvllm/config.py:1\n")
    with pytest.raises(TemplatesError, match="row 2: 3 non-empty cells"):
        load_templates(path)


@pytest.mark.slow
def test_the_templates_table_is_what_origins_py_writes() -> None:
    """diagnostics/origins/templates.tsv is rewritten by tools/messages/origins.py from the mined tables and
    areas.toml: a change to either without a rerun is caught here."""
    from tools.messages.origins import placed
    from tools.messages.templates import Tables

    kept, _ = placed(Tables.read(), ORIGINS)
    assert {(e.program, e.where, e.template) for e in kept} == {
        (t.program, t.where, t.template) for t in load_templates().templates
    }


def test_words_file_last_and_say_so() -> None:
    signature, filed = _finding("RuntimeError: connect() failed: Connection refused\n")
    assert signature == "unrecognised-failure-network"
    assert filed == "filed as network: by the words of the failure"


def test_an_unknown_origin_is_the_bare_fallback() -> None:
    signature, filed = _finding(
        '  File "/srv/job/train.py", line 3, in <module>\n    main()\nRuntimeError: something odd happened\n'
    )
    assert (signature, filed) == ("unrecognised-failure", "")


def test_a_prefix_must_be_a_folder_or_a_file(tmp_path: Path) -> None:
    path = tmp_path / "areas.toml"
    path.write_text('[[areas]]\nprefix = "vllm/config"\nfamily = "configuration"\nsource = "x"\nexamples = ["a"]\n')
    with pytest.raises(OriginError, match="prefix"):
        load_areas(path)
