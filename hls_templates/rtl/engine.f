// The engine's SystemVerilog in compile order (package first): the one list Verilator, yosys and the code
// generator read. Include files (*.svh) are found through +incdir / -I on this folder.
engine_pkg.sv
sync_fifo.sv
residual_queue.sv
mac_pair.sv
axi_run_reader.sv
axi_beat_writer.sv
axil_control.sv
layer_descriptor.sv
layer_tables.sv
weight_ram.sv
array_weights.sv
window_ram.sv
mac_array.sv
pixel_address.sv
address_generator.sv
mac_stage.sv
window_conv.sv
lut_ram.sv
epilogue.sv
sliced_epilogue.sv
pool_unit.sv
result_writer.sv
perf_counters.sv
constant_request.sv
engine_core.sv
engine_top.sv
