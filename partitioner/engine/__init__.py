"""Compile the FPGA subgraphs of a partition into engine programs and a memory image (kernel ABI v2)."""
