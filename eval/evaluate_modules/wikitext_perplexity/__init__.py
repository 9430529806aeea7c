"""The `wikitext_perplexity` evaluate module (see wikitext_perplexity.py)."""
