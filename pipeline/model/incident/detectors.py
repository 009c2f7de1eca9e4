"""What a value says: what detectors find private in it (credentials, emails, cards, IPs, phones), or that it is a plain token."""

from __future__ import annotations

import ipaddress
import re
from decimal import Decimal, InvalidOperation

from replay.pipeline.engine import exactjson

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
