"""What redaction writes in place of a private value: ``[redacted]``, or an alias ``<prefix>_<16 hex digits>`` by kind."""

from __future__ import annotations

import re

REMOVED = "[redacted]"

ALIAS_PREFIX = {
    "private_key": "secret", "jwt": "secret", "aws_access_key": "secret", "aws_secret_key": "secret", "api_key": "secret",
    "bearer_token": "secret", "url_password": "secret", "email": "email", "card_number": "card", "ip_address": "ip",
    "phone_number": "phone", "secret_field": "secret", "personal_field": "pii", "identifier": "id",
}
FIELD_KINDS = ("secret_field", "personal_field", "identifier", "freeform_text")
ALIAS = re.compile(rf"(?:{'|'.join(sorted(set(ALIAS_PREFIX.values())))})_[0-9a-f]{{16}}")  # what ``Redactor.alias`` writes
