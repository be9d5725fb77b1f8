from fpga_runtime.cli import main

main()
