"""The parallel runtime: model-agnostic, knows no model."""
