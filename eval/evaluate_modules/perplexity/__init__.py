"""The `perplexity` evaluate module (see perplexity.py)."""
