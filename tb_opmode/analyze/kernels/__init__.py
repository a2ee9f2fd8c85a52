"""Which kernel ran each op in each mode, and how we know: the product's heart.

In: a ``RunModel`` whose counts ``assemble`` filled, with its dumps, profiles and logs.
Out: per dump graph op an ``OpKernel`` (kernel, evidence, the executed node, fusion or
rewrite, the rule that decided it), per eager (op type, dtype) an ``EagerAssignment``,
both folded by ``assemble`` into the model's ``KernelUse`` lists; and oneDNN's state.

Evidence, strongest first:

- ``log``: the TF VLOG lines, linked exactly to each dump op through tfdbg's debug
  nodes (``links``).
- ``profile``: ``<node>:<kernel>`` events, matched to dump ops by the longest
  ``/``-suffix of the node name (``links``).
- ``inferred``: from the dump's own graph and traces (grappler's removals, ``grappler``;
  the remapper's fusions, ``fusions``), from this run's own evidence (the same op type
  and dtype observed in a graph of the run), then from ``rules`` for the dump's TF
  version (``onednn.inferred_kernel``), in the order of ``graph_rules.GRAPH_RULES``.

The modules: ``graph`` (``assign_graph``: evidence, then rules, then passes across
ops), ``links``, ``context`` (what the rules read, built once per run and graph),
``graph_rules``, ``verdict``, ``fusions`` and ``remapper``, ``grappler``, ``tensors``,
``missing_events`` (what a missing profiler event proves), ``eager`` (``assign_eager``)
``onednn_state`` (oneDNN's state, how we know it, why it was off) and ``onednn`` (the
CPU, the rule table's kernel).
"""
from __future__ import annotations

from ...model import EagerAssignment, OpKernel
from ...vocab import REMOVED, UNKNOWN, is_onednn
from .eager import assign_eager
from .graph import assign_graph
from .links import LogLink
from .onednn import FLOAT_DTYPES, cpu_from_kernels, detect_onednn, inferred_kernel, run_cpu
from .remapper import is_fused

__all__ = ["LogLink", "assign_graph", "assign_eager", "detect_onednn",
           "is_fused", "run_cpu", "inferred_kernel", "FLOAT_DTYPES", "cpu_from_kernels",
           # Imported from here by callers, though defined in ``model`` and ``vocab``.
           "OpKernel", "EagerAssignment", "REMOVED", "UNKNOWN", "is_onednn"]
