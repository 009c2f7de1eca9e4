"""The replay engine."""
