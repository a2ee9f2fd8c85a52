"""What grappler's remapper fuses: its fused kernels' names and the ops its patterns take.

In: kernel names and op types. Out: whether a kernel is a fused one, and the op types,
dtypes and sibling pairs the remapper's patterns (grappler's remapper.cc) can absorb.
"""
from __future__ import annotations

from ...read.tfdbg import DTYPE_SOME_FLOAT, DTYPE_UNKNOWN
from ..nodes import canonical_op

__all__ = ["is_fused", "FUSABLE", "SIBLING_FUSIONS", "FUSION_DTYPES", "FILTER_WITH_BIAS",
           "CONTRACTION_FUSIONS", "FUSED_ACTIVATIONS"]


def is_fused(kernel: str) -> bool:
    """A kernel that grappler's remapper made out of several ops."""
    base = canonical_op(kernel)
    if base.startswith("FusedBatchNorm"):
        return base.startswith("FusedBatchNormEx")  # the plain one is a single op
    return (base.startswith(("Fused", "_Fused", "PadWith")) or "WithBias" in base
            or base in ("Swish", "FusedMish"))


# Op types that appear in remapper fusion patterns; an op of another type is never
# absorbed into a fused node.
FUSABLE = frozenset((
    "MatMul", "BatchMatMul", "BatchMatMulV2", "BiasAdd", "BiasAddGrad", "Conv2D", "Conv3D",
    "DepthwiseConv2dNative", "Conv2DBackpropFilter", "FusedBatchNorm", "FusedBatchNormV2",
    "FusedBatchNormV3", "Relu", "Relu6", "Elu", "LeakyRelu", "Tanh", "Sigmoid", "Softplus",
    "Add", "AddV2", "AddN", "Mul", "Erf", "Pad", "Mish", "Gelu", "Pow", "Sub", "Rsqrt",
    "Square", "SquaredDifference", "Mean", "Cast"))

# Remapper patterns that fuse an op with a sibling reading the same input:
# Conv2DBackpropFilter + BiasAddGrad -> _MklNativeConv2DBackpropFilterWithBias.
SIBLING_FUSIONS = {"BiasAddGrad": ("Conv2DBackpropFilter", "MatMul")}

# Dtypes the oneDNN fusions take ("" / unknown markers: not recorded, float assumed).
FUSION_DTYPES = frozenset(("DT_FLOAT", "DT_BFLOAT16", DTYPE_SOME_FLOAT, DTYPE_UNKNOWN))

FILTER_WITH_BIAS = "_MklNativeConv2DBackpropFilterWithBias"

# Contraction + BiasAdd [+ activation]: the patterns grappler's remapper fuses on CPU with
# oneDNN off and on alike (remapper.cc: FindContractionWithBias(AndActivation)), and the
# fused kernel each state runs: (oneDNN off, oneDNN on). The fused node keeps the name
# of the pattern's last op.
CONTRACTION_FUSIONS = {
    "Conv2D": ("_FusedConv2D", "_MklNativeFusedConv2D"),
    "MatMul": ("_FusedMatMul", "_MklNativeFusedMatMul"),
}
# The activations both states fuse after a contraction's BiasAdd.
FUSED_ACTIVATIONS = frozenset(("Relu", "Relu6", "Elu", "LeakyRelu"))
