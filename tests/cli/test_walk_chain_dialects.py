"""A `walk` stage in a config's chain (`replay run PIPELINE.toml LOG`) walks what `replay walk LOG` walks: another
agent's log mapped and healed, its steps the mapped events' (walk-log.toml's stages in front of the walk, read from the
spec), and replay's own journal as its lines, as before. It walked the log's raw records (`session_meta`, every step
`-`), and refused `at = "1"` (E_STEP_NOT_FOUND). Real `replay` processes, over the corpus (fixtures/corpus/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from conftest import EXAMPLES, FIXTURES, errors_of, run_replay, timeless
from dialect_support import CORPUS, CORPUS_FILES

CODEX = CORPUS / "codex" / "rollout-2026-01-02T03-04-05-11111111-1111-4111-8111-111111111111.jsonl"
STEPPED = [CORPUS / "claude-code" / "session_b.jsonl", CODEX, CORPUS / "openhands" / "basic.json",
           CORPUS / "mini-swe-agent" / "github_issue.traj.json"]  # (a log of each dialect with a step 1)
ids = {"ids": lambda p: f"{p.parent.name}/{p.name}"}


def chained(tmp_path: Path, chain: str, *paths: Path | str) -> tuple[int, bytes, bytes]:
    """`replay run` of a config holding ``chain``, in a process of its own: (exit code, stdout, timeless stderr)."""
    config = tmp_path / "walk.toml"
    config.write_text(f"chain = {chain}\n")
    done = run_replay("run", str(config), *map(str, paths), process=True)
    return done.returncode, done.stdout, timeless(done.stderr)


def walked(*args: str | Path) -> tuple[int, bytes, bytes]:
    done = run_replay("walk", *map(str, args), process=True)
    return done.returncode, done.stdout, timeless(done.stderr)


@pytest.mark.parametrize("path, as_json", [*((p, False) for p in CORPUS_FILES), *((p, True) for p in STEPPED[:2])],
                         ids=lambda v: {False: "text", True: "json"}[v] if isinstance(v, bool) else ids["ids"](v))
def test_a_chains_walk_of_a_log_is_replay_walks(tmp_path: Path, path: Path, as_json: bool):
    """The same lines, the same errors and warnings (a line that is no record, what heal saw), the same exit code."""
    chain = '[{ type = "walk", format = "json" }]' if as_json else '[{ type = "walk" }]'
    got = chained(tmp_path, chain, path)
    assert got == walked(*(["--json"] if as_json else []), path)
    kinds = [orjson.loads(line)["kind"] if as_json else line.split()[0].decode() for line in got[1].splitlines()]
    assert "run_started" in kinds and not {"session_meta", "response_item", "user", "assistant"} & set(kinds)


@pytest.mark.parametrize("path", STEPPED, **ids)
def test_a_chains_walk_of_a_log_up_to_step_1_is_replay_walks(tmp_path: Path, path: Path):
    code, out, err = chained(tmp_path, '[{ type = "walk", at = "1" }]', path)
    assert (code, out, err) == walked("--at", "1", path)
    assert code == 0 and out.splitlines()[-1].split()[1] == b"1"
    code, out, err = chained(tmp_path, '[{ type = "walk", at = "nowhere" }]', path)
    assert (code, out, err) == walked("--at", "nowhere", path) and code == 2


def test_lines_the_chain_passes_on_first_are_still_mapped(tmp_path: Path):
    """A chain's own `join_split_records` before the walk stands for walk-log's; another stage's id that is one of
    walk-log's (`heal`, `parse`) leaves that stage its own."""
    for chain in ('["join_split_records", "walk"]', '[{ type = "join_split_records", id = "parse" }, '
                                                   '{ type = "walk", id = "heal" }]'):
        assert chained(tmp_path, chain, CODEX) == walked(CODEX), chain


def test_a_folder_of_logs_is_walked_mapped(tmp_path: Path):
    code, out, _ = chained(tmp_path, '["walk"]', CORPUS / "claude-code")
    assert code == 1 and out.count(b"\nrun_started ") == 4 and b"\nassistant " not in out  # (edge_cases' bad lines: 1)


def test_replay_s_own_journal_is_walked_as_its_lines_as_before(tmp_path: Path):
    """Not healed: a journal with no terminal event gets none (heal would add `run_failed` and a `$heal` record); each
    walked as `replay walk` walks it, `at` found by the pre-scan before the run."""
    journal = tmp_path / "open.jsonl"
    journal.write_bytes(b'{"seq":1,"timestamp":"2026-03-01T12:00:00Z","type":"run_started","runId":"r","payload":{}}\n'
                        b'{"seq":2,"timestamp":"2026-03-01T12:00:01Z","type":"user_message","runId":"r",'
                        b'"payload":{"content":"hi"}}\n')
    code, out, err = chained(tmp_path, '["walk"]', journal)
    assert (code, out, err) == walked(journal) and (code, err) == (0, b"")
    assert [line.split()[0] for line in out.splitlines()] == [b"run_started", b"user_message"]
    for path in (EXAMPLES / "journals" / "two-runs.jsonl", FIXTURES / "walk" / "interleaved.jsonl"):
        assert chained(tmp_path, '["walk"]', path) == walked(path)
    assert chained(tmp_path, '[{ type = "walk", at = "c1" }]', EXAMPLES / "journals" / "two-runs.jsonl") == walked(
        "--at", "c1", EXAMPLES / "journals" / "two-runs.jsonl")


def test_a_log_and_a_journal_in_one_walk_are_refused(tmp_path: Path):
    """Each is walked as its command walks it (mapped and healed, or as its lines), and one graph cannot do both."""
    code, out, err = chained(tmp_path, '["walk"]', CODEX, FIXTURES / "walk" / "hello.jsonl")
    [error] = errors_of(err)
    assert (code, out, error["code"]) == (2, b"", "E_USAGE_INVALID")
    assert error["received"] == [str(FIXTURES / "walk" / "hello.jsonl"), str(CODEX)]
