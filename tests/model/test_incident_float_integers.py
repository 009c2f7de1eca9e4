"""Redaction judges a JSON float that is an integer (``4111111111111111.0``, ``4.111111111111111e15``) as that integer:
a card number or a long identifier written so is aliased as the int is (found by a read-only leak hunt: such a card
was kept verbatim in every file of an import, and inspect let it through)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from replay.pipeline.engine import exactjson
from replay.pipeline.model.incident.detectors import luhn_ok, written_integer
from replay.pipeline.model.incident.recheck import unredacted
from replay.pipeline.model.incident.redactor import Redactor


def _luhn_completed(body: str) -> str:
    """``body`` with the check digit that makes it Luhn-valid."""
    return next(body + d for d in "0123456789" if luhn_ok(body + d))


cards = st.builds(_luhn_completed, st.from_regex(r"[2-6][0-9]{11,17}", fullmatch=True))
identifiers = st.integers(10 ** 8, 10 ** 30).map(str)


@st.composite
def float_forms(draw: st.DrawFn, digits: str) -> str:
    """``digits`` (an integer) written as a JSON float: ``D.0...``, ``d.ddde+K``, ``DDD0e-1``, ``0.DDDe+K``, ..."""
    point = draw(st.integers(0, len(digits)))  # where the point goes: the exponent moves it back
    zeros = "0" * draw(st.integers(0, 3))
    mantissa = f"{digits[:point] or '0'}.{digits[point:]}{zeros}" if point < len(digits) or zeros else f"{digits}.0"
    shift = len(digits) - point
    e = draw(st.sampled_from(["e", "E"]))
    sign = draw(st.sampled_from(["", "+"]))
    return f"{mantissa}{e}{sign}{shift}" if shift else draw(st.sampled_from([mantissa, f"{mantissa}{e}0"]))


def _incident(text: str) -> dict[str, Any]:
    """A normalised incident holding the number ``text`` in its input, its output and under an unnamed array (and
    under an amount's name, which keeps a long number, not a card's)."""
    return exactjson.loads(f'{{"input": {{"b": {text}, "amount": {text}}}, "events": [{{"type": "final_output", '
                           f'"output": {{"paid": [{text}], "x": {{"y": {text}}}}}}}], "assertions": []}}'.encode())


@settings(max_examples=150, deadline=None)
@given(st.data(), st.one_of(cards, identifiers))
def test_an_integer_written_as_a_float_is_aliased_as_the_int_is(data: st.DataObject, digits: str) -> None:
    text = data.draw(float_forms(digits))
    incident = _incident(text)
    assert written_integer(incident["input"]["b"]) == (len(digits), digits)
    redactor = Redactor(bytes(32))
    out = redactor.incident(incident)
    as_int = Redactor(bytes(32)).incident(_incident(digits))
    assert out["events"] == as_int["events"] and out["input"]["b"] == as_int["input"]["b"]
    assert isinstance(out["input"]["b"], str) and out["input"]["b"].startswith(("card_", "id_"))
    kept = out["input"].pop("amount")
    assert isinstance(kept, str) == isinstance(as_int["input"]["amount"], str)
    assert kept == as_int["input"]["amount"] if isinstance(kept, str) else exactjson.typed_equal(kept, incident["input"]["amount"])
    written = exactjson.dumps(out)
    assert digits.encode() not in written and text.encode() not in written, written


@settings(max_examples=100, deadline=None)
@given(st.data(), cards)
def test_a_bundle_holding_a_card_written_as_a_float_is_refused(data: st.DataObject, digits: str) -> None:
    """inspect's re-check (``unredacted``): under a field's name and under an aliased key (judged by the number alone)."""
    text = data.draw(float_forms(digits))
    for member in ("paid_with", "id_0123456789abcdef"):
        incident = exactjson.loads(f'{{"input": {{"{member}": {text}}}, "events": [{{"type": "final_output", '
                                   '"output": {}}], "assertions": []}'.encode())
        found = unredacted(incident)
        assert found is not None and found[0] == ["input", member], (text, member)


@given(st.integers(0, 10 ** 25), st.from_regex(r"[0-9]{0,5}[1-9]", fullmatch=True))
def test_a_fraction_is_no_integer_and_a_small_number_is_kept(whole: int, fraction: str) -> None:
    number = exactjson.loads(f"{whole}.{fraction}".encode())
    assert written_integer(number) is None
    assert Redactor(bytes(32)).value(number, "b") is number
    small = exactjson.loads(f"{whole % 10 ** 8}.0".encode())
    assert Redactor(bytes(32)).value(small, "b") is small


def test_an_integer_of_more_digits_than_an_int_is_read_with_is_an_identifier() -> None:
    number = exactjson.loads(b"1e400000")
    assert written_integer(number) == (400001, "1e400000")
    assert Redactor(bytes(32)).value(number, "b").startswith("id_")
