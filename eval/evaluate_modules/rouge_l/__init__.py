"""The `rouge_l` evaluate module (see rouge_l.py)."""
