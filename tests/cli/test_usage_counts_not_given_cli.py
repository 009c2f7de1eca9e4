"""A token count no usage object of a run gave is not 0 but not given (``-`` in text, JUnit, Markdown and HTML, null in
JSON), as a cost is; totals sum the runs that gave it; ``export --otlp`` writes a token attribute for the same counts
``report`` gives, a fraction (``1.5``) as the same number. Real processes (found by a tester: a mini-swe-agent
trajectory with a cost and no tokens showed ``0 tokens in, 0 tokens out, $0.75``)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from conftest import FIXTURES, run_replay

# one run per case: a run record's usage (or none), and a model call's
CASES = {
    "cost_only": ('{"costUsd":0.5}', None),
    "tokens_only": (None, '{"input_tokens":7,"output_tokens":3}'),
    "neither": (None, None),
    "both": ('{"inputTokens":10,"outputTokens":4,"costUsd":0.25}', None),
    "input_only": (None, '{"input_tokens":2}'),
}


def _journal(tmp_path: Path, cases: dict[str, tuple[str | None, str | None]]) -> Path:
    lines = []
    for run, (declared, usage) in cases.items():
        lines.append(f'{{"$record":"run","runId":"{run}","status":"ok"'
                     + (f',"usage":{declared}' if declared else "") + "}")
        payload = f'{{"model":"m","usage":{usage}}}' if usage else '{"model":"m"}'
        lines.append(f'{{"seq":1,"timestamp":"2026-01-01T00:00:01Z","type":"assistant_message","runId":"{run}",'
                     f'"payload":{payload}}}')
    path = tmp_path / "usage.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def _report(path: Path, fmt: str) -> bytes:
    done = run_replay("report", "--format", fmt, str(path))
    assert done.returncode == 0, done.stderr
    return done.stdout


def _roots(path: Path) -> dict[str, dict[str, str]]:
    """Each run's ``invoke_agent`` span's token attributes (their values as written), by run id."""
    done = run_replay("export", "--otlp", str(path))
    assert done.returncode == 0, done.stderr
    spans = [span for line in done.stdout.splitlines() for resource in json.loads(line)["resourceSpans"]
             for scope in resource["scopeSpans"] for span in scope["spans"]]
    roots = {}
    for span in spans:
        attrs = {a["key"]: a["value"] for a in span["attributes"]}
        if span["name"].startswith("invoke_agent"):
            roots[attrs["gen_ai.conversation.id"]["stringValue"]] = {
                key.removeprefix("gen_ai.usage."): value.get("intValue", value.get("stringValue"))
                for key, value in attrs.items() if key.startswith("gen_ai.usage.")}
    return roots


def test_a_count_no_usage_object_gave_is_null_and_dash_not_zero(tmp_path: Path):
    path = _journal(tmp_path, CASES)
    runs = {run["runId"]: run["usage"] for run in json.loads(_report(path, "json"))["runs"]}
    assert runs == {
        "cost_only": {"inputTokens": None, "outputTokens": None, "costUsd": 0.5},
        "tokens_only": {"inputTokens": 7, "outputTokens": 3, "costUsd": None},
        "neither": None,
        "both": {"inputTokens": 10, "outputTokens": 4, "costUsd": 0.25},
        "input_only": {"inputTokens": 2, "outputTokens": None, "costUsd": None},
    }
    text = _report(path, "text").decode()
    rows = {line.split()[0]: line.split()[6:9] for line in text.splitlines()
            if line.split() and line.split()[0] in CASES}
    assert rows == {"cost_only": ["-", "-", "$0.50"], "tokens_only": ["7", "3", "-"], "neither": ["-", "-", "-"],
                    "both": ["10", "4", "$0.25"], "input_only": ["2", "-", "-"]}
    usage_lines = [line.split(None, 1)[1] for line in text.splitlines() if line.startswith("  usage ")]
    assert usage_lines[:5] == ["- tokens in, - tokens out, $0.50", "7 tokens in, 3 tokens out, -", "-",
                               "10 tokens in, 4 tokens out, $0.25", "2 tokens in, - tokens out, -"]
    # totals: the sum over the runs that gave each count
    assert json.loads(_report(path, "json"))["aggregate"]["usage"] == {
        "inputTokens": 19, "outputTokens": 7, "costUsd": 0.75, "runsWithUsage": 4}
    assert "  usage       19 tokens in, 7 tokens out, $0.75 (4 runs report usage)" in text
    junit = ET.fromstring(_report(path, "junit"))
    outs = [case.find("system-out").text for case in junit.iter("testcase")]
    assert "usage: - tokens in, - tokens out, $0.50" in outs[0] and "usage: 2 tokens in, - tokens out, -" in outs[4]
    markdown = _report(path, "markdown").decode()
    assert "- **Usage**: - tokens in, - tokens out, \\$0.50" in markdown and "| - | - | \\$0.50 |" in markdown
    html = _report(path, "html").decode()
    assert [cell.split("<")[0] for cell in html.split('Tokens in</td><td class="n">')[1:]] == ["-", "7", "10", "2"]


def test_totals_of_runs_none_of_which_gave_a_count_are_null(tmp_path: Path):
    path = _journal(tmp_path, {k: CASES[k] for k in ("cost_only", "neither")})
    document = json.loads(_report(path, "json"))
    assert document["aggregate"]["usage"] == {"inputTokens": None, "outputTokens": None, "costUsd": 0.5,
                                              "runsWithUsage": 1}
    assert "  usage       - tokens in, - tokens out, $0.50 (1 run reports usage)" in _report(path, "text").decode()
    props = {p.get("name"): p.get("value") for p in ET.fromstring(_report(path, "junit")).iter("property")}
    assert (props["inputTokens"], props["outputTokens"], props["costUsd"]) == ("-", "-", "0.5")


def test_report_and_export_give_the_same_counts(tmp_path: Path):
    """``export --otlp`` writes a token attribute on a run's span for each count ``report`` gives (none for one it
    shows as ``-``), and the same number."""
    path = _journal(tmp_path, {**CASES, "fraction": ('{"inputTokens":1.5,"outputTokens":2}', None),
                               "fraction_events": (None, '{"input_tokens":0.25,"output_tokens":3.5}')})
    runs = {run["runId"]: run["usage"] for run in json.loads(_report(path, "json"))["runs"]}
    roots = _roots(path)
    for run, usage in runs.items():
        given = {key: value for key, value in (usage or {}).items() if key != "costUsd" and value is not None}
        assert {key: str(value) for key, value in given.items()} == {
            {"input_tokens": "inputTokens", "output_tokens": "outputTokens"}[key]: value
            for key, value in roots[run].items()}, run
    assert runs["fraction"] == {"inputTokens": 1.5, "outputTokens": 2, "costUsd": None}
    assert roots["fraction"] == {"input_tokens": "1.5", "output_tokens": "2"}  # (not cut to 1)
    assert roots["fraction_events"] == {"input_tokens": "0.25", "output_tokens": "3.5"}


def test_a_mini_swe_agent_trajectory_with_a_cost_and_no_tokens(tmp_path: Path):
    messages = json.loads((FIXTURES / "corpus" / "mini-swe-agent" / "github_issue.traj.json").read_text())
    if isinstance(messages, dict):
        messages = messages["messages"]
    path = tmp_path / "run.traj.json"
    path.write_text(json.dumps({"info": {"exit_status": "Submitted", "submission": "x",
                                         "model_stats": {"instance_cost": 0.75}},
                                "messages": messages, "trajectory_format": "mini-swe-agent-1"}))
    [run] = json.loads(_report(path, "json"))["runs"]
    assert run["usage"] == {"inputTokens": None, "outputTokens": None, "costUsd": 0.75}
    assert "  usage    - tokens in, - tokens out, $0.75\n" in _report(path, "text").decode()
    assert list(_roots(path).values()) == [{}]
