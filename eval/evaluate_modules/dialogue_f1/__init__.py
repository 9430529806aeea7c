"""The `dialogue_f1` evaluate module (see dialogue_f1.py)."""
