"""Local redaction: detectors for credentials and personal data, keyed-hash aliases, JSON Pointer removal, a value-free audit.

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
find, text with spaces holding a word no field name is made of or a token written as data is (``data_key``:
``Jane Doe (phone)``, ``order-1042``, a date, a UUID, ``cus_Nffrfeuf8nWb2c``), which gets the alias the same value has
elsewhere in the import, or a value aliased elsewhere (``"logins": {"jdoe": 3}``). A name the field-name words know
(``status``, ``order_id``) or the rules read stays, whatever value elsewhere it equals; a rule path's array index
is never a name. The value under an aliased name is judged under no name (``Redactor._under``), as a re-check that
sees only the alias judges it.

Protocol structure is never touched: event types, call ids, tool names, ``ok``, effect types, rule
ids and fields; an incident where a tool's name, an effect's type or a rule's id holds a credential, an email or a
card number is refused (``refuse_private_names``). Automated redaction is not a guarantee of anonymity; the audit
says so.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import hmac
import ipaddress
import re
import secrets
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any, NoReturn

from replay.pipeline.engine import exactjson
from replay.pipeline.engine.errors import ReplayError
from replay.pipeline.model.incident import pointers
from replay.pipeline.model.incident.rules import FAIL, INCONCLUSIVE, PASS, group_key

REMOVED = "[redacted]"

# detectors ----------------------------------------------------------------------------------------
_API_KEY_SHAPES = "|".join((
    r"sk-ant-[A-Za-z0-9_-]{20,}",  # Anthropic
    r"sk-(?:proj-|svcacct-|admin-|or-v1-)?[A-Za-z0-9_-]{20,}",  # OpenAI, OpenRouter
    r"(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}",  # Stripe
    r"whsec_[A-Za-z0-9]{20,}",  # Stripe webhooks
    r"gh[pousr]_[A-Za-z0-9]{30,}",  # GitHub
    r"github_pat_[A-Za-z0-9_]{22,}",
    r"glpat-[A-Za-z0-9_-]{20,}",  # GitLab
    r"xox[abposr]-[A-Za-z0-9-]{10,}",  # Slack
    r"AIza[0-9A-Za-z_-]{35}",  # Google
    r"hf_[A-Za-z0-9]{30,}",  # Hugging Face
    r"SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}",  # SendGrid
    r"npm_[A-Za-z0-9]{36}",
    r"(?:AC|SK)[0-9a-f]{32}",  # Twilio
    r"gsk_[A-Za-z0-9]{20,}",  # Groq
    r"xai-[A-Za-z0-9]{20,}",
    r"pplx-[A-Za-z0-9]{20,}",
    r"r8_[A-Za-z0-9]{20,}",  # Replicate
))
_IPV4_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
DETECTORS: tuple[tuple[str, re.Pattern[str]], ...] = (
    # a block's body ends at its END line, and is never looked for past the next BEGIN: each BEGIN without an END read
    # on to the end of the text (a MiB of header lines: quadratic, hours)
    ("private_key", re.compile(r"-----BEGIN ((?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?)-----"
                               r"(?:(?:(?!-----BEGIN )[\s\S])*?-----END \1-----)?")),
    # a key is found glued after ``_`` or ``-`` (``lookup_sk_live_...``, ``x-eyJ...``), never inside a longer run of
    # letters and digits (``task``, ``desk``)
    ("jwt", re.compile(r"(?<![A-Za-z0-9])eyJ[A-Za-z0-9_-]{2,}\.eyJ[A-Za-z0-9_-]{2,}\.[A-Za-z0-9_-]*")),
    ("aws_access_key", re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|AKPA|ANPA|ANVA|APKA|AROA|ASCA)[A-Z0-9]{16}(?![A-Z0-9])")),
    ("aws_secret_key", re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")),
    ("api_key", re.compile(rf"(?<![A-Za-z0-9])(?:{_API_KEY_SHAPES})")),
    ("bearer_token", re.compile(r"(?i)\b(?:bearer|token|basic)\s+[A-Za-z0-9._~+/-]{12,}=*")),
    # a scheme of at most 32 characters: unbounded, every word start of a long run of letters, digits, '.', '-' and
    # '+' (a dotted or dashed string of a MiB) read on to the run's end looking for "://": quadratic, hours for 4 MiB
    ("url_password", re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]{0,31}://[^\s/?#@:]+:[^\s/?#@]+@[^\s\"'<>]+")),
    ("email", re.compile(r"(?<![\w.+%-])[A-Za-z0-9._%+-]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*\.[A-Za-z]{2,}")),
    ("card_number", re.compile(r"(?<!\d)(?:\d[ -]?){12,18}\d(?!\d)")),
    ("ip_address", re.compile(rf"(?<![\d.])(?:{_IPV4_OCTET}\.){{3}}{_IPV4_OCTET}(?!\d)(?!\.\d)"
                              r"|(?<![0-9A-Fa-f:])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?![0-9A-Fa-f:])")),
    ("phone_number", re.compile(r"(?<![\w+])(?:\+\d{1,3}[\s.-]?)?(?:\(\d{1,4}\)[\s.-]?)?\d{1,4}(?:[\s.-]?\d{1,4}){1,6}(?!\w)")),
)
DETECTOR_KINDS = tuple(kind for kind, _ in DETECTORS)
ALIAS_PREFIX = {
    "private_key": "secret", "jwt": "secret", "aws_access_key": "secret", "aws_secret_key": "secret", "api_key": "secret",
    "bearer_token": "secret", "url_password": "secret", "email": "email", "card_number": "card", "ip_address": "ip",
    "phone_number": "phone", "secret_field": "secret", "personal_field": "pii", "identifier": "id",
}
FIELD_KINDS = ("secret_field", "personal_field", "identifier", "freeform_text")
_ALIAS = re.compile(rf"(?:{'|'.join(sorted(set(ALIAS_PREFIX.values())))})_[0-9a-f]{{16}}")  # what ``alias`` writes


# A number under an amount's name (``amount``, ``total_cents``) is kept however long, unless it is a Luhn-valid 13 to 19
# digits starting as payment cards do (2 to 6: banking and finance): no amount is that long, while a millisecond time
# (``started_ms``: 13 digits from 1) or a byte size may be
_CARD_FIRST_DIGITS = frozenset("23456")


def luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


_LONGEST_WRITTEN = 4300  # (the most digits an integer of JSON is read as an int with: ``exactjson``'s ``_int``)


def written_integer(number: float) -> tuple[int, str] | None:
    """The integer a JSON number is as written, as (how many digits it has, its text as an int is written:
    ``-4111111111111111``), or None when it is no integer. A float counts as the integer it is
    (``4111111111111111.0`` and ``4.111111111111111e15`` are ``4111111111111111``): the number its text says
    (``ExactNumber``'s text; a double's shortest text, which is the number written, as ``exactjson`` reads a float),
    never the double's nearest integer. One of more digits than an int is read with (``1e400000``) is its text as
    written."""
    if isinstance(number, int):
        return len(str(abs(number))), str(number)
    text = number.text if isinstance(number, exactjson.ExactNumber) else repr(number)
    try:
        parts = Decimal(text).as_tuple()
    except InvalidOperation:  # pragma: no cover - a JSON number is a decimal
        return None
    if not isinstance(parts.exponent, int):  # (an infinity or NaN: no JSON number reads as one but a huge ExactNumber)
        return None
    digits = "".join(map(str, parts.digits)).lstrip("0")
    if parts.exponent < 0:
        if digits[parts.exponent:].strip("0"):
            return None  # a fraction
        digits = digits[:parts.exponent]
        count = len(digits)
    else:
        count = len(digits) + parts.exponent if digits else 0
    if not count:
        return 1, "0"
    if count > _LONGEST_WRITTEN:
        return count, text
    return count, ("-" if parts.sign else "") + digits + "0" * max(0, parts.exponent)


def _plausible(kind: str, text: str) -> bool:
    if kind == "card_number":
        digits = re.sub(r"\D", "", text)
        return 13 <= len(digits) <= 19 and luhn_ok(digits)
    if kind == "ip_address" and ":" in text:
        if sum(c.isalnum() for c in text) < 2 or ("::" not in text and text.count(":") != 7):
            return False
        try:
            ipaddress.IPv6Address(text)
        except ValueError:
            return False
        return True
    if kind == "phone_number":
        count = sum(c.isdigit() for c in text)
        return 10 <= count <= 15 or (text.startswith("+") and 8 <= count <= 15)
    if kind == "aws_secret_key":
        return any(c.isupper() for c in text) and any(c.islower() for c in text) and any(c.isdigit() for c in text)
    return True


def scan(text: str) -> list[tuple[str, int, int]]:
    """Every detector hit in ``text``: (kind, start, end), in detector order."""
    hits = []
    for kind, pattern in DETECTORS:
        for match in pattern.finditer(text):
            if _plausible(kind, match.group(0)):
                hits.append((kind, match.start(), match.end()))
    return hits


# field names --------------------------------------------------------------------------------------
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


_UPPER_CODE = re.compile(r"[A-Z]+(?:_[A-Z0-9]+)*")
_LOWER_WORDS = re.compile(r"[a-z]+(?:[_.-][a-z]+)*")
_SMALL_NUMBER = re.compile(r"-?\d{1,8}(?:\.\d{1,4})?")


# The error codes written as one lowercase word (no ``_``, ``.`` or ``-`` to say it is a code, not a word of text, a
# name or a password): ``timeout`` is one, ``boom`` or ``jdoe`` is no code anyone documents
_LOWER_CODE_WORDS = frozenset({
    "timeout", "timedout", "unauthorized", "unauthenticated", "forbidden", "overloaded", "unavailable", "conflict",
    "throttled", "ratelimited", "cancelled", "canceled", "aborted", "denied", "invalid", "expired", "notfound", "internal",
    "unknown", "failed", "failure", "error", "busy", "exhausted", "unreachable", "refused", "reset", "closed", "duplicate",
    "declined", "gone", "locked", "unprocessable", "unimplemented", "unsupported", "disconnected", "interrupted",
})


def is_machine_code(text: str) -> bool:
    """``TIMEOUT``, ``E_RATE_LIMIT``, ``HTTP_504``, ``gateway_timeout``, ``timeout``: codes, not prose. A lowercase
    code is words joined by ``_``, ``.`` or ``-``, or one of the one-word codes services use (``_LOWER_CODE_WORDS``)."""
    if len(text) > 64:
        return False
    if _UPPER_CODE.fullmatch(text):
        return True
    return bool(_LOWER_WORDS.fullmatch(text)) and (not text.isalpha() or text in _LOWER_CODE_WORDS)


def is_plain_token(text: str, limit: int = 40) -> bool:
    """A value that says nothing about anyone: a status, a currency code, a small number written as text."""
    return len(text) <= limit and bool(_UPPER_CODE.fullmatch(text) or _LOWER_WORDS.fullmatch(text) or _SMALL_NUMBER.fullmatch(text))


# What a name the protocol keeps as it is must not hold: a credential, an email, a card number (a phone number's or an
# IP address's pattern matches too many plain names, ``order 1234567890``, ``v1.2.3.4``, to refuse them for it)
_NAMES_REFUSED = frozenset(kind for kind, prefix in ALIAS_PREFIX.items() if prefix in ("secret", "email", "card"))


def _names(work: dict[str, Any]) -> Iterator[tuple[str, int, str, str, Any]]:
    """Each name redaction keeps as it is (protocol structure: the replay matches on them, the rules name them): tools'
    names, effects' types, rules' ids and the effect types they count (call ids are the import's own, c1, c2, ...). As
    (``events`` or ``assertions``, the index there, the name's path in that item, what the name is, the name)."""
    for i, event in enumerate(work["events"]):
        if event["type"] == "tool_call":
            yield "events", i, ".name", f"the tool name of event {i}", event.get("name")
        elif event["type"] == "business_effect" and isinstance(event.get("effect"), dict):
            yield "events", i, ".effect.type", f"the effect type of event {i}", event["effect"].get("type")
    for i, rule in enumerate(work["assertions"]):
        yield "assertions", i, ".id", f"the id of rule {i}", rule.get("id")
        yield "assertions", i, ".effect_type", f"the effect_type of rule {i}", rule.get("effect_type")


def refuse_private_names(work: dict[str, Any], where_of: Callable[[str, int], dict[str, Any]] | None = None) -> None:
    """Refuse an incident (before anything is written) where a name redaction keeps as it is holds what a detector
    finds private: it would be written in every file of the import. The error names where, and what kind, never
    the value. ``where_of(part, index)``: where that event or rule is, as every import refusal names it (``source``,
    ``line``, its ``path``: ``$.events[0]``, a rules file's ``$[0]``); without it, its path in ``work``."""
    for part, index, field, what, name in _names(work):
        kinds = sorted({kind for kind, _, _ in scan(name) if kind in _NAMES_REFUSED}) if isinstance(name, str) else []
        if kinds:
            where = where_of(part, index) if where_of is not None else {"path": f"$.{part}[{index}]"}
            raise ReplayError(
                "E_INCIDENT_NAME_PRIVATE", f"{what} holds what looks like {' and '.join(k.replace('_', ' ') for k in kinds)}: "
                "a name redaction keeps as it is (the replay matches on it, the rules name it), so it would be written "
                "in every file of the import", **{**where, "path": (where.get("path") or "$") + field}, received=kinds,
                howToFix="Rename it in the export (and in the rules that name it) to a name that holds no credential or "
                         "personal data; values inside args, results, effects and output are redacted, names are not.")


RULES_NOT_REDACTED = ("Leave the rules out of --redact: their values are redacted as the output they compare. To judge "
                      "the incident without a rule, take it out of the export's assertions (or the --rules file) and "
                      "import again.")


def _refuse(code: str, message: str, pointer: str, **fields: Any) -> NoReturn:
    raise ReplayError(code, message, **{"path": "--redact", "received": pointer, **fields})


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
                under, around = self._under(k, name, labels if k in _LABELS else others)
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
            for kind in {h[0] for h in hits}:
                self.counts[kind] += 1
            self.counts["object_keys_aliased"] += 1
            return self.alias(hits[0][0], key)
        stripped = key.strip()
        known = self._value_aliases.get(stripped)
        if not data_key(key) and (known is None or field_class(key) is not None or key in self._rule_names):
            return key
        self.counts["object_keys_aliased"] += 1
        if known is not None:
            self._aliases.add(known[1])
            return known[1]
        self.counts["identifier"] += 1
        return self.alias("identifier", stripped)

    def _string(self, text: str, key: str | None, context: str, within: str | None = None) -> str:
        stripped = text.strip()
        if not stripped:
            return text
        hits = self._scan(text)
        if hits:
            for kind in {h[0] for h in hits}:
                self.counts[kind] += 1
            offset = len(text) - len(text.lstrip())
            for kind, start, end in hits:
                if start == offset and end == offset + len(stripped):
                    return self._aliased(kind, stripped)
            if not any(c.isspace() for c in stripped):  # one token with a secret glued in (``key_sk_live_...``)
                return self._aliased(hits[0][0], stripped)
            self.counts["freeform_text"] += 1
            return REMOVED
        cls = field_class(key) or within
        if cls in ("secret", "personal", "identifier"):
            kind = {"secret": "secret_field", "personal": "personal_field", "identifier": "identifier"}[cls]
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
        if cls in ("secret", "personal", "identifier"):
            kind = {"secret": "secret_field", "personal": "personal_field", "identifier": "identifier"}[cls]
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
            # a first pass learns every private value's alias, so that a member name holding one gets it wherever the
            # value comes (the input is redacted last; an effect's name may come before the output's value)
            scout = type(self)(self._secret)
            scout._scans = self._scans = {}  # (both passes scan the same texts: once each is enough)
            try:
                scout._rule_names = self._rule_names = rule_names(incident["assertions"])
                scout._incident(incident, remove)
                self._value_aliases.update(scout._value_aliases)
                return self._incident(incident, remove)
            finally:
                self._scans = None

    def _incident(self, incident: dict[str, Any], remove: list[str] | tuple[str, ...]) -> dict[str, Any]:
        work = copy.deepcopy({k: incident[k] for k in ("input", "events", "assertions")})
        self._remove(work, remove)
        refuse_private_names(work)
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

    def _remove(self, work: dict[str, Any], remove: list[str] | tuple[str, ...]) -> None:
        found: dict[tuple[str, ...], str] = {}
        for text in remove:
            tokens = removal_pointer(text)
            matches = list(pointers.expand(work, tokens))
            if not matches:
                _refuse("E_INCIDENT_REDACT_PATH_MISSING", f"--redact {text!r} names nothing in this incident", text,
                        howToFix="Use only paths present in your export (call ids are c1, c2, ...; `*` matches one level).")
            for match in matches:
                why = protected(work, match)
                if why:
                    _refuse("E_INCIDENT_REDACT_PATH_PROTECTED", f"--redact {text!r} would remove {why}", text,
                            received=_expanded(tokens, match),
                            **({"howToFix": RULES_NOT_REDACTED} if match[0] == "assertions" else {}))
                found.setdefault(match, text)
        for match in sorted(found, key=lambda m: deletion_key(work, m), reverse=True):
            if pointers.resolve(work, match) is pointers.MISSING:
                continue  # inside something already removed
            if match[0] == "events" and len(match) == 3:  # result / error: optional fields become null
                work["events"][int(match[1])][match[2]] = None
            else:
                pointers.remove(work, match)
            self.counts["pointer_removed"] += 1

    # the audit ----------------------------------------------------------------------------------
    def audit(self, incident_id: str | None = None, judged_otherwise: Sequence[tuple[str, str, str]] = ()) -> dict[str, Any]:
        """Counts and warnings only: no value, no field name, no alias mapping. ``judged_otherwise``: the rules that
        judge the redacted incident otherwise than the export (``rules.judged_otherwise``), each warned of by its id."""
        c = self.counts
        warnings = [("Automated redaction is not a guarantee of anonymity: review incident.json, trace.jsonl and "
                     "report.html before sharing them.")]
        if c["numeric_to_string"]:
            warnings.append(f"{c['numeric_to_string']} numeric value(s) became string aliases; behaviour that depends "
                            "on their type may change.")
        if c["freeform_text"]:
            warnings.append(f"{c['freeform_text']} freeform text value(s) were removed; an agent that reads them will "
                            "see \"[redacted]\".")
        if c["rule_values_redacted"]:
            warnings.append(f"{c['rule_values_redacted']} rule value(s) were redacted the same way as the output they "
                            "compare.")
        if judged_otherwise:
            warnings.append(verdicts_changed(judged_otherwise))
        return {
            "schema_version": 1,
            "incident_id": incident_id,
            "secret": "fresh per import, held in memory only, never written",
            "detectors": {kind: c[kind] for kind in DETECTOR_KINDS},
            "fields": {kind: c[kind] for kind in FIELD_KINDS},
            "numeric_to_string": c["numeric_to_string"],
            "object_keys_aliased": c["object_keys_aliased"],
            "pointer_removed": c["pointer_removed"],
            "rule_values_redacted": c["rule_values_redacted"],
            "distinct_aliases": len(self._aliases),
            "warnings": warnings,
        }


_VERDICTS = ("{count} rule(s) judge the redacted incident otherwise than the export: ",
             ". A --redact pointer (or a redacted value) took what the rule reads: check the pointers against the rules' "
             "fields; the evaluation is of the redacted incident.")


def _verdict(rule_id: str, was: str, now: str) -> str:
    return f"{rule_id!r} {was} on the export, {now} redacted"


def verdicts_changed(judged_otherwise: Sequence[tuple[str, str, str]]) -> str:
    """What the audit and the import's warning say of rules that judge the redacted incident otherwise than the
    export (``rules.judged_otherwise``)."""
    changes = "; ".join(_verdict(rule_id, was, now) for rule_id, was, now in judged_otherwise)
    return _VERDICTS[0].format(count=len(judged_otherwise)) + changes + _VERDICTS[1]


_LABELS = ("name", "key", "header", "field", "param", "variable")  # a name-value pair's name: {"name": "PIN", "value": ...}


# re-checking a bundle -------------------------------------------------------------------------------


class _Again(Redactor):
    """Redaction over an incident redacted already: an alias, a removal and an aliased key stand as they are (a
    second pass would alias them again); anything else it changes, the first pass would have changed."""

    def _string(self, text: str, key: str | None, context: str, within: str | None = None) -> str:
        if text == REMOVED or _ALIAS.fullmatch(text):
            return text
        return super()._string(text, key, context, within)

    def _key(self, key: str) -> str:
        return key if _ALIAS.fullmatch(key) else super()._key(key)

    # Under an aliased key the value is judged under no name, as the import judged it (``Redactor._under``): the alias
    # says nothing of the name it stands for (``email_...`` is no email field), nor of what it was inside of.
    def _under(self, key: str, name: str, within: str | None) -> tuple[str | None, str | None]:
        return (None, within) if _ALIAS.fullmatch(key) else super()._under(key, name, within)


NAME = "*"  # in a path ``unredacted`` gives: a member whose name (not its value) redaction would change


def unredacted(incident: dict[str, Any]) -> tuple[list[str | int], list[str]] | None:
    """Where a redacted incident (a bundle read back) holds a value redaction would change, one edited in by hand or
    written by something other than an import: its JSON Pointer and what redaction took it for (value-free); None
    when redaction would leave it all as it is. A tool's name, an effect's type or a rule's id that holds a credential,
    an email or a card number is refused as the import refuses it (E_INCIDENT_NAME_PRIVATE)."""
    again = _Again(secret=bytes(32))
    redone = again.incident(incident)
    for part in ("input", "events", "assertions"):
        where = _first_difference(incident[part], redone[part], [part])
        if where is not None:
            return where, sorted(k for k in again.counts if k in DETECTOR_KINDS or k in FIELD_KINDS)
    return None


def audit_not_ours(audit: Any, incident_id: str | None, rule_ids: list[str]) -> list[str | int] | None:
    """Where a bundle's redaction audit (``redaction``) holds what ``Redactor.audit`` does not write (a value, a name,
    a sentence edited in), as the steps of a path under it (a member's name as written: an error masks it); None when
    it is an audit as an import writes it: counts, the fixed texts, its incident's id, and the warnings its counts give
    (with the rules judged otherwise named by their ids)."""
    if not isinstance(audit, dict):
        return []
    counts: Counter[str] = Counter()
    for group in ("detectors", "fields"):
        if isinstance(audit.get(group), dict):
            counts.update({k: v for k, v in audit[group].items() if type(v) is int and v >= 0})
    counts.update({k: v for k, v in audit.items() if type(v) is int and v >= 0})  # (a count below 0 is none written)
    again = Redactor(bytes(32))
    again.counts = counts
    expected = again.audit(incident_id)
    distinct = audit.get("distinct_aliases")
    expected["distinct_aliases"] = distinct if type(distinct) is int else None
    for key in sorted(set(audit) | set(expected)):
        if (key != "warnings" and exactjson.dumps(audit.get(key)) != exactjson.dumps(expected.get(key))) or key not in audit:
            return [key]  # (as JSON: true is no count 1; an object's members as it has them)
    warnings = audit.get("warnings")
    if not isinstance(warnings, list):
        return ["warnings"]
    known = expected["warnings"]
    for k, warning in enumerate(warnings):
        if warning not in known and not (k == len(warnings) - 1 and _verdicts_line(warning, rule_ids)):
            return ["warnings", k]
    return None


def _verdicts_line(text: Any, rule_ids: list[str]) -> bool:
    """Is ``text`` the audit's warning of rules judged otherwise (``verdicts_changed``), naming rules of ``rule_ids``?"""
    if not isinstance(text, str):
        return False
    count = text.partition(" ")[0]
    if not count.isdigit() or not int(count):
        return False
    head, tail = _VERDICTS[0].format(count=int(count)), _VERDICTS[1]
    if not (text.startswith(head) and text.endswith(tail)) or len(text) <= len(head) + len(tail):
        return False
    middle, at, found = text[len(head):len(text) - len(tail)], 0, 0
    statuses = (PASS, FAIL, INCONCLUSIVE)
    entries = [_verdict(rid, was, now) for rid in rule_ids for was in statuses for now in statuses if was != now]
    while at < len(middle):
        step = next((e for e in entries if middle.startswith(e, at) and (
            at + len(e) == len(middle) or (middle.startswith("; ", at + len(e)) and at + len(e) + 2 < len(middle)))), None)
        if step is None:
            return False
        at, found = at + len(step) + 2, found + 1
    return found == int(count)


def _first_difference(a: Any, b: Any, path: list[str | int]) -> list[str | int] | None:
    """The path to the first place ``a`` and ``b`` (JSON values) differ, in document order; None when they are equal.
    A loop, not recursion: a bundle holds JSON as deep as the import reads (``exactjson.MAX_DEPTH`` levels)."""
    todo: list[tuple[Any, Any, list[str | int]] | list[str | int]] = [(a, b, path)]  # (a bare path: a difference found)
    while todo:
        step = todo.pop()
        if isinstance(step, list):  # (reached once everything before it in document order was equal)
            return step
        a, b, path = step
        if isinstance(a, dict) and isinstance(b, dict):
            pairs: list[tuple[Any, Any, list[str | int]] | list[str | int]] = []
            for (ka, va), (kb, vb) in zip(a.items(), b.items(), strict=False):
                if ka != kb:
                    pairs.append([*path, NAME])  # (a member's name redaction would alias: never the name itself)
                    break
                pairs.append((va, vb, [*path, ka]))
            else:
                if len(a) != len(b):
                    pairs.append(path)
            todo.extend(reversed(pairs))  # (reversed: the first member is taken first)
        elif isinstance(a, list) and isinstance(b, list):
            items: list[tuple[Any, Any, list[str | int]] | list[str | int]] = [
                (va, vb, [*path, i]) for i, (va, vb) in enumerate(zip(a, b, strict=False))]
            if len(a) != len(b):
                items.append(path)
            todo.extend(reversed(items))
        elif not exactjson.typed_equal(a, b):
            return path
    return None


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
    return labels if member in _LABELS else others


def members_within(node: dict[str, Any], key: str | None, within: str | None) -> tuple[str | None, str | None]:
    """What the members of object ``node`` are inside of (``member_within``), for all of them at once: its name labels
    (``name``, ``key``, ...), and its other members."""
    around = inside(key, within)
    pair = pair_names(node)
    return around, (pair if pair is not None else around)


def pair_names(node: dict[str, Any]) -> str | None:
    """The class (secret or personal) of the field a name-value pair ``node`` names (``member_within``), or None."""
    for label in _LABELS:
        named = node.get(label)  # (an alias names nothing: ``pii_...`` in a bundle is no personal field's name)
        if isinstance(named, str) and len(named) <= 64 and not _ALIAS.fullmatch(named):
            cls = field_class(named)
            if cls in ("secret", "personal"):
                return cls
    return None


def removal_pointer(text: str) -> list[str]:
    """The tokens of a ``--redact`` pointer; refused unless it is a JSON Pointer into input, events or assertions
    (what any incident would refuse: checked by the command before any import)."""
    if text == "":
        _refuse("E_INCIDENT_REDACT_POINTER_INVALID", "--redact needs a JSON Pointer; an empty one would name the whole "
                "incident", text, expected="/input/..., /events/<i or *>/...",
                example="--redact /events/*/args/internal_reference")
    try:
        tokens = pointers.parse(text)
    except pointers.PointerSyntaxError as exc:
        _refuse("E_INCIDENT_REDACT_POINTER_INVALID", str(exc), text, example="--redact /events/*/args/internal_reference")
    if not tokens or tokens[0] not in ("input", "events", "assertions"):  # (the seed's three: a rule is refused as
        _refuse("E_INCIDENT_REDACT_POINTER_INVALID",                      # protocol structure, ``protected``)
                f"--redact {text!r} must point into /input, /events or /assertions (where only /input and /events hold "
                "what redaction removes)", text, expected="/input/..., /events/<i or *>/...")
    return tokens


def _expanded(tokens: list[str], match: tuple[str, ...]) -> str:
    """The pointer ``match`` that ``--redact`` pointer ``tokens`` named, as a refusal shows it: what a ``*`` expanded to
    is the incident's (a member name holding an email), ``masked`` where redaction would hide it."""
    from replay.pipeline.model.incident.masking import masked  # (masking reads this module)
    return pointers.format_pointer([str(masked(part)) if token == pointers.WILDCARD else part
                                    for token, part in zip(tokens, match, strict=True)])


def deletion_key(work: dict[str, Any], match: tuple[str, ...]) -> tuple[Any, ...]:
    key: list[Any] = []
    node: Any = work
    for token in match:
        if isinstance(node, list):
            key.append((0, int(token), ""))
            node = node[int(token)] if int(token) < len(node) else None
        else:
            key.append((1, 0, token))
            node = node.get(token) if isinstance(node, dict) else None
    return tuple(key)


def protected(work: dict[str, Any], match: tuple[str, ...]) -> str | None:
    """Why removing ``match`` would break the incident's protocol structure, or None when it is payload."""
    head = match[0]
    if head == "input":
        return "the whole input" if len(match) == 1 else None
    if head == "assertions":
        # A rule holds no private value redaction leaves (an output_equals value is redacted as the output it compares;
        # a private id or effect type is refused, E_INCIDENT_NAME_PRIVATE): taking one out would only change the
        # verdict, a failing incident turned passing with no word.
        return "a rule or a rule's field (rules are what the incident is judged by, not private data)"
    if len(match) <= 2:
        return "an event (the trace must stay whole)"
    field = match[2]
    if field in ("type", "call_id", "name", "ok", "message"):
        return f"the protocol field {field!r} of an event"
    if field in ("args", "effect", "output") and len(match) == 3:
        return f"an event's whole {field!r} (remove fields inside it)"
    if field == "effect" and match[3] == "type" and len(match) == 4:
        return "an effect's type"
    return None
