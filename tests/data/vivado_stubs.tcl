# Stubs of the Vivado, Vitis HLS and Vitis commands the generated scripts call, for running those scripts
# under plain tclsh (tests/test_engine_ip.py). Each stub records its call; `ipx::add_*` and `create_*` return
# a handle naming what they made, and `set_property` records each property set on a handle. A command with
# no stub stops the script, so a misspelt or new Vivado command fails the test until it is listed here.
# `get_bd_cells` finds nothing: the cells bd automation would add (the reset blocks) are not modelled.
# Usage: tclsh vivado_stubs.tcl <script.tcl> <record.txt> <scratch dir>
set script [lindex $argv 0]
set record [open [lindex $argv 1] w]
set scratch [lindex $argv 2]

array set ::props {}
proc note {args} {
    if {[lindex $args 0] eq "prop"} { set ::props([lindex $args 1],[lindex $args 2]) [lindex $args 3] }
    puts $::record [join [lmap a $args {string map {"\n" " " "\t" " "} $a}] "\t"]
}

set vivado_commands {
    create_project set_property get_property current_project current_fileset add_files get_files
    update_compile_order update_ip_catalog close_project create_bd_design create_bd_cell apply_bd_automation
    get_bd_pins get_bd_intf_pins get_bd_cells get_bd_nets connect_bd_net connect_bd_intf_net assign_bd_address get_bd_addr_spaces
    get_bd_addr_segs validate_bd_design save_bd_design make_wrapper generate_target launch_runs wait_on_run
    open_run report_timing_summary report_utilization get_timing_paths write_bitstream get_runs
    ipx::package_project ipx::current_core ipx::get_bus_interfaces ipx::remove_bus_interface
    ipx::add_bus_interface ipx::add_port_map ipx::add_bus_parameter ipx::add_address_space
    ipx::get_memory_maps ipx::remove_memory_map ipx::add_memory_map ipx::add_address_block ipx::add_register
    ipx::add_field ipx::get_registers ipx::get_user_parameters ipx::add_register_parameter ipx::add_user_parameter
    ipx::create_xgui_files ipx::update_checksums ipx::check_integrity ipx::save_core package_xo
    open_project set_top open_solution set_part create_clock config_interface csim_design csynth_design
    cosim_design export_design exit
}
rename exit tcl_exit
namespace eval ipx {}
foreach cmd $vivado_commands {
    proc ::$cmd {args} [list stub $cmd]
}
proc stub {cmd} {
    upvar args args
    note call $cmd {*}$args
    set last [lindex $args end]
    switch -glob -- $cmd {
        ipx::add_* {
            # ipx::add_<kind> <name> <parent>
            return "[string range $cmd 9 end]:[lindex $args 0]@$last"
        }
        ipx::current_core { return core }
        ipx::get_bus_interfaces - ipx::get_memory_maps {
            if {[lsearch $args -of_objects] >= 0} { return {} }
            return "[string range $cmd 9 end]:[lindex $args 0]"
        }
        ipx::get_registers { return "register:[lindex $args 0]@[lindex $args end]" }
        ipx::get_user_parameters { return "user_parameter:[lindex $args 0]" }
        set_property {
            if {[lindex $args 0] eq "-dict"} {
                foreach {k v} [lindex $args 1] { note prop [lindex $args 2] $k $v }
            } else {
                note prop [lindex $args 2] [lindex $args 0] [lindex $args 1]
            }
            return ""
        }
        get_property {
            switch -- [lindex $args 0] {
                SLACK { return 0.125 }
                NAME { return [lindex $args 1] }
                CONFIG.FREQ_HZ { return [wizard_output_hz [lindex $args 1]] }
            }
            return ""
        }
        get_files {
            set hwh [lsearch -inline -glob $args *.hwh]
            if {$hwh ne ""} {
                set path [file join $::scratch $hwh]
                close [open $path w]
                return [list $path]
            }
            return [list "file:[lindex $args end]"]
        }
        write_bitstream { close [open $last w]; return "" }
        make_wrapper { return [file join $::scratch wrapper.v] }
        create_bd_cell { return "cell:$last" }
        get_bd_cells { return {} }
    }
    return "$cmd:$last"
}
# A clocking wizard's output clock as an MMCM makes it: input x CLKFBOUT_MULT_F / (DIVCLK_DIVIDE x CLKOUTn divide)
# where the script set them, else the frequency it asked for (Vivado's wizard picks its own setting then).
proc wizard_output_hz {pin} {
    regexp {:([^/]+)/clk_out(\d)$} $pin -> cell n
    set c "cell:$cell"
    set divide CONFIG.MMCM_CLKOUT[expr {$n - 1}]_DIVIDE
    if {$n == 1} { set divide CONFIG.MMCM_CLKOUT0_DIVIDE_F }
    if {[info exists ::props($c,CONFIG.MMCM_CLKFBOUT_MULT_F)]} {
        return [expr {round($::props($c,CONFIG.PRIM_IN_FREQ) * 1e6 * $::props($c,CONFIG.MMCM_CLKFBOUT_MULT_F) /
                      ($::props($c,CONFIG.MMCM_DIVCLK_DIVIDE) * $::props($c,$divide)))}]
    }
    return [expr {round($::props($c,CONFIG.CLKOUT${n}_REQUESTED_OUT_FREQ) * 1e6)}]
}
proc unknown {args} {
    note unknown {*}$args
    error "no Vivado stub for command: [lindex $args 0]"
}
if {[catch {source $script} message]} {
    note error $message
    close $record
    puts stderr "$script: $message"
    tcl_exit 1
}
note done
close $record
