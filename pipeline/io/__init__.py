"""I/O: file descriptors, journal files, atomic outputs, process groups, per-run files."""
