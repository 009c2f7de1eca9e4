"""Reporting: the report model and its renderers (text, JSON, Markdown, JUnit, HTML)."""
