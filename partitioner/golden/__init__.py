"""Golden cases and their replay on a build's engine: test and `make` tools, not part of `partition`."""
