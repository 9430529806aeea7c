"""The `dpr_top_k` evaluate module (see dpr_top_k.py)."""
