"""The graph IR every later stage reads: typed nodes over a networkx DAG, names, op facts, and IR -> ONNX."""
