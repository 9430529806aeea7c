"""The `accuracy` evaluate module (see accuracy.py)."""
