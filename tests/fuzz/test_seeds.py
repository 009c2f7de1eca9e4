"""The fuzz harness's invariants hold on every seed (the real corpus, the fixtures): a quick check in `make test`."""

from __future__ import annotations

import pytest
from fuzz import harness, seeds

FILES = seeds.seed_files()


def _head(path) -> bytes:
    data = path.read_bytes()
    return data[: data.rfind(b"\n", 0, seeds.MAX_SEED) + 1] if len(data) > seeds.MAX_SEED else data


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name[:40])
def test_stage_and_protocol_invariants_hold_on_a_seed(path):
    data = _head(path)
    harness.heal_stages(b"\x00\x00" + data)
    harness.runner_protocol(data)


@pytest.mark.parametrize("which", range(len(harness.COMMANDS)))
def test_command_invariants_hold_on_the_real_corpus(which):
    for path in [p for p in FILES if "corpus" in p.parts][:6]:
        harness.cli(_head(path), which)
