"""Design-space exploration: the engine design (shape, units) for a model and board, and its resources."""
