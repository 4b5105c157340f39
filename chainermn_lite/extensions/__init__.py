"""Trainer extensions that work across ranks."""
