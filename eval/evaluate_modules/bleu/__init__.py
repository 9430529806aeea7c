"""The `bleu` evaluate module (see bleu.py)."""
