"""The models: one folder per architecture, named model cards, HF import/export."""
