"""The Redactor: walks an incident (or any record) and aliases or removes each private value it finds, with a fresh secret.

Every ``Redactor`` draws a fresh random secret; an alias is ``<kind>_<16 hex digits>`` of an HMAC-SHA256
of the value under that secret, so within one import a repeated value (an order id, an idempotency
key) always gets the same alias and stays correlatable, while two imports of the same export give
different aliases. The secret and the original-to-alias mapping live only in memory.

What happens to a value (first match wins):

1. a detector (private key block, JWT, AWS key, provider API key, bearer token, password in a URL,
   email, Luhn-valid card number, IP address, phone number) matches the whole string: alias; it
   matches part of one token (``refund_sk_live_...``): the token is aliased; part of a longer text: the text is removed;
2. the field name says what it holds: credentials (``password``, ``api_key``, ...) and personal data
   (``email``, ``name``, ``address``, ...) are aliased, opaque identifiers (``id``, ``*_id``,
   ``*_key``, ``*_number``, ...) are aliased, numbers included (they become string aliases);
   freeform text (``request``, ``message``, ``note``, ...) is removed; a member of an object under a credential or
   personal field whose own name says nothing is taken for one too (``{"auth": {"value": ...}}``), at any depth, and
   so is the value of a name-value pair naming one (``{"name": "X-Api-Key", "value": ...}``);
3. error text (a tool result's ``error``, a ``task_error`` message) keeps machine error codes
   (``TIMEOUT``, ``gateway_timeout``) and loses everything else;
4. what remains is aliased when the same text is aliased elsewhere in the import (``"who": "jdoe"`` next to
   ``"username": "jdoe"``, before or after it), kept when it is plainly not private (statuses, currencies, short
   lowercase words, small numbers such as amounts and limits), removed when it is text with spaces, and
   aliased otherwise (opaque tokens). A field named for what is kept (``status``, ``currency``, ``*_code``, ...)
   keeps only such a token too: a sentence under it is removed, a name or a password aliased.

An object's member name is aliased when it is data rather than a field's name (``Redactor._key``): a detector's
find, text with spaces holding a word no field name is made of or a token written as data is (``field_names.data_key``:
``Jane Doe (phone)``, ``order-1042``, a date, a UUID, ``cus_Nffrfeuf8nWb2c``), which gets the alias the same value has
elsewhere in the import, or a value aliased elsewhere (``"logins": {"jdoe": 3}``). A name the field-name words know
(``status``, ``order_id``) or the rules read stays, whatever value elsewhere it equals; a rule path's array index
is never a name. The value under an aliased name is judged under no name (``Redactor._under``), as a re-check that
sees only the alias judges it.

Protocol structure is never touched: event types, call ids, tool names, ``ok``, effect types, rule
ids and fields; an incident where a tool's name, an effect's type or a rule's id holds a credential, an email or a
card number is refused (``protocol_names``). Automated redaction is not a guarantee of anonymity; the audit
says so.

What a value says is ``detectors``' to tell, what a member name says ``field_names``'; ``--redact`` pointers are
``redact_pointers``', the audit is ``audit``'s and the re-check of a bundle read back ``recheck``'s.
"""

from __future__ import annotations

import copy
import hashlib
import hmac
import secrets
from collections import Counter
from collections.abc import Sequence
from typing import Any

from replay.pipeline.engine import exactjson
from replay.pipeline.model.incident import pointers, redact_pointers
from replay.pipeline.model.incident.audit import audit_of
from replay.pipeline.model.incident.detectors import is_machine_code, is_plain_token, luhn_ok, scan, written_integer
from replay.pipeline.model.incident.field_names import LABELS, data_key, field_class, member_within, members_within
from replay.pipeline.model.incident.protocol_names import refuse_private_names
from replay.pipeline.model.incident.replacements import ALIAS_PREFIX, REMOVED
from replay.pipeline.model.incident.rules import group_key

# A number under an amount's name (``amount``, ``total_cents``) is kept however long, unless it is a Luhn-valid 13 to 19
# digits starting as payment cards do (2 to 6: banking and finance): no amount is that long, while a millisecond time
# (``started_ms``: 13 digits from 1) or a byte size may be
_CARD_FIRST_DIGITS = frozenset("23456")


# the field classes whose value is private whatever it looks like, and the kind of alias each gives
_KIND_OF_CLASS = {"secret": "secret_field", "personal": "personal_field", "identifier": "identifier"}


class Redactor:
    """Redacts values with one random secret; counts what it did, never what it saw."""

    def __init__(self, secret: bytes | None = None) -> None:
        self._secret = secret if secret is not None else secrets.token_bytes(32)
        self.counts: Counter[str] = Counter()
        self._aliases: set[str] = set()
        self._value_aliases: dict[str, tuple[str, str]] = {}  # a private value -> (kind, alias) (``_aliased``): never written
        self._rule_names: frozenset[str] = frozenset()  # the member names the incident's rules read (``rule_names``)
        self._scans: dict[str, list[tuple[str, int, int]]] | None = None  # ``scan``'s hits, while one incident is redacted

    def _scan(self, text: str) -> list[tuple[str, int, int]]:
        if self._scans is None:
            return scan(text)
        hits = self._scans.get(text)
        if hits is None:
            hits = self._scans[text] = scan(text)
        return hits

    # aliases ------------------------------------------------------------------------------------
    def alias(self, kind: str, value: str) -> str:
        digest = hmac.new(self._secret, value.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()[:16]
        alias = f"{ALIAS_PREFIX[kind]}_{digest}"
        self._aliases.add(alias)
        return alias

    def _count_hits(self, hits: list[tuple[str, int, int]]) -> None:
        """Count each kind the detectors found (``_scan``) once."""
        for kind in {h[0] for h in hits}:
            self.counts[kind] += 1

    def _aliased(self, kind: str, value: str) -> str:
        """The alias of a value a detector or its field's name says is private, remembered (in memory only) for the
        same text anywhere else in the import, as a member name (``_key``) or a value no name says anything of
        (``_string``): one alias a value, the first its kind gave (``"customer_id": "jdoe"`` and ``"username":
        "jdoe"`` are one person). An opaque token aliased for want of a name is not remembered: a word such as
        ``createdAt`` under ``sort`` is as likely a field's name as data."""
        known = self._value_aliases.get(value)
        if known is None:
            known = self._value_aliases[value] = (kind, self.alias(kind, value))
        self._aliases.add(known[1])
        return known[1]

    def _under(self, key: str, name: str, within: str | None) -> tuple[str | None, str | None]:
        """The field name the value of member ``key`` is judged under, and what it is inside of (``within``, as
        ``members_within`` says), when redaction writes the member's name as ``name``: its own name; or, when that
        name is aliased, no name, inside what the name said of a credential, a person or an identifier
        (``"2024-01-05_email"``: personal), or free text, as an error's words are (``"Delivery Notes (Jane)"``: its text
        removed). The alias says nothing of what the name said, so a value a name keeps (``"2024-01-05_status"``: a
        long status token; ``_total``: a long number) is not kept under it: what the import writes there is what a
        re-check reading only the alias (``_Again``) keeps too (a text removed is ``[redacted]`` to it)."""
        if name == key:
            return key, within
        cls = field_class(key)
        if cls == "error":
            cls = "freeform"
        return None, (cls if cls in ("secret", "personal", "identifier", "freeform") else within)

    # values -------------------------------------------------------------------------------------
    def value(self, node: Any, key: str | None = None, context: str = "data", within: str | None = None) -> Any:
        """A redacted copy of any JSON value found under field ``key``; ``within``: the class (secret or personal) of
        the nearest field around it that says so, which a member whose own name says nothing holds too."""
        if isinstance(node, dict):  # (what its members are inside of is the object's: judged once, not per member)
            labels, others = members_within(node, key, within)
            out = {}
            for k, v in node.items():
                name = self._key(k)
                under, around = self._under(k, name, labels if k in LABELS else others)
                out[name] = self.value(v, under, "error" if field_class(under) == "error" else context, around)
            return out
        if isinstance(node, list):
            return [self.value(v, key, context, within) for v in node]
        if isinstance(node, str):
            return self._string(node, key, context, within)
        if isinstance(node, bool) or node is None:
            return node
        if isinstance(node, int | float):
            return self._number(node, key, within)
        return node  # pragma: no cover - JSON has no other types

    def _key(self, key: str) -> str:
        """An object's member name as redaction leaves it: a field name (``order_id``, ``createdAt``, ``First Name``)
        as it is; data used as a name (``"order-1042": {...}``, ``"Jane Doe": {...}``, ``"cus_Nffrfeuf8nWb2c"``) as an
        alias: what a detector finds there, the alias the same value has as a value in this import, or else an
        identifier's (``data_key`` tells the two apart). A name holding a value aliased anywhere in the import
        (``"logins": {"jdoe": 3}`` with ``"username": "jdoe"``) gets its alias too, unless the field-name words know
        it (``"name": "status"`` leaves the ``status`` fields) or the rules read it (``"name": "result"`` next to a
        rule requiring ``result``): those are fields' names by their own word."""
        hits = self._scan(key)
        if hits:
            self._count_hits(hits)
            self.counts["object_keys_aliased"] += 1
            return self.alias(hits[0][0], key)
        stripped = key.strip()
        known = self._value_aliases.get(stripped)
        if not data_key(key) and (known is None or field_class(key) is not None or key in self._rule_names):
            return key
        self.counts["object_keys_aliased"] += 1
        if known is not None:
            return self._aliased(known[0], stripped)
        self.counts["identifier"] += 1
        return self.alias("identifier", stripped)

    def _string(self, text: str, key: str | None, context: str, within: str | None = None) -> str:
        stripped = text.strip()
        if not stripped:
            return text
        hits = self._scan(text)
        if hits:
            self._count_hits(hits)
            offset = len(text) - len(text.lstrip())
            for kind, start, end in hits:
                if start == offset and end == offset + len(stripped):
                    return self._aliased(kind, stripped)
            if not any(c.isspace() for c in stripped):  # one token with a secret glued in (``key_sk_live_...``)
                return self._aliased(hits[0][0], stripped)
            self.counts["freeform_text"] += 1
            return REMOVED
        cls = field_class(key) or within
        if cls in _KIND_OF_CLASS:
            kind = _KIND_OF_CLASS[cls]
            self.counts[kind] += 1
            return self._aliased(kind, stripped)
        if context == "error":
            if is_machine_code(stripped):
                return text
            self.counts["freeform_text"] += 1
            return REMOVED
        if cls == "freeform":
            self.counts["freeform_text"] += 1
            return REMOVED
        if cls == "keep" and is_plain_token(stripped, 64):  # (a status, a currency: no sentence, name or password under one)
            return text
        known = self._value_aliases.get(stripped)  # (aliased elsewhere: ``"who": "jdoe"`` next to ``"username": "jdoe"``)
        if known is not None:
            self.counts[known[0]] += 1
            return self._aliased(known[0], stripped)
        if any(c.isspace() for c in stripped):
            self.counts["freeform_text"] += 1
            return REMOVED
        if is_plain_token(stripped):
            return text
        self.counts["identifier"] += 1
        return self.alias("identifier", stripped)

    def _number(self, number: float, key: str | None, within: str | None = None) -> Any:
        cls = field_class(key) or within
        # (a number a double does not hold by its text as written: ``1e400`` and ``2e400`` are both infinity)
        text = number.text if isinstance(number, exactjson.ExactNumber) else repr(number) if isinstance(number, float) else str(number)
        whole = written_integer(number)  # (a float that is an integer is judged as that integer: ``4111111111111111.0``)
        if whole is not None:
            text = whole[1]  # (and aliased as it: the same number written either way gets one alias)
        kind = None
        if cls in _KIND_OF_CLASS:
            kind = _KIND_OF_CLASS[cls]
        elif whole is not None:
            count, digits = whole[0], text.lstrip("-")
            if 13 <= count <= 19 and luhn_ok(digits) and (cls != "amount" or digits[0] in _CARD_FIRST_DIGITS):
                kind = "card_number"
            elif count >= 9 and cls != "amount":
                kind = "identifier"
        if kind is None:
            return number
        self.counts[kind] += 1
        self.counts["numeric_to_string"] += 1
        return self._aliased(kind, text)

    # incidents ----------------------------------------------------------------------------------
    def incident(self, incident: dict[str, Any], remove: list[str] | tuple[str, ...] = ()) -> dict[str, Any]:
        """A redacted copy of a normalised incident; ``remove`` lists JSON Pointers to delete first."""
        with exactjson.deep():  # (the copy and the walks recurse once or twice a level: as deep as the import reads)
            names = rule_names(incident["assertions"])
            # one copy, its --redact pointers removed and its kept names checked once, that both passes read (neither
            # changes it: each builds its own redacted copy)
            work = copy.deepcopy({k: incident[k] for k in ("input", "events", "assertions")})
            removed = redact_pointers.remove(work, remove)
            refuse_private_names(work)
            # a first pass learns every private value's alias, so that a member name holding one gets it wherever the
            # value comes (the input is redacted last; an effect's name may come before the output's value)
            scout = type(self)(self._secret)
            scout._scans = self._scans = {}  # (both passes scan the same texts: once each is enough)
            try:
                scout._rule_names = self._rule_names = names
                scout._incident(incident, work)
                self._value_aliases.update(scout._value_aliases)
                if removed:
                    self.counts["pointer_removed"] += removed
                return self._incident(incident, work)
            finally:
                self._scans = None

    def _incident(self, incident: dict[str, Any], work: dict[str, Any]) -> dict[str, Any]:
        """``incident`` redacted from ``work``: its input, events and assertions as they are to be redacted (copied, the
        ``--redact`` pointers removed, the names kept checked: ``incident``), which this leaves as they are."""
        events = []
        for event in work["events"]:
            kind = event["type"]
            if kind == "tool_call":
                event = {**event, "args": self.value(event["args"])}
            elif kind == "tool_result":
                event = {**event, "result": self.value(event["result"], "result"), "error": self.value(event["error"], "error", "error")}
            elif kind == "business_effect":
                effect = event["effect"]
                body = self.value({k: v for k, v in effect.items() if k != "type"})
                event = {**event, "effect": {"type": effect["type"], **body}}
            elif kind == "final_output":
                event = {**event, "output": self.value(event["output"])}
            else:
                event = {**event, "message": self._string(event["message"], "message", "error")}
            events.append(event)
        # an effect_count rule's group_by field goes through the key redaction the effects' keys went through
        rules = [{**rule, "group_by": self._key(rule["group_by"])} if rule["type"] == "effect_count" and "group_by" in rule
                 else rule for rule in work["assertions"]]
        for rule, grouped in zip(work["assertions"], rules, strict=True):
            if grouped is not rule:
                self._keep_groups(work["events"], events, rule["effect_type"], rule["group_by"], grouped["group_by"])
        terminal = work["events"][-1] if work["events"] else {}
        output, redacted_output = terminal.get("output"), events[-1].get("output") if events else None
        assertions = [self._rule(rule, output, redacted_output) for rule in rules]
        return {**incident, "input": self.value(work["input"]), "events": events, "assertions": assertions}

    def _keep_groups(self, originals: list[dict[str, Any]], redacted: list[dict[str, Any]], effect_type: str, field: str,
                     name: str) -> None:
        """An ``effect_count`` rule's groups stay the groups they were: when redaction made two values of the
        ``group_by`` field one (two freeform texts both removed, ``"a1"`` and ``" a1"``), each value of it in those
        effects becomes an alias of its group instead (the same group, the same alias; another group, another).
        ``name`` is the field's name as redaction left it (``_key``)."""
        pairs = [(o["effect"], r["effect"]) for o, r in zip(originals, redacted, strict=True)
                 if o["type"] == "business_effect" and o["effect"].get("type") == effect_type]
        before = [group_key(o, field) for o, _ in pairs]
        after = [group_key(r, name) for _, r in pairs]
        if len(set(before)) == len(set(after)) == len(set(zip(before, after, strict=True))):
            return  # one group after for each group before
        for (original, effect), group in zip(pairs, before, strict=True):
            if field in original:
                effect[name] = self.alias("identifier", "\x00group\x00" + group)

    def _rule(self, rule: dict[str, Any], output: Any, redacted_output: Any) -> dict[str, Any]:
        """A rule as the redacted incident must hold it to judge as the original did: field names and pointer tokens
        go through the key redaction the output's keys went through (an ``effect_count`` rule's ``group_by`` field has
        been through it, as the effects' keys: ``_incident``), and an ``output_equals`` value is redacted as the
        output's value at its path was (under the same key, as error text where that is), never leaving a value in the
        rules that the output hid. Two values that differed must still
        differ: redaction can make them one (two freeform texts are both removed; ``12345`` and ``"12345"``, ``"a1"``
        and ``" a1"`` get one alias), so such a rule value becomes an alias of its own instead."""
        kind = rule["type"]
        if kind == "required_output":
            return {**rule, "fields": [self._key(f) for f in rule["fields"]]}
        if kind != "output_equals":
            return rule
        tokens = pointers.parse(rule["path"])
        names, key, context, within = self._walk(output, tokens)
        redacted = self.value(rule["value"], key, context, within)
        path = pointers.format_pointer(names)
        if isinstance(output, dict) and isinstance(redacted_output, dict):
            was = exactjson.typed_equal(pointers.resolve(output, tokens), rule["value"])
            if not was and exactjson.typed_equal(pointers.resolve(redacted_output, pointers.parse(path)), redacted):
                redacted = self.alias("identifier", "\x00rule value\x00" + exactjson.dumps(rule["value"]).decode())
        if not exactjson.typed_equal(redacted, rule["value"]):
            self.counts["rule_values_redacted"] += 1
        return {**rule, "path": path, "value": redacted}

    def _walk(self, output: Any, tokens: list[str]) -> tuple[list[str], str | None, str, str | None]:
        """A rule path's tokens as the redacted output holds them, and the field name, context (error text or data)
        and enclosing class ``value`` redacts the value at the path in ``output`` under (as it walks an object: the
        last member's name, ``None`` when that name is aliased, ``_under``; error text below an error field). An
        object member's name goes through the key redaction the output's keys went through, an array's index stays
        as it is (``/items/0``: ``0`` may be a value aliased elsewhere, never an index; an array item is redacted
        under its array's name). Past what the output has, tokens are taken for member names."""
        names: list[str] = []
        key: str | None = None
        context = "data"
        within: str | None = None
        node: Any = output
        for token in tokens:
            if isinstance(node, list):
                names.append(token)
                node = pointers.resolve(node, [token])
                continue
            names.append(self._key(token))
            key, within = self._under(token, names[-1], member_within(node if isinstance(node, dict) else {}, token,
                                                                       key, within))
            if field_class(key) == "error":
                context = "error"
            node = node.get(token, pointers.MISSING) if isinstance(node, dict) else pointers.MISSING
        return names, key, context, within

    # the audit ----------------------------------------------------------------------------------
    def audit(self, incident_id: str | None = None, judged_otherwise: Sequence[tuple[str, str, str]] = ()) -> dict[str, Any]:
        """Counts and warnings only: no value, no field name, no alias mapping (``audit_of``)."""
        return audit_of(self.counts, len(self._aliases), incident_id, judged_otherwise)


def rule_names(rules: list[dict[str, Any]]) -> frozenset[str]:
    """The member names rules read: a ``required_output``'s fields, the tokens of an ``output_equals`` path, an
    ``effect_count``'s ``group_by`` field (``Redactor._key`` leaves them when they only equal a value aliased
    elsewhere)."""
    names: set[str] = set()
    for rule in rules:
        if rule.get("type") == "required_output":
            names.update(f for f in rule.get("fields", ()) if isinstance(f, str))
        elif rule.get("type") == "output_equals" and isinstance(rule.get("path"), str):
            names.update(pointers.parse(rule["path"]))
        elif rule.get("type") == "effect_count" and isinstance(rule.get("group_by"), str):
            names.add(rule["group_by"])
    return frozenset(names)
