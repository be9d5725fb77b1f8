"""Fusion passes. Each is a plain function `Graph -> Graph`; `pipeline.FUSION` lists them in order."""
