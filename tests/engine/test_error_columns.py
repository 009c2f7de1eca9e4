"""Every error's ``column`` counts bytes from the line's start (1-based), as its ``offset`` does: parse's and the
incident importer's always did; the readers of whole JSON/TOML documents (orjson and tomllib count characters)
convert theirs (``exactjson.line_byte_column``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import errors_of, run_replay

from replay.pipeline.engine import exactjson
from replay.pipeline.engine.config import parse_config
from replay.pipeline.engine.errors import ReplayError
from replay.pipeline.model.healing import load_rules
from replay.pipeline.model.runner_protocol import load_context
from replay.pipeline.model.session import load_overrides, load_script

# a fault (the `x`) after non-ASCII text on line 2: 12 characters in, 14 bytes
JSON = '{"a": 1,\n "é": "è", x}'.encode()
TOML = 'a = 1\nb = "éè" x\n'.encode()
BYTE_COLUMN = 14


def test_line_byte_column_counts_the_bytes_of_the_characters_before() -> None:
    assert exactjson.line_byte_column(JSON, 2, 12) == BYTE_COLUMN
    assert exactjson.line_byte_column(JSON.decode(), 2, 12) == BYTE_COLUMN
    assert exactjson.line_byte_column(b"abc", 1, 3) == 3


def _write(tmp_path: Path, data: bytes) -> str:
    path = tmp_path / "doc"
    path.write_bytes(data)
    return str(path)


@pytest.mark.parametrize("load", [
    lambda path: parse_config(Path(path).read_bytes(), path, json=True),
    lambda path: load_rules(path),
    lambda path: load_script(path),
    lambda path: load_overrides(path),
    lambda path: load_context(None, path),
], ids=["config-json", "heal-rules", "script", "override", "context-file"])
def test_a_json_document_fault_is_at_its_byte_column(load: Callable[[str], object], tmp_path: Path) -> None:
    with pytest.raises(ReplayError) as caught:
        load(_write(tmp_path, JSON))
    assert (caught.value.body["line"], caught.value.body["column"]) == (2, BYTE_COLUMN)


def test_a_toml_config_fault_is_at_its_byte_column(tmp_path: Path) -> None:
    with pytest.raises(ReplayError) as caught:
        parse_config(TOML, "c.toml", json=False)
    assert (caught.value.body["line"], caught.value.body["column"]) == (2, len('b = "éè" '.encode()) + 1)


def test_an_artifact_read_whole_reports_its_byte_column(tmp_path: Path) -> None:
    """`validate` reads a .json file whole (read's json_files = "whole")."""
    path = tmp_path / "art.json"
    path.write_bytes(JSON)
    done = run_replay("validate", str(path))
    (error,) = errors_of(done.stderr)
    assert error["code"] == "E_ARTIFACT_JSON_INVALID"
    assert (error["line"], error["column"]) == (2, BYTE_COLUMN) and f"column {BYTE_COLUMN}" in error["message"]
