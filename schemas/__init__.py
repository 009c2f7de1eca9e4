"""Bundled JSON Schemas (2020-12) for every file format replay reads or writes."""
