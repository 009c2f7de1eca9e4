"""The graph specs of the built-in commands, shipped as TOML in the config format users write."""
