"""One package per research project."""
