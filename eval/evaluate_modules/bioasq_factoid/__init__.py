"""The `bioasq_factoid` evaluate module (see bioasq_factoid.py)."""
