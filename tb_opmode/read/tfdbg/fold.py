"""Each kind of dump file's events folded into the ``DumpSet`` fields it fills.

In: a file's ``Events`` (``events``) and the part (a ``DumpSet``) of its ``FileState``.
Out: that part filled: metadata, source files (``SourceLines``), stack frames, graphs
and their ops, eager executions counted per key; ``FOLDS``, the fold of each kind but the
traces file (``tracejob``), whose wall-time window ``traces_window`` sets.
"""
from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Sequence

from .. import fs
from .dumpset import DumpSet, FileState, GraphInfo, OpCreation
from .events import Events
from .health import SHAPE_INDEX, HealthSpec, health_dtype, health_spec
from .sourcelines import SourceLines

__all__: list[str] = []


def _fold_metadata(part: DumpSet, events: Events) -> None:
    for event, what, meta, _stack, _offset, _payload in events:
        part._touch(event.wall_time)
        if what == "debug_metadata":
            part.tensorflow_version = meta.tensorflow_version or part.tensorflow_version
            part.file_version = meta.file_version or part.file_version
            part.run_id = meta.tfdbg_run_id or part.run_id


def _fold_source_files(part: DumpSet, events: Events, path: str = "") -> None:
    # A local file's records are read again from it when their lines are first asked
    # for, so a cache entry holds where they are, not the 8 MB of lines; a remote one's
    # are kept (a second fetch would cost more than it saves).
    local = bool(path) and not fs.is_remote(path)
    for _event, what, src, _stack, offset, payload in events:
        if what == "source_file":
            key = (src.host_name, src.file_path)
            # Stack frames index files by first appearance, as DebugDataReader does.
            if key not in part.source_lines:
                part.source_files.append(key)
            # The record decoded above: its lines are made when first read.
            part.source_lines[key] = (SourceLines.in_file(path, offset, len(payload), *key) if local
                                      else SourceLines.of_record(bytes(payload)))


def _fold_stack_frames(part: DumpSet, events: Events) -> None:
    for _event, what, frame, _stack, _offset, _payload in events:
        if what == "stack_frame_with_id":
            flc = frame.file_line_col
            part.stack_frames[frame.id] = (flc.file_index, flc.line, flc.func)


def _touch_all(part: DumpSet, walls: list[float]) -> None:
    """``part._touch`` of every wall time, done with their least non-zero one and their
    largest (the same window: one method call per record was a tenth of a fold)."""
    nonzero = [w for w in walls if w]
    if nonzero:
        part._touch(min(nonzero))
        part._touch(max(nonzero))


def _fold_graphs(part: DumpSet, events: Events) -> None:
    graphs = part.graphs
    new_op = tuple.__new__
    texts: dict[str, str] = {}
    walls: list[float] = []
    wall = walls.append
    spans = part.graph_walls
    for event, what, op, stack, _offset, _payload in events:
        wall(event.wall_time)
        if what == "graph_op_creation":
            graph = graphs.get(op.graph_id)
            if graph is None:
                graph = graphs[op.graph_id] = GraphInfo(op.graph_id, op.graph_name)
            first, _last = spans.get(graph.graph_id, (event.wall_time, 0.0))
            spans[graph.graph_id] = (first, event.wall_time)
            # The graph's own id string, not a new one per op: the cache entry then
            # pickles it once per graph instead of once per op.
            graph_id = graph.graph_id
            name = op.op_name
            # The stack is shared by the ops of one call site (``_Stacks``). The tuple made
            # directly (a named tuple's own constructor is a Python call) from a list of the
            # input names (one C call; iterating the repeated field took twice as long).
            # Op types and devices are a few strings each made anew per op: one object each
            # (pickled once, not per op).
            op_type, device = op.op_type, op.device_name
            op_type, device = texts.setdefault(op_type, op_type), texts.setdefault(device, device)
            graph.ops[name] = new_op(OpCreation, (op_type, name, graph_id, device,
                                                  op.num_outputs, stack, tuple(op.input_names[:])))
        elif what == "debugged_graph":
            g = op
            graph = graphs.get(g.graph_id)
            if graph is None:
                graph = graphs[g.graph_id] = GraphInfo(g.graph_id)
            graph.name = g.graph_name or graph.name
            graph.outer_id = g.outer_context_id
        elif what == "debugged_device":
            part.devices[op.device_id] = op.device_name
    _touch_all(part, walls)


class _Outputs:
    """The debug tensors of the latest eager outputs, by tensor id: what fed a function's
    call. Bounded: the oldest are dropped past ``limit`` (a call's inputs are made shortly
    before it, mostly)."""

    def __init__(self, limit: int = 1 << 15) -> None:
        self.limit = limit
        self.protos: dict[int, tuple[bytes, int]] = {}

    def add(self, ids: Sequence[int], protos: Sequence[bytes], mode: int) -> None:
        kept = self.protos
        for tensor_id, proto in zip(ids, protos):
            kept[tensor_id] = (proto, mode)
        if len(kept) > self.limit:
            for old in list(kept)[:len(kept) - self.limit // 2]:
                del kept[old]

    def specs(self, ids: Sequence[int]) -> tuple[HealthSpec, ...]:
        return tuple(health_spec(*self.protos[i]) if i in self.protos else None for i in ids)


def _fold_executions(part: DumpSet, events: Events) -> None:
    # Counted once per distinct (op type, graph, mode, stack, dtype, device), then summed
    # into the five counters: most executions repeat one of a few hundred such keys, and
    # five counter updates per record were a third of the fold. Each counter's keys come
    # out in the order of their first record, as counting record by record gives them.
    seen: Counter[tuple[str, str, int, tuple[str, ...], str, int]] = Counter()
    walls: list[float] = []
    wall = walls.append
    calls = part.call_times.setdefault
    eager_times = part.eager_times
    outputs = _Outputs()
    for event, what, ex, stack, _offset, _payload in events:
        wall_time = event.wall_time
        wall(wall_time)
        if what == "execution":
            mode = ex.tensor_debug_mode
            protos = ex.tensor_protos
            ids = ex.output_tensor_device_ids
            graph_id = ex.graph_id
            if graph_id:
                calls(graph_id, []).append(wall_time)
                if graph_id not in part.call_args:
                    part.call_args[graph_id] = outputs.specs(ex.input_tensor_ids)
            else:
                times = eager_times.get((ex.op_type, stack))
                if times is None:  # not setdefault: that makes an array per record
                    times = eager_times[(ex.op_type, stack)] = array("d")
                times.append(wall_time)
            if mode in SHAPE_INDEX:
                outputs.add(ex.output_tensor_ids, protos, mode)
            seen[(ex.op_type, graph_id, mode, stack,
                  health_dtype(protos[0] if protos else b"", mode), ids[0] if ids else -1)] += 1
    executions = part.executions
    sites = part.execution_sites
    modes = part.tensor_debug_modes
    dtypes = part.execution_dtypes
    devices = part.execution_devices
    for (op_type, graph_id, mode, stack, dtype, device), n in seen.items():
        executions[(op_type, graph_id)] += n
        sites[(op_type, stack)] += n
        modes[mode] += n
        dtypes[(op_type, dtype)] += n
        devices[(op_type, graph_id, device, dtype)] += n
    _touch_all(part, walls)


_FOLDS = {"metadata": _fold_metadata, "source_files": _fold_source_files,
          "stack_frames": _fold_stack_frames, "graphs": _fold_graphs,
          "execution": _fold_executions}


def _traces_window(state: FileState) -> None:
    part = state.part
    part.first_wall_time = part.last_wall_time = 0.0
    part._touch(state.first_wall)
    part._touch(state.last_wall)
