"""What a member name says: a field's class by its words, a name written as data is, and what an object's members are inside of."""

from __future__ import annotations

import functools
import re
from typing import Any

from replay.pipeline.model.incident.detectors import is_plain_token
from replay.pipeline.model.incident.replacements import ALIAS

_SECRET_PARTS = ("password", "passwd", "passphrase", "secret", "token", "apikey", "api_key", "access_key", "private_key",
                 "credential", "authorization", "cookie", "session_key", "signature", "cvv", "cvc")
_SECRET_WORDS = {"pwd", "pw", "auth", "pin", "otp", "sig", "jwt", "bearer", "session"}
_SECRET_LAST_WORDS = {"pass"}  # a secret when a name ends in it (``pass``, ``db_pass``, ``smtpPass``), not ``pass_rate``
_PERSONAL_WORDS = {"email", "mail", "phone", "mobile", "tel", "telephone", "fax", "address", "street", "city", "zip",
                   "zipcode", "postcode", "postal", "ssn", "dob", "birthday", "birthdate", "name", "firstname", "lastname",
                   "surname", "fullname", "username", "login", "iban", "bic", "passport", "ip", "card", "pan", "nin", "vat",
                   "givenname", "familyname", "middlename", "nickname", "displayname", "birth"}  # (plurals: ``_singular``)
_IDENTIFIER_SUFFIXES = ("_id", "_ids", "_key", "_keys", "_ref", "_reference", "_number", "_no", "_uuid", "_guid", "_handle")
_IDENTIFIER_WORDS = {"id", "ids", "uuid", "guid", "ref", "reference", "account", "customer", "user", "order", "invoice",
                     "transaction", "txn", "ticket", "idempotency", "handle", "sku", "serial", "device"}
_KEEP_EXACT = {"status", "state", "currency", "type", "kind", "category", "method", "unit", "outcome", "decision", "level",
               "severity", "priority", "channel", "mode", "tool", "tool_name", "event", "action", "operation", "role",
               "result_code", "error_code", "reason_code"}
_KEEP_SUFFIXES = ("_status", "_state", "_code", "_type", "_kind", "_currency", "_method", "_unit", "_mode", "_level")
_AMOUNT_WORDS = {"amount", "total", "price", "cost", "cents", "quantity", "qty", "count", "limit", "max", "min", "balance",
                 "fee", "tax", "subtotal", "score", "attempt", "attempts", "retry", "retries", "duration", "ms", "seconds",
                 "percent", "rate", "tokens", "size", "length", "index", "page", "version", "days", "hours", "minutes"}
_FREEFORM_WORDS = {"request", "message", "messages", "text", "note", "notes", "description", "comment", "comments", "reason",
                   "body", "content", "prompt", "query", "summary", "details", "detail", "subject", "title",
                   "instructions", "feedback", "response", "answer", "explanation", "msg", "transcript", "memo"}
_ERROR_KEYS = {"error", "errors", "err", "exception", "failure", "fault", "error_message", "stack", "traceback"}


def _singular(word: str) -> str:
    """An English plural's singular, near enough for field names: ``names`` name, ``addresses`` address, ``cities`` city."""
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("sses"):
        return word[:-2]
    if word.endswith("s") and not word.endswith("ss") and len(word) > 2:
        return word[:-1]
    return word


# every word the checks below know, and the words their compound names are made of: what a name written as one run
# (``PHONENUMBER``, ``dateofbirth``, ``SESSIONID``, ``PRIVATEKEY``) is split into, as ``phoneNumber`` is at its capitals
_VOCABULARY = frozenset({
    *_SECRET_WORDS, *_PERSONAL_WORDS, *_IDENTIFIER_WORDS, *_AMOUNT_WORDS, *_FREEFORM_WORDS, *_ERROR_KEYS,
    *(w for name in (*_SECRET_PARTS, *_KEEP_EXACT, *_IDENTIFIER_SUFFIXES, *_KEEP_SUFFIXES) for w in name.split("_") if w),
    "api", "access", "private", "client", "refresh", "date", "of", "first", "last", "full", "given", "family", "middle",
    "display", "user", "credit", "social", "security", "line", "home", "work", "billing", "shipping", "mac",
    # words of common field names with spaces (``Item Count``, ``Payment Method``, ``Delivery Notes``, ``Unit Price
    # (USD)``): known, such a name stays a name (``_field_words``)
    "item", "product", "payment", "delivery", "support", "internal", "free", "usd", "eur", "gbp", "number", "net", "gross",
})


_LONGEST_WORD = max(map(len, _VOCABULARY)) + 3  # (+ a plural's ending: ies, es, s)


def _known(word: str) -> bool:
    return word in _VOCABULARY or _singular(word) in _VOCABULARY


@functools.lru_cache(maxsize=4096)
def _split_run(word: str) -> str:
    """A word the checks do not know, split into words they do (the fewest; ``dateofbirth`` -> ``date_of_birth``),
    or itself when it is known or no such split exists."""
    if _known(word) or len(word) > 64:
        return word
    best: list[tuple[str, ...] | None] = [()] + [None] * len(word)
    for end in range(1, len(word) + 1):
        for start in range(max(0, end - _LONGEST_WORD), end):
            before, current = best[start], best[end]
            if before is not None and _known(word[start:end]) and (current is None or len(before) + 1 < len(current)):
                best[end] = (*before, word[start:end])
    found = best[-1]
    return "_".join(found) if found else word


@functools.lru_cache(maxsize=4096)  # (a name's class is asked for once a value under it, and again for its objects)
def field_class(key: str | None) -> str | None:
    """What a field name says about its value: secret, personal, identifier, keep, amount, freeform, error, or None.
    The name's case and separators do not count: ``PRIVATEKEY``, ``PassWord`` and ``x-api-key`` say secret as
    ``private_key``, ``password`` and ``apiKey`` do. A function of the name alone (the word lists above are never
    changed), so it is worked out once a name."""
    if not key:
        return None
    k = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", key)
    k = re.sub(r"[^a-z0-9]+", "_", k.lower()).strip("_")
    k = "_".join(_split_run(w) for w in k.split("_"))
    words = set(k.split("_"))
    if k in _ERROR_KEYS:
        return "error"
    if k == "tokens" or k.endswith("_tokens"):
        return "amount"
    if k in _KEEP_EXACT:
        return "keep"
    named = words | {_singular(w) for w in words}  # a secret's or a person's words in the plural too
    compact = k.replace("_", "")  # (``pass_word``: ``PassWord`` split at its capitals)
    if any(part.replace("_", "") in compact for part in _SECRET_PARTS) or named & _SECRET_WORDS or (  # sessions, pins, ...
            k.rsplit("_", 1)[-1] in _SECRET_LAST_WORDS):
        return "secret"
    if named & _PERSONAL_WORDS:  # names, first_names, emails, addresses, ...
        return "personal"
    if k in ("id", "uuid", "guid") or k.endswith(_IDENTIFIER_SUFFIXES):
        return "identifier"
    if k.endswith(_KEEP_SUFFIXES):
        return "keep"
    if words & _AMOUNT_WORDS:
        return "amount"
    if words & _FREEFORM_WORDS:
        return "freeform"
    if words & _IDENTIFIER_WORDS:
        return "identifier"
    return None


# What a member name is data by its shape alone (``data_key``): each a token no field's name is written as; a name
# with digits in it is a field's as long as it is none of them (``2fa_enabled``, ``iso_3166_alpha2``, ``level_1000``,
# ``year2024``, ``gpt-4o``, ``x509v3``)
_OPAQUE_SHAPES = re.compile(
    r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}"  # a UUID
    r"|(?<!\d)(?:\d{4}[-/]\d{1,2}[-/]\d{1,2}|\d{1,2}/\d{1,2}/\d{4})(?!\d)"  # a date: 2024-01-05, 01/05/2024
    r"|[A-Za-z][-#:]\d{4,}(?!\d)"  # a number glued on by - # or : (``order-1042``, ``INV-2024-0001``, ``ticket#5512``)
    r"|\d{9,}")  # a long number (as ``Redactor._number`` aliases one)
_NUMBERED = re.compile(r"([A-Za-z]+)_?\d{3,}")  # ``order_1042``: an identifier's word and a number
_EMBEDDED_DIGITS = re.compile(r"(?<=[A-Za-z])\d+(?=[A-Za-z])")


def _opaque_run(run: str) -> bool:
    """Is ``run`` (letters and digits) a generated token (``Nffrfeuf8nWb2c``, ``507f1f77bcf86cd799439011``): digits
    inside it between letters twice or more, in mixed case or hexadecimal, as no field's name is written
    (``iso3166alpha2code``, ``utf8mb4`` are names)?"""
    if len(_EMBEDDED_DIGITS.findall(run)) < 2:
        return False
    letters = [c for c in run if c.isalpha()]
    return (any(c.isupper() for c in letters) and any(c.islower() for c in letters)) or all(
        c in "0123456789abcdefABCDEF" for c in run)


@functools.lru_cache(maxsize=4096)
def _opaque(key: str) -> bool:
    """Is ``key`` (no spaces) a token written as data is, not as a field's name (``_OPAQUE_SHAPES``, ``order_1042``,
    a generated token in it, or longer than 64 characters)?"""
    if len(key) > 64 or _OPAQUE_SHAPES.search(key):
        return True
    numbered = _NUMBERED.fullmatch(key)
    if numbered and field_class(numbered.group(1)) == "identifier":
        return True
    return any(_opaque_run(run) for run in re.findall(r"[A-Za-z0-9]+", key))


@functools.lru_cache(maxsize=4096)
def data_key(key: str) -> bool:
    """Is member name ``key`` data rather than a field's name: text with spaces that names no field the word lists
    know or holds a word they do not (``Jane Doe``, ``Jane Doe (phone)``; not ``First Name`` or ``Order Total``:
    ``_field_words``), or a token written as data is (``_opaque``:
    ``order-1042``, ``2024-01-05``, ``cus_Nffrfeuf8nWb2c``; not ``1042``, ``2fa_enabled`` or ``gpt-4o``)?"""
    stripped = key.strip()
    if not stripped:
        return False
    if any(c.isspace() for c in stripped):
        return field_class(key) is None or not _field_words(stripped)
    return not is_plain_token(stripped) and _opaque(stripped)


def _field_words(text: str) -> bool:
    """Is every word of ``text`` (a name with spaces) one the field-name checks know, or made of such words, with no
    part written as data is (``First Name``, ``Order Total``, ``Date of Birth``, ``Shipping Address Line 2``)? One
    known word does not make a field's name of a person's (``Jane Doe (phone)``, ``Maria Garcia Lopez total``) or of
    a token's (``order-1042 total``)."""
    words = re.findall(r"[a-z]+", re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", text).lower())
    return all(_known(w) or "_" in _split_run(w) for w in words) and not any(_opaque(part) for part in text.split())


LABELS = ("name", "key", "header", "field", "param", "variable")  # a name-value pair's name: {"name": "PIN", "value": ...}


def inside(key: str | None, within: str | None) -> str | None:
    """What the members of an object found under field ``key`` are inside of: a secret or personal field (the nearest
    one), or nothing. ``{"auth": {"value": "letmein"}}``: ``value`` says nothing, ``auth`` says secret."""
    cls = field_class(key)
    return cls if cls in ("secret", "personal") else within


def member_within(node: dict[str, Any], member: str, key: str | None, within: str | None) -> str | None:
    """What ``member`` of object ``node`` (found under field ``key``, inside ``within``) is inside of: as ``inside``
    says, unless the object is a name-value pair that names a secret or personal field itself (HTTP headers,
    environment variables, query parameters: ``{"name": "X-Api-Key", "value": "letmein"}``, ``{"key": "DB_PASSWORD",
    "value": ...}``), whose members other than the name are that field's."""
    labels, others = members_within(node, key, within)
    return labels if member in LABELS else others


def members_within(node: dict[str, Any], key: str | None, within: str | None) -> tuple[str | None, str | None]:
    """What the members of object ``node`` are inside of (``member_within``), for all of them at once: its name labels
    (``name``, ``key``, ...), and its other members."""
    around = inside(key, within)
    pair = pair_names(node)
    return around, (pair if pair is not None else around)


def pair_names(node: dict[str, Any]) -> str | None:
    """The class (secret or personal) of the field a name-value pair ``node`` names (``member_within``), or None."""
    for label in LABELS:
        named = node.get(label)  # (an alias names nothing: ``pii_...`` in a bundle is no personal field's name)
        if isinstance(named, str) and len(named) <= 64 and not ALIAS.fullmatch(named):
            cls = field_class(named)
            if cls in ("secret", "personal"):
                return cls
    return None
