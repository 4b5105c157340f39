"""Imported by fails_importing.py: its import raises."""
ANSWER = 1 // 0
