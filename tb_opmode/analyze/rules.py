"""Which kernel TensorFlow runs for an op: a oneDNN one (``_Mkl*``) or the stock one.

In: an op type, a mode (``"eager"`` or ``"graph"``), a TF version, the op's
``T`` dtype and whether oneDNN is on. Out: the kernel TF instantiates, the
:class:`Rule` that says so, and for stock kernels a sentence saying why.

How TF picks the kernel (x86 Linux builds, TF 2.12-2.22):

* ``eager-rename``: ``MklEagerOpRewrite`` renames a fixed list of eager ops
  before dispatch (``MatMul`` -> ``_MklMatMul``, ``Conv2D`` ->
  ``_MklNativeConv2D``, ...). The renamed op is what ``Executing op`` and the
  profiler show.
* ``eager-wrapper-graph-pass``: every eager op also runs as a one-node
  function ``__wrapped__<Op>_device_...`` and the graph pass
  ``MklLayoutRewritePass`` runs on it. So eager ``Transpose``, ``Softmax`` and
  ``MaxPool`` run ``_MklTranspose``/``_MklSoftmax``/``_MklNativeMaxPool``
  while ``Executing op`` still says ``Transpose``: only the ``Instantiating
  kernel`` line shows the real kernel.
* ``graph-pass``: inside a ``tf.function`` the same pass renames nodes whose
  dtype is supported.
* ``remapper-fusion``: before that, grappler's remapper fuses patterns such
  as ``MatMul+BiasAdd(+activation)``. The fused node keeps the name of the
  last op of the pattern, so the other ops of the pattern run no kernel under
  their own name. Fusion rules depend on the op's neighbours, so they carry a
  ``condition`` and :func:`expected_kernel` never applies them on its own;
  :func:`matching_rules` lists them.

Element-wise and data-movement ops (Relu, AddV2, Mul, Tanh, Sigmoid, BiasAdd,
Cast, Reshape, ConcatV2, Sum, Mean, ...) have no oneDNN kernel in these
versions: they run stock in both modes unless a fusion swallows them.

Where the facts come from: every rule whose ``source`` starts with
"measured" was observed on tensorflow-cpu 2.12.1, 2.13.1, 2.14.1, 2.15.1,
2.16.2, 2.17.1, 2.18.1, 2.19.1, 2.20.0 and 2.21.0 (one run per version with
oneDNN on and one with ``TF_ENABLE_ONEDNN_OPTS=0``, kernels read from
``TF_CPP_MAX_VLOG_LEVEL=2`` ``Instantiating kernel`` lines) on a CPU with
AVX-512 BF16/VNNI and no AVX512_FP16; the fp16 rules on TF 2.21.0 on a CPU with
AVX512_FP16 and AMX. ``file.cc@2.21.0:LINE`` citations are
the source lines that TF's own VLOG messages name in that build. Rules that
were not measured say so in their ``source``. TF 2.22 (2.22.0rc0) takes the
2.21 rules: checked on the truth matrix's cells (``tests/matrix``, kernels from
TF's log) on a CPU with AVX2 and no AVX-512, oneDNN on and off.

Limits of the table: dtype support is CPU dependent from TF 2.16 on. bf16
rewrites need AVX-512 (TF PR #62011) and fp16 rewrites need AVX512_FP16
(TF PR #62648); on a CPU without AVX512_FP16 TF logs "Intel oneDNN with
DT_HALF is not supported" and the fp16 rules, which are conditional here,
do not apply. Versions outside 2.12-2.22 have no rules: :func:`covers` says
whether a version is in range.
"""
from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass

from ..vocab import MODES

__all__ = ["NON_FLOAT",
    "Rule",
    "cpu_dependence",
    "RULES",
    "MECHANISMS",
    "FIRST_VERSION",
    "LAST_VERSION",
    "MEASURED_STOCK_OPS",
    "parse_version",
    "normalize_dtype",
    "covers",
    "matching_rules",
    "expected_kernel",
    "eager_dispatch_name",
    "stock_reason",
]

MECHANISMS = ("eager-rename", "eager-wrapper-graph-pass", "graph-pass", "remapper-fusion")
FIRST_VERSION = "2.12"
LAST_VERSION = "2.22"


@dataclass(frozen=True)
class Rule:
    """One fact: in ``mode``, for ``dtypes`` and ``versions``, ``op_type`` runs ``kernel``.

    ``condition`` is "" when the rule holds for every such op; otherwise it
    says in words what context the op needs (a neighbour, an attr value, an
    environment variable, a CPU feature). ``onednn`` is True for rules that
    hold with oneDNN on and False for the few that hold with
    ``TF_ENABLE_ONEDNN_OPTS=0`` (stock remapper fusions). ``note`` lists
    exceptions that keep the stock kernel although the rule matches (5-D
    inputs, attrs).
    """

    op_type: str
    mode: str
    kernel: str
    dtypes: frozenset[str]
    versions: tuple[str, str]
    mechanism: str
    condition: str
    source: str
    onednn: bool = True
    note: str = ""
    # The CPU feature the rule needs (its ``condition`` says so in words): it
    # holds where the run's CPU is known to have it and not where known to lack it.
    cpu: str = ""


# --------------------------------------------------------------------------
# helpers


_VERSION_RE = re.compile(r"^\s*v?(\d+)\.(\d+)")

_DTYPE_ALIASES = {
    "float": "DT_FLOAT", "float32": "DT_FLOAT", "f32": "DT_FLOAT",
    "bfloat16": "DT_BFLOAT16", "bf16": "DT_BFLOAT16",
    "half": "DT_HALF", "float16": "DT_HALF", "f16": "DT_HALF",
    "double": "DT_DOUBLE", "float64": "DT_DOUBLE", "f64": "DT_DOUBLE",
}


def parse_version(version: str) -> tuple[int, int]:
    """``"2.21.0"``, ``"2.16.0rc1"``, ``"2.13"`` -> ``(major, minor)``.

    Raises ValueError for a string that does not start with ``X.Y``.
    """
    m = _VERSION_RE.match(version)
    if not m:
        raise ValueError(f"not a TensorFlow version: {version!r}")
    return int(m.group(1)), int(m.group(2))


# What the dump says of an output that got no summary in a mode that summarises float
# tensors only (FULL_HEALTH, CURT/CONCISE_HEALTH): not a float type, which one unknown.
NON_FLOAT = "DT_NON_FLOAT"


def _dtype_words(dt: str) -> str:
    return "a non-float dtype (the dump summarises float tensors only)" if dt == NON_FLOAT else dt


def normalize_dtype(dtype: str) -> str:
    """``"float32"`` or ``"DT_FLOAT"`` -> ``"DT_FLOAT"``; other names -> ``"DT_" + NAME``."""
    d = dtype.strip()
    if d.upper().startswith("DT_"):
        return d.upper()
    return _DTYPE_ALIASES.get(d.lower(), "DT_" + d.upper())


def _version_or_latest(tf_version: str) -> tuple[int, int]:
    # A run without dump metadata (log or profile only) has no TF version; its
    # rules are taken as the newest measured, and explanations say the version
    # is unknown.
    return parse_version(tf_version if _VERSION_RE.match(tf_version) else LAST_VERSION)


def covers(tf_version: str) -> bool:
    """Whether the table has rules for this TF version (2.12 through 2.22)."""
    if not _VERSION_RE.match(tf_version):
        return False
    v = parse_version(tf_version)
    return parse_version(FIRST_VERSION) <= v <= parse_version(LAST_VERSION)


def _in_versions(rule: Rule, tf_version: str) -> bool:
    v = _version_or_latest(tf_version)
    return parse_version(rule.versions[0]) <= v <= parse_version(rule.versions[1])


# --------------------------------------------------------------------------
# the table

_ALL = (FIRST_VERSION, LAST_VERSION)
_F = frozenset({"DT_FLOAT", "DT_BFLOAT16"})
_F32 = frozenset({"DT_FLOAT"})
_F16 = frozenset({"DT_HALF"})
_Q = frozenset({"DT_QUINT8", "DT_QINT8"})
_TRANSPOSE = frozenset({"DT_FLOAT", "DT_BFLOAT16", "DT_DOUBLE", "DT_COMPLEX64", "DT_COMPLEX128"})

_MEASURED = "measured TF 2.12.1-2.21.0 (every minor)"
_EAGER_LIST = ("MklEagerOpRewrite list: tensorflow/core/common_runtime/eager/"
               "mkl_eager_op_rewrite.cc@16aa9a40 (constructor)")
_FBN_5D = ("not for 5-D (NDHWC/NCDHW) inputs: mkl_eager_op_rewrite.cc@2.21.0:280 and "
           "mkl_layout_pass.cc@2.21.0:1729 keep it stock (measured)")
_FP16 = "the CPU has AVX512_FP16 (Sapphire Rapids or newer)"
_FP16_NOTE = ("without AVX512_FP16 TF logs 'Intel oneDNN with DT_HALF is not supported' "
              "(mkl_layout_pass.cc@2.21.0:1032) and keeps the stock kernel (measured)")
_FP16_SRC = ("TF PR #62648 (fp16 for oneDNN conv, matmul, batch-matmul, fused-matmul, maxpool, "
             "batchnorm, softmax; merged 2023-12); measured on TF 2.21.0 on a CPU with "
             "AVX512_FP16 and AMX (2026-12-06: MatMul, Conv2D and its gradients, MaxPool, "
             "Softmax, Transpose; the DT_HALF skip message first appears in the 2.16.2 build)")


def _rename_pair(op: str, kernel: str, dtypes: frozenset[str], source: str = "",
                 note: str = "", versions: tuple[str, str] = _ALL) -> tuple[Rule, Rule]:
    """An op on the eager rename list: renamed eagerly and by the graph pass."""
    src = source or f"{_MEASURED}; {_EAGER_LIST}"
    return (Rule(op, "eager", kernel, dtypes, versions, "eager-rename", "", src, note=note),
            Rule(op, "graph", kernel, dtypes, versions, "graph-pass", "", src, note=note))


def _wrapper_pair(op: str, kernel: str, dtypes: frozenset[str], source: str = "",
                  note: str = "") -> tuple[Rule, Rule]:
    """An op only the graph pass renames: eagerly via its ``__wrapped__`` function."""
    src = source or (f"{_MEASURED}; eager: 'Executing op {op}' then 'Instantiating kernel "
                     f"... = {kernel}' inside __wrapped__{op}")
    return (Rule(op, "eager", kernel, dtypes, _ALL, "eager-wrapper-graph-pass", "", src, note=note),
            Rule(op, "graph", kernel, dtypes, _ALL, "graph-pass", "", src, note=note))


def _fusion(op: str, kernel: str, condition: str, dtypes: frozenset[str] = _F,
            source: str = _MEASURED, onednn: bool = True) -> Rule:
    return Rule(op, "graph", kernel, dtypes, _ALL, "remapper-fusion", condition, source, onednn=onednn)


_FMM = "_MklNativeFusedMatMul"
_FCONV = "_MklNativeFusedConv2D"
_MM_NAME = ("; the fused node keeps the name of the last op of the pattern")
_REMAP_BIAS = "remapper.cc@2.21.0:3377 'Fuse MatMul/Conv2D/Conv3D with BiasAdd'"
_REMAP_ACT = "remapper.cc@2.21.0:3479 'Fuse <contraction> with BiasAdd and <activation>'"

RULES: tuple[Rule, ...] = (
    # ---- eager rename list (MklEagerOpRewrite) + the same ops in graphs
    *_rename_pair("MatMul", "_MklMatMul", _F,
                  note="DT_HALF/DT_INT32/DT_DOUBLE stay stock (measured)"),
    *_rename_pair("BatchMatMul", "_MklBatchMatMul", _F),
    *_rename_pair("BatchMatMulV2", "_MklBatchMatMulV2", _F),
    *_rename_pair("Einsum", "_MklEinsum", _F),
    *_rename_pair("Conv2D", "_MklNativeConv2D", _F,
                  note="padding='EXPLICIT' is rewritten too (measured)"),
    *_rename_pair("Conv2DBackpropInput", "_MklNativeConv2DBackpropInput", _F,
                  note="eager: not with padding='EXPLICIT' (RewriteConv2D in mkl_eager_op_rewrite.cc; "
                       "not measured)"),
    *_rename_pair("Conv2DBackpropFilter", "_MklNativeConv2DBackpropFilter", _F,
                  note="eager: not with padding='EXPLICIT' (RewriteConv2D in mkl_eager_op_rewrite.cc; "
                       "not measured)"),
    *_rename_pair("DepthwiseConv2dNative", "_MklNativeDepthwiseConv2dNative", _F),
    *_rename_pair("DepthwiseConv2dNativeBackpropInput", "_MklNativeDepthwiseConv2dNativeBackpropInput", _F),
    *_rename_pair("DepthwiseConv2dNativeBackpropFilter", "_MklNativeDepthwiseConv2dNativeBackpropFilter", _F),
    *_rename_pair("Conv3D", "_MklNativeConv3D", _F),
    *_rename_pair("Conv3DBackpropInputV2", "_MklNativeConv3DBackpropInputV2", _F),
    *_rename_pair("Conv3DBackpropFilterV2", "_MklNativeConv3DBackpropFilterV2", _F),
    *_rename_pair("AvgPool", "_MklNativeAvgPool", _F),
    *_rename_pair("AvgPoolGrad", "_MklNativeAvgPoolGrad", _F),
    *_rename_pair("AvgPool3D", "_MklNativeAvgPool3D", _F),
    *_rename_pair("AvgPool3DGrad", "_MklNativeAvgPool3DGrad", _F),
    *_rename_pair("FusedBatchNorm", "_MklNativeFusedBatchNorm", _F32),
    *_rename_pair("FusedBatchNormGrad", "_MklNativeFusedBatchNormGrad", _F32),
    *_rename_pair("FusedBatchNormV2", "_MklNativeFusedBatchNormV2", _F32,
                  note="only DT_FLOAT measured"),
    *_rename_pair("FusedBatchNormGradV2", "_MklNativeFusedBatchNormGradV2", _F32,
                  note="only DT_FLOAT measured"),
    *_rename_pair("FusedBatchNormV3", "_MklNativeFusedBatchNormV3", _F, note=_FBN_5D),
    *_rename_pair("FusedBatchNormGradV3", "_MklNativeFusedBatchNormGradV3", _F, note=_FBN_5D),
    # SparseMatrixMatMul: eager rename from 2.17 (TF PR #63030, merged 2024-02, after
    # the r2.16 cut); the graph rule is behind TF_ENABLE_ONEDNN_SPMM=1.
    Rule("SparseMatrixMatMul", "eager", "_MklNativeSparseMatrixMatMul", _F32, ("2.17", LAST_VERSION),
         "eager-rename", "",
         "measured: renamed in 2.17.1-2.21.0, stock in 2.12.1-2.16.2; TF PR #63030 "
         "(merged 2024-02); mkl_eager_op_rewrite.cc@16aa9a40 (under ENABLE_ONEDNN_V3)",
         note="not with adjoint_a/adjoint_b/transpose_a/transpose_b/transpose_output: "
              "mkl_eager_op_rewrite.cc@2.21.0:269 keeps it stock (measured)"),
    Rule("SparseMatrixMatMul", "graph", "_MklNativeSparseMatrixMatMul", _F32, ("2.17", LAST_VERSION),
         "graph-pass", "the environment variable TF_ENABLE_ONEDNN_SPMM=1 is set (default off)",
         "measured 2.17.1 and 2.21.0 with and without TF_ENABLE_ONEDNN_SPMM=1; 2.16.2 stays stock "
         "even with it; mkl_layout_pass.cc@2.21.0:1497 'TF_ENABLE_ONEDNN_SPMM is disabled'",
         note="not with adjoint/transpose attrs (mkl_layout_pass.cc@2.21.0:1524)"),

    # ---- only the graph pass renames these; eagerly through __wrapped__<Op>
    *_wrapper_pair("Transpose", "_MklTranspose", _TRANSPOSE,
                   note="integer/bool dtypes stay stock, DT_HALF without AVX512_FP16 (measured); a _MklTranspose "
                        "kernel does not guarantee a oneDNN primitive ran"),
    *_wrapper_pair("ConjugateTranspose", "_MklConjugateTranspose",
                   frozenset({"DT_FLOAT", "DT_BFLOAT16", "DT_COMPLEX64"}),
                   note="only DT_FLOAT, DT_BFLOAT16 and DT_COMPLEX64 measured"),
    *_wrapper_pair("Softmax", "_MklSoftmax", _F),
    *_wrapper_pair("MaxPool", "_MklNativeMaxPool", _F),
    *_wrapper_pair("MaxPool3D", "_MklNativeMaxPool3D", _F),
    Rule("QuantizeV2", "eager", "_MklQuantizeV2", _Q, _ALL, "eager-wrapper-graph-pass",
         "mode='SCALED' with round_mode='HALF_TO_EVEN', or mode='MIN_FIRST' with T=quint8; "
         "not narrow_range, no axis",
         f"{_MEASURED}; QuantizeOpRewrite, mkl_layout_pass.cc@2.21.0:1667 and :1683"),
    Rule("QuantizeV2", "graph", "_MklQuantizeV2", _Q, _ALL, "graph-pass",
         "mode='SCALED' with round_mode='HALF_TO_EVEN', or mode='MIN_FIRST' with T=quint8; "
         "not narrow_range, no axis, and its input is not a Const",
         f"{_MEASURED}; QuantizeOpRewrite, mkl_layout_pass.cc@2.21.0:1667 and :1683"),
    Rule("Dequantize", "eager", "_MklDequantize", _Q, _ALL, "eager-wrapper-graph-pass",
         "mode='SCALED'",
         f"{_MEASURED}; DequantizeRewrite, mkl_layout_pass.cc@2.21.0:1548"),
    Rule("Dequantize", "graph", "_MklDequantize", _Q, _ALL, "graph-pass",
         "mode='SCALED' and its input is not a Const",
         f"{_MEASURED}; DequantizeRewrite, mkl_layout_pass.cc@2.21.0:1548"),

    # ---- graph-only rules that need a neighbour (no eager counterpart)
    Rule("MaxPoolGrad", "graph", "_MklNativeMaxPoolGrad", _F, _ALL, "graph-pass",
         "its orig_output input is output 0 of a MaxPool in the same graph (the oneDNN workspace)",
         f"{_MEASURED}; MaxpoolGradRewrite, mkl_layout_pass.cc@2.21.0:2602 "
         "'workspace_enabled for MaxPoolGrad'",
         note="alone in a graph, and always eagerly, it stays stock (measured)"),
    Rule("MaxPool3DGrad", "graph", "_MklNativeMaxPool3DGrad", _F, _ALL, "graph-pass",
         "its orig_output input is output 0 of a MaxPool3D in the same graph", _MEASURED,
         note="alone in a graph, and always eagerly, it stays stock (measured)"),

    # ---- fp16 on AVX512_FP16 CPUs (2.16+): conditional on the CPU
    *(Rule(op, "eager", kernel, _F16, ("2.16", LAST_VERSION), mech, _FP16, _FP16_SRC, note=_FP16_NOTE,
           cpu="AVX512_FP16")
      for op, kernel, mech in (
          ("MatMul", "_MklMatMul", "eager-rename"),
          ("BatchMatMulV2", "_MklBatchMatMulV2", "eager-rename"),
          ("Conv2D", "_MklNativeConv2D", "eager-rename"),
          ("FusedBatchNormV3", "_MklNativeFusedBatchNormV3", "eager-rename"),
          ("MaxPool", "_MklNativeMaxPool", "eager-wrapper-graph-pass"),
          ("Softmax", "_MklSoftmax", "eager-wrapper-graph-pass"),
          ("Conv2DBackpropInput", "_MklNativeConv2DBackpropInput", "eager-rename"),
          ("Conv2DBackpropFilter", "_MklNativeConv2DBackpropFilter", "eager-rename"),
          ("Transpose", "_MklTranspose", "eager-wrapper-graph-pass"))),
    *(Rule(op, "graph", kernel, _F16, ("2.16", LAST_VERSION), "graph-pass", _FP16, _FP16_SRC, note=_FP16_NOTE,
           cpu="AVX512_FP16")
      for op, kernel in (
          ("MatMul", "_MklMatMul"), ("BatchMatMulV2", "_MklBatchMatMulV2"),
          ("Conv2D", "_MklNativeConv2D"), ("FusedBatchNormV3", "_MklNativeFusedBatchNormV3"),
          ("MaxPool", "_MklNativeMaxPool"), ("Softmax", "_MklSoftmax"),
          ("Conv2DBackpropInput", "_MklNativeConv2DBackpropInput"),
          ("Conv2DBackpropFilter", "_MklNativeConv2DBackpropFilter"),
          ("Transpose", "_MklTranspose"))),

    # ---- remapper fusions, oneDNN on (graph mode only; the node named after the
    # op_type below runs the fused kernel)
    _fusion("MatMul", _FMM,
            "its only consumer is a BiasAdd: the MatMul is absorbed into one fused node named after "
            "the last op of the pattern (the BiasAdd, or an activation / AddV2 / GELU Mul after it), "
            "so no kernel runs under the MatMul's own name",
            source=f"{_MEASURED}; {_REMAP_BIAS}"),
    _fusion("BiasAdd", _FMM,
            "its input is a MatMul (MatMul+BiasAdd); the fused node keeps this BiasAdd's name "
            "unless an activation or AddV2 follows",
            source=f"{_MEASURED}; {_REMAP_BIAS}"),
    _fusion("BiasAdd", _FCONV,
            "its input is a Conv2D (Conv2D+BiasAdd); the fused node keeps this BiasAdd's name "
            "unless Relu/Relu6/Elu/LeakyRelu or AddV2+Relu follows",
            source=f"{_MEASURED}; {_REMAP_BIAS}"),
    _fusion("BiasAdd", "_MklNativeFusedConv3D", "its input is a Conv3D (Conv3D+BiasAdd)",
            source=f"{_MEASURED}; {_REMAP_BIAS}"),
    *(_fusion(act, _FMM, f"its input is BiasAdd(MatMul) (MatMul+BiasAdd+{act}){_MM_NAME}, i.e. this {act}",
              source=f"{_MEASURED}; {_REMAP_ACT}")
      for act in ("Relu", "Relu6", "Elu", "LeakyRelu", "Tanh", "Sigmoid")),
    *(_fusion(act, _FCONV, f"its input is BiasAdd(Conv2D) (Conv2D+BiasAdd+{act}){_MM_NAME}, i.e. this {act}",
              source=f"{_MEASURED}; {_REMAP_ACT}")
      for act in ("Relu", "Relu6", "Elu", "LeakyRelu")),
    _fusion("AddV2", _FMM,
            "it adds a same-shaped tensor to BiasAdd(MatMul) (MatMul+BiasAdd+Add)" + _MM_NAME),
    _fusion("Relu", _FCONV,
            "its input is AddV2(BiasAdd(Conv2D), x) (Conv2D+BiasAdd+Add+Relu)" + _MM_NAME),
    _fusion("Relu", _FCONV,
            "its input is an inference-mode FusedBatchNormV3 of a Conv2D (Conv2D+FusedBatchNorm+Relu); "
            "DT_FLOAT only: in DT_BFLOAT16 the Conv2D stays _MklNativeConv2D and BatchNorm+Relu "
            "become _MklNativeFusedBatchNormEx",
            dtypes=_F32, source=f"{_MEASURED}; remapper.cc@2.21.0:3627 'Fuse Conv2D with BatchNorm and Relu'"),
    _fusion("Relu", "_MklNativePadWithFusedConv2D",
            "its input is BiasAdd(Conv2D(Pad)) with padding='VALID' (Pad+Conv2D+BiasAdd+Relu)" + _MM_NAME),
    _fusion("Conv2D", "_MklNativePadWithConv2D",
            "its input is a Pad and padding='VALID' (Pad+Conv2D); the fused node keeps the Conv2D's "
            "name and the Pad runs no kernel"),
    _fusion("Relu6", "_MklNativeFusedDepthwiseConv2dNative",
            "its input is BiasAdd(DepthwiseConv2dNative) (DepthwiseConv2dNative+BiasAdd+Relu6)" + _MM_NAME),
    _fusion("Mul", _FMM,
            "it is the last Mul of tf.nn.gelu(approximate=False) applied to BiasAdd(MatMul) "
            "(MatMul+BiasAdd+GeluExact); the fused node is named '.../Gelu/mul_1' in TF 2.12-2.18 "
            "and '.../Gelu/mul_2' in 2.19-2.21 (tf.nn.gelu's graph changed). tf.nn.gelu("
            "approximate=True) is not fused: only MatMul+BiasAdd fuse and the GELU ops stay stock"),
    _fusion("Mul", "_MklSwish", "it computes x * Sigmoid(x) (Swish/SiLU); the Sigmoid runs no kernel"),
    _fusion("Mul", "_MklFusedMish",
            "it computes x * Tanh(Softplus(x)) (Mish); the Softplus and Tanh run no kernel"),
    _fusion("AddV2", "_MklFusedBatchMatMulV2",
            "its input is Mul(BatchMatMulV2 of 4-D tensors, scalar) (BatchMatMul*scale+add)" + _MM_NAME),
    _fusion("FusedBatchNormV3", "_MklNativeFusedBatchNormEx",
            "inference mode (is_training=False) and its only consumer is a Relu: unlike other fusions "
            "the fused node keeps the BatchNorm's name and the Relu runs no kernel",
            source=f"{_MEASURED}; remapper.cc@2.21.0:4163 'Fuse Relu with FusedBatchNorm'"),
    _fusion("Relu", "_MklNativeFusedBatchNormEx",
            "its input is an inference-mode FusedBatchNormV3 (not fed by a DT_FLOAT Conv2D): the Relu "
            "is absorbed into the BatchNorm's node, which keeps the BatchNorm's name",
            source=f"{_MEASURED}; remapper.cc@2.21.0:4163 'Fuse Relu with FusedBatchNorm'"),

    # ---- remapper fusions with oneDNN off: stock fused kernels, DT_FLOAT only
    _fusion("MatMul", "_FusedMatMul",
            "its only consumer is a BiasAdd: absorbed into a stock _FusedMatMul named after the BiasAdd "
            "or the Relu/Relu6/Elu/LeakyRelu after it",
            dtypes=_F32, onednn=False),
    _fusion("BiasAdd", "_FusedMatMul", "its input is a MatMul (stock MatMul+BiasAdd fusion)",
            dtypes=_F32, onednn=False),
    *(_fusion(act, "_FusedMatMul", f"its input is BiasAdd(MatMul) (stock MatMul+BiasAdd+{act} fusion)",
              dtypes=_F32, onednn=False)
      for act in ("Relu", "Relu6", "Elu", "LeakyRelu")),
    _fusion("BiasAdd", "_FusedConv2D", "its input is a Conv2D (stock Conv2D+BiasAdd fusion)",
            dtypes=_F32, onednn=False),
    *(_fusion(act, "_FusedConv2D", f"its input is BiasAdd(Conv2D) (stock Conv2D+BiasAdd+{act} fusion)",
              dtypes=_F32, onednn=False)
      for act in ("Relu", "Relu6", "Elu", "LeakyRelu")),
    _fusion("Relu", "_FusedConv2D",
            "its input is an inference-mode FusedBatchNormV3 of a Conv2D (stock Conv2D+BatchNorm+Relu)",
            dtypes=_F32, onednn=False),
)

# Op types measured stock (no rule) in both modes, DT_FLOAT and DT_BFLOAT16 (and
# DT_INT32 where listed in the measurement), every version 2.12-2.21.
MEASURED_STOCK_OPS: frozenset[str] = frozenset({
    "Relu", "Relu6", "LeakyRelu", "Elu", "Tanh", "Sigmoid", "Sqrt", "Square", "Exp",
    "Identity", "Reshape", "Slice", "Pad", "Sum", "Mean", "AddV2", "Add", "Mul", "Sub",
    "SquaredDifference", "Maximum", "AddN", "ConcatV2", "BiasAdd", "Cast", "LRN",
    "LogSoftmax",
})


# --------------------------------------------------------------------------
# queries


# Memoised: a run asks this for every graph op and dtype (its kernel, its CPU dependence),
# yet few distinct questions, and RULES never changes.
@functools.lru_cache(maxsize=4096)
def matching_rules(op_type: str, mode: str, tf_version: str, dtype: str = "DT_FLOAT",
                   onednn: bool = True) -> tuple[Rule, ...]:
    """Every rule for this op, mode, version, dtype and oneDNN setting, conditional ones included."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    dt = normalize_dtype(dtype)
    return tuple(r for r in RULES
                 if r.op_type == op_type and r.mode == mode and r.onednn == onednn
                 and dt in r.dtypes and _in_versions(r, tf_version))


def _holds(rule: Rule, cpu: frozenset[str] | None) -> bool:
    """Whether a rule applies without more context: unconditional, or its CPU
    feature is among the run's known ones."""
    return not rule.condition or bool(rule.cpu and cpu is not None and rule.cpu in cpu)


def expected_kernel(op_type: str, mode: str, tf_version: str, dtype: str = "DT_FLOAT",
                    onednn: bool = True, cpu: frozenset[str] | None = None) -> tuple[str, Rule | None]:
    """The kernel TF runs for ``op_type`` and the unconditional rule that says so.

    ``(op_type, None)`` means the stock kernel: no unconditional rule applies
    (see :func:`stock_reason`). Rules with a ``condition`` are never applied
    here because they depend on context this call does not have; ask
    :func:`matching_rules` for them. The exception is a rule that needs a CPU
    feature: it applies when ``cpu`` (the run's instruction sets, None if not
    known) has it; :func:`cpu_dependence` tells when the answer hangs on an
    unknown CPU.
    """
    for rule in matching_rules(op_type, mode, tf_version, dtype, onednn):
        if _holds(rule, cpu):
            return rule.kernel, rule
    return op_type, None


def cpu_dependence(op_type: str, mode: str, tf_version: str, dtype: str = "DT_FLOAT",
                   onednn: bool = True) -> Rule | None:
    """The rule that would change the kernel on a CPU with its feature, or None:
    with an unknown CPU, ``expected_kernel`` is then only the answer without it."""
    for rule in matching_rules(op_type, mode, tf_version, dtype, onednn):
        if not rule.condition:
            return None
        if rule.cpu:
            return rule
    return None


def eager_dispatch_name(op_type: str, tf_version: str, dtype: str = "DT_FLOAT",
                        onednn: bool = True, cpu: frozenset[str] | None = None) -> str:
    """The name eager ``Executing op`` lines and the profiler show for ``op_type``.

    Only ``eager-rename`` ops change name at dispatch; ops the graph pass
    rewrites inside ``__wrapped__<Op>`` keep their stock name there.
    """
    kernel, rule = expected_kernel(op_type, "eager", tf_version, dtype, onednn, cpu)
    if rule is not None and rule.mechanism == "eager-rename":
        return kernel
    return op_type


# --------------------------------------------------------------------------
# why a kernel stays stock


class _StockQuestion:
    """One :func:`stock_reason` question, with the rules that answer it: each list is
    looked up once, and only when a reason needs it."""

    def __init__(self, op_type: str, mode: str, tf_version: str, dtype: str,
                 onednn: bool) -> None:
        self.op_type, self.mode, self.tf_version, self.onednn = op_type, mode, tf_version, onednn
        self.dtype = normalize_dtype(dtype)

    @functools.cached_property
    def rewrites(self) -> list[Rule]:
        """The op's oneDNN rewrites in this mode, for any version and dtype (no fusion)."""
        return [r for r in RULES if r.op_type == self.op_type and r.mode == self.mode
                and r.onednn and r.mechanism != "remapper-fusion"]

    @functools.cached_property
    def in_version(self) -> list[Rule]:
        """The rewrites that hold in this TF version."""
        return [r for r in self.rewrites if _in_versions(r, self.tf_version)]

    @functools.cached_property
    def for_dtype(self) -> list[Rule]:
        """The rewrites that hold in this TF version for this dtype."""
        return [r for r in self.in_version if self.dtype in r.dtypes]

    @functools.cached_property
    def supported_dtypes(self) -> str:
        return ", ".join(sorted(set().union(*(r.dtypes for r in self.in_version))))

    @functools.cached_property
    def fusion_note(self) -> str:
        """A sentence on a remapper fusion that can still absorb the op, or ""."""
        fusions = [r for r in matching_rules(self.op_type, self.mode, self.tf_version, self.dtype)
                   if r.mechanism == "remapper-fusion"]
        if not fusions:
            return ""
        return (f" In a graph a remapper fusion can still absorb it, e.g. into "
                f"{fusions[0].kernel} when {fusions[0].condition}.")


def _onednn_off(q: _StockQuestion) -> str | None:
    if q.onednn:
        return None
    tail = ("; in graphs only the stock remapper fusions (_FusedMatMul, _FusedConv2D) remain"
            if q.mode == "graph" else "")
    return (f"oneDNN is off (TF_ENABLE_ONEDNN_OPTS=0, or a CPU without AVX512_VNNI/AVX512_BF16/"
            f"AVX_VNNI/AMX where it is off by default): {q.op_type} runs its stock kernel{tail}.")


def _version_unknown(q: _StockQuestion) -> str | None:
    """No version to look rules up for: say what the newest table would say."""
    if _VERSION_RE.match(q.tf_version):
        return None
    kernel, rule = expected_kernel(q.op_type, q.mode, LAST_VERSION, q.dtype)
    verdict = (f"{q.op_type} would run {kernel} for {q.dtype}" if rule is not None else
               f"no oneDNN rule renames {q.op_type} for {q.dtype}, so the stock kernel runs")
    return (f"the TF version is unknown (no dump metadata); by the rules of TF {LAST_VERSION}, "
            f"{verdict}.")


def _version_outside_table(q: _StockQuestion) -> str | None:
    if covers(q.tf_version):
        return None
    return (f"TF {q.tf_version} is outside the versions this table covers "
            f"({FIRST_VERSION}-{LAST_VERSION}), so no oneDNN rule is known for {q.op_type}.")


def _not_stock(q: _StockQuestion) -> str | None:
    """An unconditional rule applies: the op runs another kernel."""
    kernel, rule = expected_kernel(q.op_type, q.mode, q.tf_version, q.dtype)
    if rule is None:
        return None
    return (f"{q.op_type} does not stay stock: in TF {q.tf_version} {q.mode} mode it runs "
            f"{kernel} for {q.dtype} ({rule.mechanism}).")


def _rewrite_needs_context(q: _StockQuestion) -> str | None:
    """Only conditional rewrites hold for this version and dtype."""
    if not q.for_dtype:
        return None
    rule = q.for_dtype[0]
    return (f"{q.op_type} runs {rule.kernel} only when {rule.condition}; "
            f"without that context it keeps the stock {q.op_type} kernel.")


def _dtype_unsupported(q: _StockQuestion) -> str | None:
    """An unconditional rewrite holds in this version, for other dtypes."""
    if all(r.condition for r in q.in_version):
        return None
    return (f"{q.op_type} has a oneDNN kernel ({q.in_version[0].kernel}) in TF {q.tf_version} "
            f"only for {q.supported_dtypes}; {_dtype_words(q.dtype)} is not supported, so the "
            f"stock kernel runs.{q.fusion_note}")


def _other_dtypes_need_context(q: _StockQuestion) -> str | None:
    """Only conditional rewrites hold in this version, for other dtypes."""
    if not q.in_version:
        return None
    return (f"{q.op_type} is rewritten to {q.in_version[0].kernel} in TF {q.tf_version} only "
            f"for {q.supported_dtypes} and only when {q.in_version[0].condition}; {q.dtype} "
            f"keeps the stock kernel.")


def _other_versions(q: _StockQuestion) -> str | None:
    if not q.rewrites:
        return None
    spans = ", ".join(sorted({f"{r.versions[0]}-{r.versions[1]}" for r in q.rewrites}))
    return (f"{q.op_type} is not rewritten in TF {q.tf_version} {q.mode} mode; "
            f"the oneDNN rule for it holds only in TF {spans}.")


def _graph_rule_needs_context(q: _StockQuestion) -> str | None:
    """Eagerly: the graph pass has a rule, which its one-node function cannot meet."""
    if q.mode != "eager":
        return None
    graph_only = [r for r in RULES if r.op_type == q.op_type and r.mode == "graph" and r.onednn
                  and r.mechanism == "graph-pass" and _in_versions(r, q.tf_version)
                  and q.dtype in r.dtypes]
    if not graph_only:
        return None
    return (f"{q.op_type} is not on MklEagerOpRewrite's eager rename list, and the graph pass "
            f"that runs on its one-node __wrapped__{q.op_type} function does not rewrite it "
            f"there: its graph rule needs context that function lacks "
            f"({graph_only[0].condition}).")


def _no_rule_known(q: _StockQuestion) -> str | None:
    """An op the table has no rule for, and that was not measured stock."""
    if q.op_type in MEASURED_STOCK_OPS:
        return None
    return (f"No oneDNN rule is known for {q.op_type} in TF {q.tf_version}: neither "
            f"MklEagerOpRewrite (eager) nor MklLayoutRewritePass (graph, and eagerly via "
            f"__wrapped__{q.op_type}) is known to rename it, so the stock kernel runs."
            f"{q.fusion_note}")


def _measured_stock(q: _StockQuestion) -> str:
    measured = f" (measured stock in TF {FIRST_VERSION}-{LAST_VERSION})"
    if q.mode == "eager":
        return (f"No oneDNN kernel is registered for {q.op_type}{measured}: it is not on the "
                f"eager rename list and the graph pass on its __wrapped__{q.op_type} function "
                f"leaves it alone.")
    return (f"No oneDNN kernel is registered for {q.op_type}{measured}: MklLayoutRewritePass "
            f"leaves its node alone.{q.fusion_note}")


# Why an op keeps its stock kernel, the first reason that answers (None: not this one);
# the last answers always.
_STOCK_REASONS: tuple[Callable[[_StockQuestion], str | None], ...] = (
    _onednn_off,
    _version_unknown,
    _version_outside_table,
    _not_stock,
    _rewrite_needs_context,
    _dtype_unsupported,
    _other_dtypes_need_context,
    _other_versions,
    _graph_rule_needs_context,
    _no_rule_known,
    _measured_stock,
)


def stock_reason(op_type: str, mode: str, tf_version: str, dtype: str, *, onednn: bool = True) -> str:
    """A sentence saying why ``op_type`` runs its stock kernel.

    Reasons, in the order checked (``_STOCK_REASONS``): oneDNN off; version outside the
    table; a rewrite that needs context (attrs, a neighbour, an environment variable,
    a CPU feature); the dtype is not supported; the rule exists only in other
    versions; eagerly, the op is neither on the rename list nor rewritten in
    its ``__wrapped__`` function; no oneDNN kernel at all. If the op does not
    stay stock, the sentence says which kernel runs instead.
    """
    question = _StockQuestion(op_type, mode, tf_version, dtype, onednn)
    return next(text for reason in _STOCK_REASONS if (text := reason(question)) is not None)
