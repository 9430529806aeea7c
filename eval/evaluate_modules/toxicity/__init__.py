"""The `toxicity` evaluate module (see toxicity.py)."""
