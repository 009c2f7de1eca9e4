"""The JSON report encodes a run of many calls or errors a piece at a time (``render_json.run_pieces``): the pieces
joined are the bytes of the whole run encoded at once, whatever the calls and errors hold (numbers beyond 64 bits or a double, half a
surrogate pair, which the standard library writes, nesting, texts that look like the placeholder)."""

from __future__ import annotations

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from replay.pipeline.engine import exactjson
from replay.pipeline.report.render_json import _PLACEHOLDER, Streamed, run_pieces

texts = st.one_of(st.text(max_size=8), st.sampled_from(["\ud83d", "a\udc00b", _PLACEHOLDER, f"{_PLACEHOLDER}-0",
                                                       f"{_PLACEHOLDER}-1", "\n", '"calls": []', '"errors": []']))
scalars = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2 ** 70), max_value=2 ** 70),
                    st.floats(allow_nan=False, allow_infinity=False), texts,
                    st.sampled_from(["1e400", "3.14159265358979323846"]).map(exactjson.loads))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                       st.dictionaries(texts, inner, max_size=3)), max_leaves=6)
calls = st.lists(st.dictionaries(st.sampled_from(["toolName", "status", "durationMs", "seq", "callId", "x"]), values),
                 max_size=12)
errors = st.lists(st.dictionaries(st.sampled_from(["kind", "code", "message", "seq", "toolName", "x"]), values),
                  max_size=12)


def _run(listed: list, prompt: object = None, errors: list | None = None) -> dict:
    return {"runId": "r", "prompt": prompt, "toolCalls": {"total": len(listed), "byTool": {"t": {"calls": 1}},
                                                          "calls": listed}, "errors": errors or [], "usage": None}


def whole_written(run: dict) -> bytes:
    return exactjson.dumps(run, option=orjson.OPT_INDENT_2)


@settings(max_examples=300, deadline=None)
@given(calls, st.integers(min_value=1, max_value=5), values, errors)
def test_the_pieces_joined_are_the_run_encoded_whole(listed: list, size: int, prompt: object, failed: list):
    run = _run(listed, prompt, failed)
    assert b"".join(run_pieces(run, size)) == whole_written(run)


def test_a_run_of_many_calls_is_encoded_in_many_pieces_as_it_is_whole():
    listed = [{"toolName": "bash", "status": "ok", "durationMs": k * 1.5, "seq": k, "startMs": k, "callId": f"c{k}"}
              for k in range(10_000)]
    run = _run(listed)
    pieces = list(run_pieces(run))
    assert len(pieces) > 4 and max(map(len, pieces)) < len(whole_written(run)) // 4
    assert b"".join(pieces) == whole_written(run)
    streamed = Streamed()  # (as the report writes it: indented into the runs)
    try:
        streamed.add(run)
        streamed.add(_run(listed[:3]))
        document = b"".join(streamed.chunks({"runs": 2}, "t"))
    finally:
        streamed.close()
    assert orjson.loads(document)["runs"] == [run, _run(listed[:3])]
    assert document == orjson.dumps({"runs": [run, _run(listed[:3])], "aggregate": {"runs": 2}},
                                    option=orjson.OPT_INDENT_2) + b"\n"


def test_a_run_of_many_errors_is_encoded_in_many_pieces_as_it_is_whole():
    """A long run's errors (a failed tool call each: as many as a quarter of its calls) are encoded a piece at a time
    too: written whole after its calls they were its largest piece by far, copied several times over on their way into
    the report (a one-run report's peak memory: 151 MiB then, some 120 now)."""
    listed = [{"toolName": "bash", "status": "error", "durationMs": k, "seq": 2 * k, "startMs": k, "callId": f"c{k}"}
              for k in range(10_000)]
    failed = [{"kind": "tool_failed", "code": "ETIMEDOUT", "message": f"timed out {k}", "seq": 2 * k + 1,
               "toolName": "bash"} for k in range(10_000)]
    for run in (_run(listed, None, failed), _run(listed[:3], None, failed)):
        pieces = list(run_pieces(run))
        assert max(map(len, pieces)) < len(whole_written(run)) // 4
        assert b"".join(pieces) == whole_written(run)
    streamed = Streamed()  # (a run of few calls and many errors is written alone too, among runs written together)
    runs = [_run(listed[:3]), _run(listed[:3], None, failed), _run(listed[:3], None, failed[:3])]
    try:
        for run in runs:
            streamed.add(run)
        document = b"".join(streamed.chunks({"runs": 3}, "t"))
    finally:
        streamed.close()
    assert document == orjson.dumps({"runs": runs, "aggregate": {"runs": 3}}, option=orjson.OPT_INDENT_2) + b"\n"
