"""The generated tables in the docs are current, and the generator round-trips."""

from pathlib import Path

import pytest

from spmd_types.typesystem.tables import TABLES, main, update

DOC = Path(__file__).parents[2] / "docs" / "type-system.md"


def test_type_system_doc_is_current():
    text = DOC.read_text()
    assert update(text) == text, "run: python -m spmd_types.typesystem.tables docs/type-system.md"


def test_every_table_is_in_the_doc():
    text = DOC.read_text()
    for name in TABLES:
        assert f"<!-- BEGIN GENERATED: {name} -->" in text


def test_check_mode_reports_stale_files(tmp_path, capsys):
    stale = tmp_path / "stale.md"
    stale.write_text("intro\n<!-- BEGIN GENERATED: duality -->\nold\n<!-- END GENERATED: duality -->\n")
    assert main([str(stale), "--check"]) == 1
    assert "out of date" in capsys.readouterr().err
    assert main([str(stale)]) == 0 and main([str(stale), "--check"]) == 0
    assert "| R | P |" in stale.read_text()


def test_unknown_region_is_an_error():
    with pytest.raises(KeyError, match="unknown generated table"):
        update("<!-- BEGIN GENERATED: nope -->\n<!-- END GENERATED: nope -->")
