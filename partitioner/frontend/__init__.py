"""Frontend: load an ONNX file, check it, normalise its opset, fold constants, and build the IR."""
