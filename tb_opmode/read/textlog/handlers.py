"""One handler per kind of line read one by one, and the split of a garbled line.

In: one line (bytes, no newline) whose kind is known: a TF line with its prefix read
(the handlers take the line, where its message starts, the thread id or None, the file
offset, and whether its tail was overwritten), a oneDNN verbose line, the CPU line.
Out: what the line says, in ``ParseState``'s tables.

With thread ids (TF 2.21) the dispatch, run and instantiation lines of each thread are
associated separately; without (TF 2.13) all share one context, and a function-runtime
line is taken for the current op only when the function's name fits the dispatched op,
which keeps other threads' lines out. Without the function-runtime lines at all (a
``TF_CPP_VMODULE`` that leaves them out) a wrapper is known only by op name and device,
so an op run with several dtypes is credited with the kernel instantiated last.

Damage: a line into which another line was written (stdout's oneDNN lines and stderr's
TF lines share a file) is split where the second line starts, and each piece read, the
cut one only as far as it is complete (``split_garbled``).
"""
from __future__ import annotations

import math
from typing import Optional

from . import format as log_format
from .format import (
    COMPONENT_SUCCEEDED,
    CPU_FEATURES,
    DEAD_NODE,
    DEBUG_KERNEL,
    EXECUTING_OP,
    EXITING_EAGER,
    FOLDED_NODE,
    FOLDING_STEP,
    FUNCTION_PREFIX,
    FUSED_OPS,
    GARBLED,
    IN_DEVICE,
    INSTANTIATING_KERNEL,
    ONEDNN_BANNER,
    PLUMBING_KERNELS,
    PLUMBING_NODES,
    PROCESS_NODE,
    RUNNING_COMPONENT,
    WRAPPED,
    XLA_LAUNCH,
    Route,
    as_text,
    node_fields,
    runs_eager_op,
)
from .state import EagerOp
from .steps import StepFiling

__all__ = ["LineHandlers"]


def _is_wrapped_op(op: EagerOp, name: bytes) -> bool:
    """Whether node ``name``, instantiated while ``op`` runs, is the op in its wrapper."""
    return (not op.is_function and not op.kernel and name == op.dispatch
            and (op.key is None or op.depth > 0))


class LineHandlers(StepFiling):
    """``StepFiling`` and the handlers of each kind of line, by source file."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.routes: dict[bytes, Route] = {
            b"execute.cc": ((EXECUTING_OP, EXITING_EAGER), self._on_execute_line),
            b"process_function_library_runtime.cc": ((RUNNING_COMPONENT, COMPONENT_SUCCEEDED),
                                                     self._on_function_runtime_line),
            b"op_kernel.cc": ((INSTANTIATING_KERNEL,), self._on_instantiation_line),
            b"executor.cc": ((PROCESS_NODE,), self._on_process_node_line),
            b"port.cc": ((ONEDNN_BANNER,), self._on_banner_line),
            b"xla_ops.cc": ((XLA_LAUNCH,), self._on_xla_launch_line),
            b"constant_folding.cc": ((FOLDED_NODE,), self._on_folded_node_line),
        }

    # -- eager ops ------------------------------------------------------------------------
    def _on_execute_line(self, line: bytes, at: int, tid: Optional[bytes], off: int, cut: bool) -> None:
        """``Executing op X in device D``: X dispatched; the thread's previous op is done.
        ``Exiting eager executing local operation``: the thread's function is done."""
        if not line.startswith(EXECUTING_OP, at):
            self.open_functions.pop(tid, None)
            return
        i = line.find(IN_DEVICE, at)
        if i < 0:
            if not cut:
                self.note_problem(GARBLED, off)
            return
        op = line[at + len(EXECUTING_OP):i]
        device = line[i + len(IN_DEVICE):].strip()
        if not op or b" " in op:
            self.note_problem(GARBLED, off)
            return
        self.dispatch[op] += 1
        if op.startswith(FUNCTION_PREFIX):
            self.open_functions[tid] = op
        else:
            self.open_functions.pop(tid, None)
        if self.tail:
            self.dispatched.add(tid)
        prev = self.eager_ops.get(tid)
        if prev is not None:
            self.count_eager_op(prev)
        self.eager_ops[tid] = EagerOp(op, device)

    def _on_function_runtime_line(self, line: bytes, at: int, tid: Optional[bytes], off: int,
                                  cut: bool) -> None:
        """``Running component function on device D from F with handle N`` / ``Component
        function execution succeeded``: the thread's eager op runs in its wrapper F."""
        op = self.eager_ops.get(tid)
        if op is None:
            if self.tail and tid not in self.dispatched:
                self.orphans.append((line, off))
            return
        if line.startswith(RUNNING_COMPONENT, at):
            self._component_started(op, line, at)
        elif line.startswith(COMPONENT_SUCCEEDED, at):
            op.depth -= 1
            if op.key is not None and op.depth <= 0:
                self.count_eager_op(op)
                del self.eager_ops[tid]

    def _component_started(self, op: EagerOp, line: bytes, at: int) -> None:
        i = line.rfind(b" from ", at)
        j = line.rfind(b" with handle ", at)
        if i < 0 or j < i:
            return
        fn = line[i + 6:j]
        handle = line[j + 13:].strip()
        if not handle.isdigit():
            return
        op.depth += 1
        if op.key is None and runs_eager_op(fn, op.dispatch):
            op.key = (fn, handle)
            if not fn.startswith(WRAPPED):
                op.is_function = True

    def _on_instantiation_line(self, line: bytes, at: int, tid: Optional[bytes], off: int,
                               cut: bool) -> None:
        """``Instantiating kernel for node: {{node NAME}} = KERNEL[...]``: inside a running
        wrapper of X, the node X is the op (its kernel is the wrapper's); else a graph node."""
        if not line.startswith(INSTANTIATING_KERNEL, at):
            return
        if self.tail and tid not in self.dispatched:
            self.orphans.append((line, off))
            return
        parsed = self._node_of_kernel_line(line, at, off)
        if parsed is None:
            # Still a node of the running function, which TF instantiated: one whose other
            # nodes grappler all removed (x * 1) runs nothing but its plumbing, and its
            # graph ops are known (none), not unknown.
            function = self.open_functions.get(tid)
            if function is not None:
                self.function_nodes.setdefault(function, {})
            return
        name, kernel, dtype = parsed
        op = self.eager_ops.get(tid)
        if op is not None and _is_wrapped_op(op, name):
            op.kernel, op.dtype = kernel, dtype
            key = op.key if op.key is not None else (op.dispatch, op.device)
            self.wrapper_kernels[key] = (kernel, dtype)
            if op.key is None:
                self.keyless_kernels.setdefault(key, set()).add(kernel)
            return
        self.instantiated[name] = (kernel, dtype)
        self._file_function_node(line, at, tid, name, kernel, dtype)
        if kernel.startswith(DEBUG_KERNEL) and name not in self.debug_inputs:
            self.record_debug_node(name, line)

    def _file_function_node(self, line: bytes, at: int, tid: Optional[bytes], name: bytes,
                            kernel: bytes, dtype: bytes) -> None:
        """A node instantiated while its thread runs a function: that function's; a fused
        node's fused_ops kept."""
        function = self.open_functions.get(tid)
        if function is not None:
            self.function_nodes.setdefault(function, {})[name] = (kernel, dtype)
        if b"fused_ops=[" in line:
            m = FUSED_OPS.search(line, at)
            if m is not None:
                self.fused_ops[name] = m.group(1)

    # -- graph nodes ----------------------------------------------------------------------
    def _node_of_kernel_line(self, line: bytes, at: int, off: int,
                             args: bool = False) -> Optional[tuple[bytes, bytes, bytes]]:
        """The node of a kernel line, or None when garbled (counted) or plumbing.
        ``args``: keep ``_Arg`` nodes (a graph's arguments, which dump ops name)."""
        parsed = node_fields(line, at)
        if parsed is None:
            self.note_problem(GARBLED, off)
            return None
        name, kernel, _dtype = parsed
        if (kernel in PLUMBING_KERNELS and not (args and kernel == b"_Arg")) or name in PLUMBING_NODES:
            return None
        return parsed

    def _on_process_node_line(self, line: bytes, at: int, tid: Optional[bytes], off: int,
                              cut: bool) -> None:
        """``Process node: I step S {{node NAME}} = KERNEL[...]``, read as a lone line."""
        if not line.startswith(PROCESS_NODE, at):
            return
        parsed = self._node_of_kernel_line(line, at, off, args=True)
        if parsed is None:
            return
        name, kernel, dtype = parsed
        if line.startswith(FOLDING_STEP, line.find(b" step ", at)):
            # Step -1 is grappler's constant folding evaluating nodes while it
            # optimises the graph, not a run of the graph.
            self.folded.add(name)
            return
        if DEAD_NODE in line:
            return  # an untaken branch: the node ran no kernel at this step
        s = line.find(b" step ", at) + 6
        self.node_ran(name, kernel, (kernel, dtype), line[s:line.find(b" ", s)],
                      line if kernel.startswith(DEBUG_KERNEL) else None)

    def _on_folded_node_line(self, line: bytes, at: int, tid: Optional[bytes], off: int,
                             cut: bool) -> None:
        """``Folded node: {{node X}} = ...``: grappler evaluated X once, at optimisation."""
        if line.startswith(FOLDED_NODE, at):
            parsed = node_fields(line, at)
            if parsed is not None:
                self.folded.add(parsed[0])

    def _on_xla_launch_line(self, line: bytes, at: int, tid: Optional[bytes], off: int,
                            cut: bool) -> None:
        """``XlaLocalLaunchOpBase::Compute __inference_f_93[_XlaMustCompile=true,...]``."""
        start = at + len(XLA_LAUNCH)
        end = line.find(b"[", start)
        name = line[start:end if end > 0 else len(line)].strip()
        if name and b" " not in name:
            self.xla_launches[name] += 1

    # -- start-up lines -------------------------------------------------------------------
    def _on_banner_line(self, line: bytes, at: int, tid: Optional[bytes], off: int, cut: bool) -> None:
        """``oneDNN custom operations are on`` (or ``off``)."""
        if line.startswith(ONEDNN_BANNER, at):
            word = line[at + len(ONEDNN_BANNER):at + len(ONEDNN_BANNER) + 3]
            if word.startswith(b"on"):
                self.onednn_opts = True
            elif word.startswith(b"off"):
                self.onednn_opts = False

    def on_cpu_line(self, line: bytes) -> None:
        """``To enable the following instructions: AVX2 AVX512F ... FMA, in other
        operations, rebuild ...``: instruction sets the CPU has and the binary was not
        built for; the kernel of some dtypes depends on them (AVX512_FP16)."""
        words = line[len(CPU_FEATURES):].split(b",", 1)[0].split()
        found = frozenset(as_text(w) for w in words if w.isalnum() or b"_" in w)
        self.cpu_features = found | (self.cpu_features or frozenset())

    # -- oneDNN verbose -------------------------------------------------------------------
    def on_onednn_line(self, line: bytes, off: int, whole: bool, split: bool = True) -> None:
        """One verbose line: a primitive executed, and its time. ``whole``: its last field
        can be trusted as the time; ``split``: a line written into it is split out."""
        fields = line.rstrip(b"\r\n").split(b",")
        try:
            idx = fields.index(b"exec", 1, 5)
        except ValueError:
            idx = 0  # no "exec" among the first fields
        if not idx or fields[idx - 1] == b"graph":
            # info/create/template lines, or a oneDNN Graph API line (other layout)
            if split and b"] " in line:
                self.split_garbled(line, off)
        elif len(fields) < idx + 6:
            if not (split and self.split_garbled(line, off)):
                self.note_problem(GARBLED, off)
        else:
            self._count_primitive(line, off, fields, idx, whole and not self.tail_cut, split)

    def _count_primitive(self, line: bytes, off: int, fields: list[bytes], idx: int, whole: bool,
                         split: bool) -> None:
        """A primitive's execution (``fields[idx]`` is "exec"), and its time if ``whole``."""
        ms: Optional[float] = None
        if whole:
            try:
                ms = float(fields[-1])
            except ValueError:
                if split and self.split_garbled(line, off):
                    return
                self.note_problem(GARBLED, off)
            else:
                if not 0.0 <= ms < math.inf:  # "nan", "inf", "1e999", < 0: no time oneDNN prints
                    ms = None
                    self.note_problem(GARBLED, off)
        key = (fields[idx + 2], fields[idx + 3], fields[idx + 4])
        self.primitives[key] += 1
        if ms is not None:
            self.primitive_ms[key] = self.primitive_ms.get(key, 0.0) + ms

    # -- garbled lines --------------------------------------------------------------------
    def split_garbled(self, line: bytes, off: int) -> bool:
        """Split ``line`` where other lines were written into it and read each piece;
        False (nothing done) if nothing was written into it."""
        cuts = [0]
        for e in log_format.EMBEDDED_LINE_START.finditer(line, 1):
            cuts.append(e.start())
        if len(cuts) == 1:
            return False
        cuts.append(len(line))
        self.note_problem(GARBLED, off)
        for i in range(len(cuts) - 1):
            a, b = cuts[i], cuts[i + 1]
            self._read_piece(line[a:b], off + a, b < len(line))
        return True

    def _read_piece(self, seg: bytes, off: int, cut: bool) -> None:
        """Read one piece of a garbled line; ``cut``: its tail was overwritten."""
        if log_format.ONEDNN_LINE_START.match(seg):
            self.on_onednn_line(seg, off, not cut, split=False)
            return
        m = log_format.PREFIX.match(seg)
        if m is None:
            return  # the tail of a line cut earlier: its head was read already
        if not self.tf_format:
            self.take_format(m)
        self.last_matched = seg
        route = self.routes.get(m.group(9))
        if route is not None and seg.startswith(route[0], m.end()):
            route[1](seg, m.end(), m.group(6), off, cut)
