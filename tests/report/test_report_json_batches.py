"""The JSON report encodes its runs a batch at a time (``render_json.Streamed``: ``{"runs": batch}`` encoded by orjson
at once, its runs' lines cut out), each run alone when orjson cannot encode the batch (a number beyond 64 bits or a
double, half a surrogate pair: ``exactjson`` writes those) and a run of many calls a piece at a time: the document is
the one every run encoded at once gives, whichever way each batch went."""

from __future__ import annotations

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from replay.pipeline.engine import exactjson
from replay.pipeline.report import render_json
from replay.pipeline.report.model import public_run
from replay.pipeline.report.spool import CALLS_A_PIECE

AGG = {"runs": {"total": 0}, "note": "\u2028 é"}


def _run(k: int, calls: int = 2, odd: object = None) -> dict:
    listed = [{"toolName": f"t{j % 3}", "status": "ok", "durationMs": j * 1.5, "seq": j, "startMs": j, "callId": f"c{j}"}
              for j in range(calls)]
    return {"$record": "summary", "runId": f"run-{k}", "prompt": odd, "timeline": {"calls": listed},
            "toolCalls": {"total": calls, "byTool": {"t0": {"calls": 1}}, "calls": listed}, "errors": [],
            "usage": None, "note": "line\nbreak \"quoted\" \x01"}


def _document(runs: list[dict]) -> bytes:
    streamed = render_json.Streamed()
    try:
        for run in runs:
            streamed.add(run)
        return b"".join(streamed.chunks(AGG, "t"))
    finally:
        streamed.close()


def whole_written(runs: list[dict]) -> bytes:
    return exactjson.dumps({"runs": [public_run(r) for r in runs], "aggregate": AGG}, option=orjson.OPT_INDENT_2) + b"\n"


def test_batches_alone_and_in_pieces_write_the_document_encoded_at_once():
    runs = [_run(k) for k in range(3 * render_json.BATCH_RUNS + 5)]  # several batches, the last one short
    runs[10]["prompt"] = 2 ** 70  # a batch orjson cannot encode: each of its runs alone, by exactjson
    runs[150]["prompt"] = "half \ud83d a pair"  # another (the standard library writes it)
    runs[100] = _run(100, CALLS_A_PIECE + 5)  # a run of many calls, a piece at a time, between batches
    runs[101] = _run(101, CALLS_A_PIECE // 2)  # a batch cut short by its calls
    assert _document(runs) == whole_written(runs)
    assert _document(runs[:1]) == whole_written(runs[:1])
    assert _document([]) == whole_written([])


odd = st.one_of(st.none(), st.integers(min_value=-(2 ** 70), max_value=2 ** 70), st.floats(allow_nan=False,
                allow_infinity=False), st.text(max_size=6), st.sampled_from(["\ud83d", "1e400"]))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(min_value=0, max_value=4), odd), max_size=3 * render_json.BATCH_RUNS))
def test_any_runs_write_the_document_encoded_at_once(shapes: list):
    runs = [_run(k, calls, exactjson.loads(value) if value == "1e400" else value)
            for k, (calls, value) in enumerate(shapes)]
    assert _document(runs) == whole_written(runs)
