"""Configuration: the settings the engine and faces read (settings) and .dpmlens.toml (file)."""
