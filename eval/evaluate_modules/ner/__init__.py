"""The `ner` evaluate module (see ner.py)."""
