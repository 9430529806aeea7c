"""The errors a retrieval stage reports as one line (exit code 2) instead of a traceback."""

from megazoo.core.checkpoint import CheckpointError

# ValueError covers RetrievalFormatError, EmbedError, IndexFolderError and ConfigError
KNOWN = (ValueError, FileNotFoundError, CheckpointError, OSError)
