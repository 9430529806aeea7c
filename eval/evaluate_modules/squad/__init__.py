"""The `squad` evaluate module (see squad.py)."""
