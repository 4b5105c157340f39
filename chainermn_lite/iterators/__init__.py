"""Iterators shared or synchronized across ranks."""
