"""The draft partition the exploration sizes designs on: every supported layer offloaded, branches split as the
final partition splits them."""
from __future__ import annotations

from fpga_runtime.boards import Board
from partitioner.explore.design_space import Stage
from partitioner.ir.graph import Graph
from partitioner.placement.cost import CostModel
from partitioner.placement.partition import Device, partition
from partitioner.targets import fpga as fpga_target


def full_offload_draft(graph: Graph, board: Board, keep: tuple[str, ...] = ()) -> tuple[list[str], int, list[Stage]]:
    """The layers a full offload would put on the FPGA (the cost model needs a design first), in how many
    subgraphs, and that draft's stages for the frame schedule. Parallel branches split off as the final
    partition splits them (worth a program start of their own), not each one: a grouped conv's pieces are
    dozens of branches."""
    draft = partition(graph, fpga_target, CostModel(board), offload_everything=True, keep_on_cpu=keep,
                      split_all_branches=False)
    fpga = [sg for sg in draft.subgraphs if sg.device is Device.FPGA]
    stages = []
    for sg in draft.subgraphs:
        est = sg.estimate
        on_fpga = sg.device is Device.FPGA
        fixed = (est.transfer_s + est.invoke_s if on_fpga else est.cpu_s) if est is not None else 0.0
        stages.append(Stage(sg.name, sg.device.value, tuple(sg.depends_on), tuple(sg.nodes) if on_fpga else (),
                            fixed))
    return [n for sg in fpga for n in sg.nodes], max(1, len(fpga)), stages
