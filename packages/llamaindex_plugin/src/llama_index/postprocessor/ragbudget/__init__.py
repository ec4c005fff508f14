"""Placeholder filled by issue 5."""
