"""Stages."""
