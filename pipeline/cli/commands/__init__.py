"""One module per `replay` subcommand; each builds a stage graph and runs it."""
