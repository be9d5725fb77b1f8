"""The FPGA side of a build as files: engine sources (HLS and RTL), the overlay, the Makefile, synthesis."""
