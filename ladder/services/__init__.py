"""Writes: one module per concern, each imported from where it lives."""
