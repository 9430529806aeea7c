"""The `roc_auc` evaluate module (see roc_auc.py)."""
