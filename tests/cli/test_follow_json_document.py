"""`replay read --follow x.json`: a named .json file is one JSON document (an artifact), not followed but read whole as
without --follow: one cut off (its write not finished) is one E_ARTIFACT_JSON_INVALID and the read ends, exit 1, not a
JSON-lines read of its pretty-printed lines (an E_JSONL_LINE_INVALID each) that waits for Ctrl-C. A real process."""

from __future__ import annotations

import gzip
import json
import subprocess
from pathlib import Path

import pytest
from conftest import REPLAY, jsonl

ARTIFACT = {"schemaVersion": "1.0.0", "artifactType": "replay", "id": "x", "status": "ok",
            "events": [{"seq": 1, "timestamp": "2026-03-01T12:00:00.000Z", "type": "run_started", "runId": "x",
                        "payload": {}}]}


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
def test_follow_of_a_cut_off_json_document_reads_it_whole_as_without_follow(tmp_path: Path, gz: bool) -> None:
    text = json.dumps(ARTIFACT, indent=2).encode()
    artifact = tmp_path / ("cut.json.gz" if gz else "cut.json")
    artifact.write_bytes((gzip.compress if gz else bytes)(text[:len(text) // 2]))
    plain = subprocess.run([REPLAY, "read", str(artifact)], capture_output=True, timeout=60)
    followed = subprocess.run([REPLAY, "read", "--follow", str(artifact)], capture_output=True, timeout=20)
    [error] = jsonl(followed.stderr)
    assert error["error"]["code"] == "E_ARTIFACT_JSON_INVALID"
    assert (followed.returncode, followed.stdout, followed.stderr) == (1, plain.stdout, plain.stderr)
