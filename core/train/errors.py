"""The error a configuration mistake raises: its own module, so every config piece can import it."""


class ConfigError(ValueError):
    """A configuration mistake, with what was wrong and what to do."""
