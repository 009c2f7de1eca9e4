"""Graph: wiring by code, and validation that refuses a bad graph before anything runs."""

from __future__ import annotations

import pytest
from engine_stages import AddField, AuditTrail, Collect, ListSource, RejectOdd

from replay.pipeline.engine.errors import ReplayError
from replay.pipeline.engine.graph import MAIN, Edge, Graph
from replay.stages.parse import ParseLines
from replay.stages.read import ReadJournal
from replay.stages.select import SelectEvents
from replay.stages.write import WriteJsonl


def refused(graph: Graph) -> dict:
    with pytest.raises(ReplayError) as info:
        graph.validate()
    assert info.value.exit_code == 2
    return info.value.body


def test_add_gives_ids_from_stage_names_and_sets_the_stage_id():
    graph = Graph()
    a = graph.add(ListSource())
    b = graph.add(AddField(), inputs=[a])
    c = graph.add(AddField(), inputs=[b])
    assert (a, b, c) == ("list_source", "add_field", "add_field_2")
    assert graph.nodes[c].stage.id == "add_field_2"


def test_add_refuses_a_duplicate_id():
    graph = Graph()
    graph.add(ListSource(), id="src")
    with pytest.raises(ReplayError) as info:
        graph.add(ListSource(), id="src")
    assert info.value.code == "E_CONFIG_SHAPE_INVALID" and info.value.body["path"] == "stages.src"


def test_chain_wires_each_stage_to_the_previous_one():
    graph = Graph.chain(ListSource(), AddField(), Collect())
    assert [n.inputs for n in graph.nodes.values()] == [[], ["list_source"], ["add_field"]]
    assert graph.validate() == [Edge("list_source", MAIN, "add_field"), Edge("add_field", MAIN, "collect")]


def test_side_port_inputs_become_edges():
    graph = Graph()
    graph.add(ListSource(), id="src")
    graph.add(RejectOdd(), id="even", inputs=["src"], route_errors=True)
    graph.add(Collect(), id="good", inputs=["even"])
    graph.add(Collect(), id="bad", inputs=["even.errors"])
    assert Edge("even", "errors", "bad") in graph.validate()


def test_a_wildcard_input_takes_that_port_from_every_stage_that_has_it():
    graph = Graph()
    graph.add(ListSource(), id="src")
    graph.add(AuditTrail(), id="audit_a", inputs=["src"])
    graph.add(AuditTrail(), id="audit_b", inputs=["audit_a"])
    graph.add(Collect(), id="out", inputs=["audit_b"])
    graph.add(Collect(), id="audits", inputs=["*.audit"])
    edges = graph.validate()
    assert {e.producer for e in edges if e.port == "audit"} == {"audit_a", "audit_b"}


def test_unknown_input_names_the_offending_key():
    graph = Graph()
    graph.add(ListSource(), id="src")
    graph.add(Collect(), id="out", inputs=["sorce"])
    body = refused(graph)
    assert body["code"] == "E_CONFIG_INPUT_UNKNOWN"
    assert body["path"] == "stages.out.inputs[0]"
    assert body["received"] == "sorce"
    assert "src" in body["expected"]


def test_unknown_port_is_refused():
    graph = Graph()
    graph.add(ListSource(), id="src")
    graph.add(Collect(), id="out", inputs=["src.repairs"])
    body = refused(graph)
    assert body["code"] == "E_CONFIG_INPUT_UNKNOWN" and "no port" in body["message"]


def test_a_wildcard_that_matches_nothing_is_refused():
    graph = Graph()
    graph.add(ListSource(), id="src")
    graph.add(Collect(), id="out", inputs=["src"])
    graph.add(Collect(), id="audits", inputs=["*.audit"])
    assert refused(graph)["code"] == "E_CONFIG_INPUT_UNKNOWN"


def test_a_sink_has_no_output_to_take():
    graph = Graph()
    graph.add(ListSource(), id="src")
    graph.add(Collect(), id="a", inputs=["src"])
    graph.add(Collect(), id="b", inputs=["a"])
    assert refused(graph)["code"] == "E_CONFIG_INPUT_UNKNOWN"


def test_a_cycle_is_refused_and_named():
    graph = Graph()
    graph.add(ListSource(), id="src")
    graph.add(AddField(), id="a", inputs=["src", "c"])
    graph.add(AddField(), id="b", inputs=["a"])
    graph.add(AddField(), id="c", inputs=["b"])
    graph.add(Collect(), id="out", inputs=["c"])
    body = refused(graph)
    assert body["code"] == "E_CONFIG_CYCLE"
    assert body["received"] in (["a", "b", "c", "a"], ["b", "c", "a", "b"], ["c", "a", "b", "c"])
    assert body["path"].startswith("stages.") and body["path"].endswith(".inputs")


def test_a_self_loop_is_a_cycle():
    graph = Graph()
    graph.add(ListSource(), id="src")
    graph.add(AddField(), id="a", inputs=["src", "a"])
    graph.add(Collect(), id="out", inputs=["a"])
    assert refused(graph)["code"] == "E_CONFIG_CYCLE"


def test_a_source_with_inputs_and_a_transform_without_are_refused():
    graph = Graph()
    graph.add(ListSource(), id="src")
    graph.add(ListSource(), id="src2", inputs=["src"])
    assert refused(graph)["path"] == "stages.src2.inputs"

    graph = Graph()
    graph.add(ListSource(), id="src")
    graph.add(AddField(), id="lonely")
    body = refused(graph)
    assert body["code"] == "E_CONFIG_INPUTS_INVALID" and body["path"] == "stages.lonely.inputs"


def test_an_output_nobody_consumes_is_refused():
    graph = Graph()
    graph.add(ListSource(), id="src")
    graph.add(AddField(), id="dangling", inputs=["src"])
    body = refused(graph)
    assert body["code"] == "E_CONFIG_OUTPUT_UNCONSUMED" and body["path"] == "stages.dangling"


def test_routed_errors_need_a_consumer():
    graph = Graph()
    graph.add(ListSource(), id="src")
    graph.add(RejectOdd(), id="even", inputs=["src"], route_errors=True)
    graph.add(Collect(), id="out", inputs=["even"])
    body = refused(graph)
    assert body["code"] == "E_CONFIG_ERRORS_UNCONSUMED"
    assert body["path"] == "stages.even.route_errors"
    assert "even.errors" in body["example"]


def test_errors_without_route_errors_may_go_unconsumed():
    graph = Graph.chain(ListSource(), RejectOdd(), Collect())
    graph.validate()  # they go to the graph's error port


def test_raw_lines_must_be_parsed_before_a_stage_that_needs_events():
    graph = Graph.chain(ReadJournal(), SelectEvents(), WriteJsonl())
    body = refused(graph)
    assert body["code"] == "E_CONFIG_INPUTS_INVALID"
    assert "parse" in body["message"] and body["path"] == "stages.select.inputs"
    Graph.chain(ReadJournal(), ParseLines(), SelectEvents(), WriteJsonl()).validate()
    Graph.chain(ReadJournal(), WriteJsonl()).validate()  # write accepts raw lines as they are


def test_stage_ids_are_restricted_to_a_safe_alphabet():
    graph = Graph()
    graph.add(ListSource(), id="src")
    with pytest.raises(ReplayError) as info:
        graph.add(Collect(), id="bad.id", inputs=["src"])
    assert info.value.code == "E_CONFIG_SHAPE_INVALID"


def test_a_non_string_input_is_refused():
    graph = Graph()
    graph.add(ListSource(), id="src")
    graph.add(Collect(), id="out", inputs=[""])
    assert refused(graph)["path"] == "stages.out.inputs[0]"


def test_topological_order_puts_producers_first():
    graph = Graph()
    graph.add(Collect(), id="out", inputs=["b"])
    graph.add(AddField(), id="b", inputs=["a"])
    graph.add(AddField(), id="a", inputs=["src"])
    graph.add(ListSource(), id="src")
    order = graph.topological(graph.validate())
    assert order.index("src") < order.index("a") < order.index("b") < order.index("out")


def test_fan_in_and_fan_out_validate():
    graph = Graph()
    graph.add(ListSource(), id="one")
    graph.add(ListSource(), id="two")
    graph.add(AddField(), id="merge", inputs=["one", "two"])
    graph.add(Collect(), id="x", inputs=["merge"])
    graph.add(Collect(), id="y", inputs=["merge"])
    assert len(graph.validate()) == 4
