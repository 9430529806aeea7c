"""Parallel transformer building blocks."""
