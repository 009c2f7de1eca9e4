"""The engine: batches, the stage protocol, graphs, the executor, the registry and config loading; imports nothing above it."""
