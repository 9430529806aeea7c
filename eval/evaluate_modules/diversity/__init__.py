"""The `diversity` evaluate module (see diversity.py)."""
