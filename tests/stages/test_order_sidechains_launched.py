"""order_sidechains links a sub-agent's opening prompt (a sidechain ``user_message`` with no ``parentId``) to the main
chain's call whose ``args.prompt`` it is, and numbers what it moves with its parent's step and turn, however the
stream is cut into batches."""

from __future__ import annotations

import itertools

from heal_support import ev
from hypothesis import given, settings
from hypothesis import strategies as st

from replay.pipeline.engine.batch import Batch
from replay.stages.order_sidechains import OrderSidechains

SIDE = {"sidechain": True}
STREAM = [
    {"$record": "run", "runId": "r1"}, ev(1, "run_started", id="r"),
    ev(2, "user_message", id="u1", turn=1, payload={"text": "fix it"}),
    ev(3, "assistant_message", id="a1", step=1, turn=1), ev(4, "tool_called", id="a1", step=1, turn=1,
                                                            payload={"callId": "ls", "toolName": "LS"}),
    ev(5, "tool_completed", id="u2", step=1, turn=1, payload={"callId": "ls"}),
    # the sub-agent, written before the Task call that launched it: numbered with the step before (1)
    ev(6, "user_message", id="s1", step=1, turn=1, payload={**SIDE, "text": "find bug"}),
    ev(7, "assistant_message", id="s2", parentId="s1", step=1, turn=1, payload=dict(SIDE)),
    ev(8, "assistant_message", id="a3", step=2, turn=1, payload={"messageId": "m3"}),
    ev(9, "tool_called", id="a3", step=2, turn=1, payload={"callId": "task", "toolName": "Task", "args": {"prompt": "find bug"}}),
    ev(10, "tool_completed", id="u3", parentId="a3", step=2, turn=1, payload={"callId": "task"}),
    ev(11, "assistant_message", id="a4", step=3, turn=1),
]


@settings(max_examples=100, deadline=None)
@given(cuts=st.sets(st.integers(1, len(STREAM) - 1)))
def test_a_sub_agent_written_before_its_call_goes_after_it_with_its_step(cuts):
    stage = OrderSidechains()
    bounds = [0, *sorted(cuts), len(STREAM)]
    out = []
    for n, (start, end) in enumerate(itertools.pairwise(bounds)):
        batch = Batch.of([dict(r) for r in STREAM[start:end]], "run.jsonl")
        batch.closes_run = n == len(bounds) - 2
        got = stage(batch)
        out += [e for part in (got if isinstance(got, list) else [got]) for e in part.events]
    flushed = stage.flush()
    out += flushed.events if flushed is not None else []
    rows = [(e["seq"], e.get("step")) for e in out if "$record" not in e]
    assert rows == [(1, None), (2, None), (3, 1), (4, 1), (5, 1), (8, 2), (9, 2), (6, 2), (7, 2), (10, 2), (11, 3)]
