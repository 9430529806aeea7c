"""Recipe files (YAML) shipped with the package; names resolve from any directory."""
