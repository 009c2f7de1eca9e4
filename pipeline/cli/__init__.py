"""The command line: the `replay` group and one module per command."""
