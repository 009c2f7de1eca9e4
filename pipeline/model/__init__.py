"""The event model: events, runs, repairs, validation, artifacts, tool calls, the runner contract, heal rules."""
