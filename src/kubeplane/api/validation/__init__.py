"""Validation helpers with upstream's messages and field paths."""
