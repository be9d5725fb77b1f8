"""How good a build is: the float partition against the original, int8 against float, per-tensor sensitivity."""
