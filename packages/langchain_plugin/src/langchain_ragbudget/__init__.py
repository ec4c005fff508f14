"""Placeholder filled by issue 4."""
