"""The RTL engine under Verilator: building the simulator library and driving it."""
