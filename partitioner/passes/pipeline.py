"""The visible pipelines: the fusion passes in order, and the named steps of `partition`."""
from __future__ import annotations

from typing import Callable

from partitioner.ir.graph import Graph
from partitioner.passes.batchnorm import batchnorm_as_depthwise, fold_batchnorm, lone_activations_as_depthwise
from partitioner.passes.channel_shuffle import fold_channel_permutations
from partitioner.passes.cleanup import drop_unread_nodes, remove_exporter_noops
from partitioner.passes.conv_form import form_convolutions
from partitioner.passes.data_movement import recognise_data_movement
from partitioner.passes.decompose import (
    average_pools_as_depthwise,
    decompose_max_pools,
    decompose_upsample,
    slices_of_concats,
    spatial_means_as_global_pool,
    split_conv_outputs,
    split_grouped_convs,
)
from partitioner.passes.epilogue import (
    fuse_activation,
    fuse_maxpool,
    fuse_residual_add,
    fuse_upsample_input,
    mark_concat_writes,
)
from partitioner.passes.explicit_pads import explicit_pads
from partitioner.passes.flattened_dense import flattened_dense_as_conv
from partitioner.passes.folding import channel_affines_as_depthwise, fold_channel_affine, fold_pad
from partitioner.passes.hard_activations import canonical_hard_activations
from partitioner.passes.l2norm import fold_scale_into_readers, fuse_l2_normalization
from partitioner.passes.prelu import fuse_prelu, prelu_as_engine_layers, shared_prelu_as_leaky_relu
from partitioner.passes.qdq import absorb_qdq
from partitioner.passes.smooth_activations import canonical_gelu

Pass = Callable[[Graph], Graph]

FUSION: list[Pass] = [
    remove_exporter_noops,  # Identity, Dropout, full-range Slice, single-input Concat
    explicit_pads,          # auto_pad SAME_UPPER / SAME_LOWER / VALID -> explicit pads (static shapes)
    absorb_qdq,             # QuantizeLinear/DequantizeLinear pairs -> fixed int8 scales
    canonical_hard_activations,  # Clip(x + 3, 0, 6) / 6 forms -> HardSigmoid / HardSwish
    canonical_gelu,         # x * 0.5 * (1 + Erf(x / sqrt 2)) and the tanh form -> Gelu (before the affine passes)
    fuse_l2_normalization,  # ReduceL2 / eps / Expand / Div (SSD's L2Norm) -> LpNormalization
    form_convolutions,      # Conv / Gemm / MatMul with constant weights -> FusedConv
    fold_batchnorm,         # conv + BatchNormalization -> conv with scaled weights and bias
    shared_prelu_as_leaky_relu,  # PRelu with one slope for every channel -> LeakyRelu (a table activation)
    batchnorm_as_depthwise,  # a BatchNormalization no conv takes (after a concat, BN -> ReLU -> conv) -> 1x1 depthwise
    average_pools_as_depthwise,  # AveragePool dividing by the full window -> depthwise conv of 1 / (kh kw)
    spatial_means_as_global_pool,  # ReduceMean over H and W, dimensions kept -> GlobalAveragePool
    fold_channel_affine,    # conv + per-channel Mul/Div/Add/Sub by constants -> weights and bias
    channel_affines_as_depthwise,  # such an affine no conv takes, after a layer -> 1x1 depthwise conv
    fold_channel_affine,    # ... and the next affine into that one
    fold_scale_into_readers,  # per-channel Mul by constants read only by convs (L2Norm's gamma) -> their weights
    recognise_data_movement,  # Reshape/Transpose/Expand chains that only permute channels or upsample -> 1x1
                              # permutation convs, nearest Resizes
    flattened_dense_as_conv,  # Transpose/Flatten of a map -> dense: one conv whose kernel is the whole map
    fold_pad,               # Pad -> the padding of the conv or max pool behind it
    decompose_max_pools,    # SPP/SPPF pools 5x5..15x15 stride 1 -> chained 3x3 pools
    decompose_upsample,     # nearest x4 / x8 -> chained x2
    fuse_activation,        # + Relu / LeakyRelu / Clip / Sigmoid / SiLU / HardSwish / HardSigmoid
    fold_channel_permutations,  # a channel permutation moved through channel-wise layers into the convs reading it
    slices_of_concats,      # channel slices of a concat on its input boundaries -> those inputs
    split_grouped_convs,    # grouped (not depthwise) conv -> block-diagonal pieces on channel slices, concatenated
    split_conv_outputs,     # conv read only through channel slices -> one conv per slice
    fuse_prelu,             # + PRelu per channel, first step: the requantiser's negative-side multipliers
    prelu_as_engine_layers,  # any other PRelu per channel -> two channelwise layers and an add
    fuse_residual_add,      # + residual Add
    lone_activations_as_depthwise,  # an activation no conv can take -> behind a 1x1 identity depthwise conv
    fuse_activation,        # + activation after the add (ResNet style), and those
    fuse_maxpool,           # + MaxPool
    fuse_upsample_input,    # nearest x2 Resize -> conv input read mode
    mark_concat_writes,     # channel Concat -> writes at channel offsets
    drop_unread_nodes,      # what the rewrites left that nothing reads
]


def run_fusion(graph: Graph, on_step: Callable[[int, str, Graph], None] | None = None) -> Graph:
    for i, p in enumerate(FUSION, 1):
        graph = p(graph)
        if on_step:
            on_step(i, p.__name__, graph)
    return graph
