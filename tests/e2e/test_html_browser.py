"""The HTML report in a real headless Chromium: the timeline renders, data shows as text, nothing runs, nothing loads."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import FIXTURES as FIXTURES_DIR
from conftest import run_replay

pytestmark = pytest.mark.browser

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
FIXTURES = FIXTURES_DIR / "report"
INPUTS = [str(FIXTURES / n) for n in ("healed_two_runs.jsonl", "no_run_records.jsonl", "escaping.jsonl")]


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api")
    if not Path(CHROMIUM).exists() and not shutil.which("chromium"):
        pytest.skip("chromium is not installed (`make packages` installs it)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """The HTML report over the fixtures, and the JSON report of the same input to compare against."""
    out = tmp_path_factory.mktemp("html") / "report.html"
    result = run_replay("report", *INPUTS, "--out", str(out), process=True)
    assert result.returncode == 0, result.stderr
    model = json.loads(run_replay("report", *INPUTS, "--format", "json", process=True).stdout)
    return out, model


@pytest.fixture
def page(browser, report):
    """The report loaded from its file; every request that is not that file fails the test."""
    out, _ = report
    context = browser.new_context()
    pg = context.new_page()
    outside: list[str] = []

    def guard(route):
        if route.request.url.startswith("file://"):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    context.route("**/*", guard)
    pg.goto(out.as_uri())
    pg.wait_for_load_state("load")
    yield pg
    context.close()
    assert outside == [], f"the page tried to load {outside}"


def test_each_run_has_a_visible_timeline(page, report):
    _, model = report
    svgs = page.locator("svg.timeline")
    assert svgs.count() == len(model["runs"]) == 5
    for k in range(svgs.count()):
        box = svgs.nth(k).bounding_box()
        assert box is not None and box["width"] > 300 and box["height"] > 40


def test_one_bar_per_tool_call_with_size(page, report):
    _, model = report
    for k, run in enumerate(model["runs"]):
        bars = page.locator(f'svg.timeline[data-run="{k + 1}"] rect.call-bar')
        assert bars.count() == run["toolCalls"]["total"]
        for i in range(bars.count()):
            box = bars.nth(i).bounding_box()
            assert box is not None and box["width"] > 0 and box["height"] > 0
        statuses = [bars.nth(i).get_attribute("data-status") for i in range(bars.count())]
        assert statuses == [c["status"] for c in run["toolCalls"]["calls"]]


def test_failures_are_marked_in_a_distinct_colour(page):
    failed_fill = page.locator('svg.timeline[data-run="1"] rect.call-bar.failed').evaluate("e => getComputedStyle(e).fill")
    ok_fill = page.locator('svg.timeline[data-run="1"] rect.call-bar.ok').first.evaluate("e => getComputedStyle(e).fill")
    assert failed_fill != ok_fill
    run_failed = page.locator('svg.timeline[data-run="2"] .run-failed')
    assert run_failed.count() == 1 and run_failed.bounding_box()["height"] > 0
    assert page.locator('svg.timeline[data-run="1"] .tool-failed').count() == 1
    assert page.locator(".legend li").count() >= 5


def test_hover_titles_carry_the_details(page):
    title = page.locator('svg.timeline[data-run="1"] rect.call-bar').nth(1).locator("title").text_content()
    assert "get_prices" in title and "error" in title and "1s" in title


def test_script_in_the_data_shows_as_text_and_does_not_run(page):
    assert page.evaluate("window.__pwned") is None
    assert page.title() == "replay report"
    assert page.locator("script").count() == 0
    assert page.locator("img").count() == 0
    prompt = page.locator("article#run-5 .prompt").first.inner_text()
    assert "<script>window.__pwned=1;document.title='pwned'</script>" in prompt
    heading = page.locator("article#run-5 h2").inner_text()
    assert "run_<b>x</b>" in heading
    assert page.locator("article#run-5 h2 b").count() == 0


def test_each_timeline_parses_as_svg_with_control_characters_in_the_data(browser, tmp_path):
    """A form feed in a run id, prompt or tool name was written raw: the browser shows HTML anyway, but the timeline
    SVG, taken out of the page (XMLSerializer) and read as the SVG it is (DOMParser), was no well-formed XML."""
    journal = tmp_path / "ff.jsonl"
    journal.write_text('{"$record":"run","runId":"r\\fx","prompt":"p\\fq","status":"ok","response":"x"}\n'
                       '{"seq":1,"timestamp":"2026-03-01T12:00:00Z","type":"tool_called","runId":"r\\fx",'
                       '"payload":{"callId":"c","toolName":"t\\fn"}}\n')
    out = tmp_path / "ff.html"
    assert run_replay("report", str(journal), "--out", str(out), process=True).returncode == 0
    context = browser.new_context()
    page = context.new_page()
    page.goto(out.as_uri())
    errors = page.evaluate("""() => [...document.querySelectorAll('svg.timeline')].map(svg => {
        const text = new XMLSerializer().serializeToString(svg);
        const doc = new DOMParser().parseFromString(text, 'image/svg+xml');
        const error = doc.querySelector('parsererror');
        return error ? error.textContent : (text.includes('\\\\u000c') ? '' : 'the form feed is not shown');
    })""")
    context.close()
    assert errors == [""]
