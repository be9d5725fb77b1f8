"""Placement: which device runs each node, carved into convex subgraphs, with the cost model that decides."""
