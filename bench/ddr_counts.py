"""Per-op-type counts as TensorFlow's own DebugDataReader computes them.

In: a dump directory (argv[1]). Out: on stdout, JSON {"eager": {op type: n},
"graph": {op type: n}, "functions": {name: n}} -- the same counts
``tb-opmode summary`` reports (digests only, lowest traced output slot per
op). Used by bench.py as the baseline to beat and to check that our numbers
agree with TensorFlow's, and by the tests (tests/conftest.py ddr_counts) as
the reference for ours.
"""
from __future__ import annotations

import json
import sys
from collections import Counter

__all__ = ["reference_counts", "reference_device_counts", "main"]


def reference_counts(directory: str) -> dict[str, dict[str, int]]:
    from tensorflow.python.debug.lib import debug_events_reader

    with debug_events_reader.DebugDataReader(directory) as reader:
        reader.update()
        eager: Counter = Counter()
        functions: Counter = Counter()
        for digest in reader.executions(digest=True):
            execution = reader.read_execution(digest)
            if execution.graph_id:
                functions[digest.op_type] += 1
            else:
                eager[digest.op_type] += 1
        traces = reader.graph_execution_traces(digest=True)
        lowest: dict[tuple[str, str], int] = {}
        for t in traces:
            key = (t.graph_id, t.op_name)
            lowest[key] = min(lowest.get(key, t.output_slot), t.output_slot)
        graph = Counter(t.op_type for t in traces
                        if t.output_slot == lowest[(t.graph_id, t.op_name)])
    return {"eager": dict(eager), "graph": dict(graph), "functions": dict(functions)}


def reference_device_counts(directory: str) -> dict[str, dict[str, dict[str, int]]]:
    """Per device: {"eager": {device: {op type: n}}, "graph": {...}, "functions": {...}}
    as DebugDataReader reads them. An execution's device is that of its first output
    (``Execution.output_tensor_device_ids``; "" when it has no output), a graph
    execution's the ``device_name`` of its trace (lowest traced output slot per op)."""
    from tensorflow.python.debug.lib import debug_events_reader

    out: dict[str, dict[str, Counter]] = {"eager": {}, "graph": {}, "functions": {}}
    with debug_events_reader.DebugDataReader(directory) as reader:
        reader.update()
        for digest in reader.executions(digest=True):
            execution = reader.read_execution(digest)
            ids = execution.output_tensor_device_ids
            device = reader.device_name_by_id(ids[0]) if ids else ""
            kind = "functions" if execution.graph_id else "eager"
            out[kind].setdefault(device, Counter())[digest.op_type] += 1
        traces = reader.graph_execution_traces(digest=True)
        lowest: dict[tuple[str, str], int] = {}
        for t in traces:
            key = (t.graph_id, t.op_name)
            lowest[key] = min(lowest.get(key, t.output_slot), t.output_slot)
        for t in traces:
            if t.output_slot == lowest[(t.graph_id, t.op_name)]:
                device = reader.read_graph_execution_trace(t).device_name
                out["graph"].setdefault(device, Counter())[t.op_type] += 1
    return {kind: {d: dict(c) for d, c in per.items()} for kind, per in out.items()}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    json.dump(reference_counts(args[0]), sys.stdout, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
