"""The `chemprot` evaluate module (see chemprot.py)."""
