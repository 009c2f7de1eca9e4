"""Production incidents: import an export into a redacted, normalised incident, judge it by explicit rules, replay an agent against it."""
