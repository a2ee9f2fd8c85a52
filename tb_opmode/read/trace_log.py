"""TF's Python log line for each new trace: which function, and the key it traced for.

In: a log's blocks of whole lines, as ``read.textlog`` reads them (one read of the file
for both). Out: ``TraceLineReader``'s lines, one ``TraceLine`` per "Creating new FuncGraph
for Python function ..." message, in file order.

``tracing_compilation`` writes the message at Python vlog level 1 (``tb-opmode record``
turns it on; ``tf.get_logger().setLevel(1)`` or ``TF_CPP_MAX_VLOG_LEVEL`` do not) each
time it traces, once per trace, with the trace's key (TF 2.13 prints it on one line, as
``FunctionType(parameters=[Parameter(name=x, kind=..., type_constraint=TensorSpec(...)),
...])``; read the same)::

    Level 1:tensorflow:Creating new FuncGraph for Python function <function step at
    0x7f...> (key: FunctionContext(context=EagerContext(parent_graph=None, ...), ...),
    Input Parameters:
      x (POSITIONAL_OR_KEYWORD): TensorSpec(shape=(4, 8), dtype=tf.float32, name=None)
      lr (POSITIONAL_OR_KEYWORD): Literal[0.1]
    Output Type:
      ...

``parent_graph=None`` marks a trace made from Python (eagerly); any other parent is a
tf.function traced inside another's trace. TF 2.21's key ends with the trace's scope,
``scope_type=<ScopeType.VARIABLE_CREATION: 2>`` (a first call, which may create
variables) or ``NO_VARIABLE_CREATION`` (a trace after a first one that created them);
TF 2.13's key has none (``scope`` is then ""). The address tells ``tf.function`` objects of
the same code apart only as long as Python keeps the function alive (it may reuse it).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["TRACE_MARK", "TraceLine", "TraceParam", "TraceLineReader", "parse_trace_lines", "tensor_specs"]

# The bytes that start each message (after its "Level 1:tensorflow:" prefix); a file
# holding them is a log of traces, however little else it holds (record's ``tf_python.log``).
TRACE_MARK = b"Creating new FuncGraph for Python function <function "
_HEAD = re.compile(rb"<function (?P<qualname>\S+) at (?P<address>0x[0-9a-f]+)>")
_PARAM = re.compile(r"^  (?P<name>[^\s(]+) \((?P<kind>[A-Z_]+)\): (?P<spec>.*)$")
_TENSOR = re.compile(r"^TensorSpec\(shape=(?P<shape>\(.*?\)|<unknown>|None), dtype=tf\.(?P<dtype>\w+)")
_NESTED = re.compile(r"TensorSpec\(shape=(\(.*?\)|<unknown>|None), dtype=tf\.(\w+)")
_LITERAL = re.compile(r"^Literal\[(?P<value>.*)\]$")
# TF 2.13 prints the key on one line, its parameters as FunctionType(parameters=[...])
_ONE_LINE = b"FunctionType(parameters=["
_PARAMETER = re.compile(r"Parameter\(name=([^,]+), kind=([A-Z_]+), optional=\w+, "
                        r"type_constraint=(.*?)\)(?=, Parameter\(|\], captures=)")
_LITERAL_213 = re.compile(r"^Literal\(value=(.*)\)$")
_SCOPE = re.compile(r"scope_type=<ScopeType\.(\w+): \d+>")
# The key's context (the graph, device, replica and XLA context the call was made in),
# printed before its scope.
_CONTEXT = re.compile(r"FunctionContext\(context=(.*?), scope_type=")
# How far a message's parameters may run past its start (a key with many arguments).
_MESSAGE_MAX = 1 << 16


@dataclass(frozen=True)
class TraceParam:
    """One parameter of a trace's key: a tensor's dtype and shape, or a Python value."""

    name: str
    kind: str                              # "tensor", "python" or "other"
    dtype: str = ""
    shape: tuple[int | None, ...] | None = None   # None: unknown rank
    value: str = ""                        # a Python value as the key prints it; else the spec


@dataclass(frozen=True)
class TraceLine:
    """One new trace, as TF's log line says it."""

    qualname: str        # ``_Scenario.custom_loop.<locals>.step``
    address: str         # the Python function object's id, as printed
    top_level: bool      # traced from Python, not inside another trace
    params: tuple[TraceParam, ...]
    scope: str = ""      # the key's ScopeType name ("VARIABLE_CREATION"); "": not printed
    seconds: float | None = None  # how long the trace took, where ``tb-opmode record`` timed it
    # the key's context as printed ("EagerContext(parent_graph=None, ...)"); "": not printed
    context: str = ""

    @property
    def name(self) -> str:
        """The function's own name (``step``, ``<lambda>``), as tf.function names graphs."""
        return self.qualname.rsplit(".", 1)[-1]


def _shape(text: str) -> tuple[int | None, ...] | None:
    if not text.startswith("("):
        return None
    dims = [d.strip() for d in text[1:-1].split(",") if d.strip()]
    return tuple(None if d == "None" else int(d) for d in dims)


def tensor_specs(param: TraceParam) -> list[tuple[str, str, tuple[int | None, ...] | None]]:
    """(name, dtype, shape) of each tensor a parameter holds: itself, or the TensorSpecs
    nested in its spec (an iterator's elements, a tuple's items) as ``name[i]``."""
    if param.kind == "tensor":
        return [(param.name, param.dtype, param.shape)]
    if param.kind != "other":
        return []
    return [(f"{param.name}[{i}]", dtype, _shape(shape))
            for i, (shape, dtype) in enumerate(_NESTED.findall(param.value))]


def _param(line: str) -> TraceParam | None:
    m = _PARAM.match(line)
    if m is None:
        return None
    name, spec = m.group("name"), m.group("spec").strip()
    tensor = _TENSOR.match(spec)
    if tensor is not None:
        return TraceParam(name, "tensor", tensor.group("dtype"), _shape(tensor.group("shape")))
    literal = _LITERAL.match(spec)
    if literal is not None:
        return TraceParam(name, "python", value=literal.group("value"))
    return TraceParam(name, "other", value=spec)


def _end(text: bytes, at: int) -> int:
    """Where the message starting at ``at`` ends (its "Output Type:" line, or the end of
    its one line in TF 2.13's form); -1 where it is not (yet) whole."""
    eol = text.find(b"\n", at)
    if eol < 0:
        return -1
    if _ONE_LINE in text[at:eol]:
        return eol
    return text.find(b"\nOutput Type:", eol - 1, at + _MESSAGE_MAX)


def _one_line_params(line: str) -> list[TraceParam]:
    """TF 2.13's ``FunctionType(parameters=[Parameter(name=x, kind=..., optional=...,
    type_constraint=SPEC), ...]``, each as the multi-line form's ``  x (KIND): SPEC``."""
    return [p for m in _PARAMETER.finditer(line)
            if (p := _param(f"  {m.group(1)} ({m.group(2)}): {_literal(m.group(3))}")) is not None]


def _literal(spec: str) -> str:
    m = _LITERAL_213.match(spec)
    return f"Literal[{m.group(1)}]" if m else spec


def _message(text: bytes, at: int) -> TraceLine | None:
    """The trace line starting at ``at`` (the mark), None where it does not parse."""
    head = _HEAD.search(text, at, at + 4096)
    end = _end(text, at)
    if head is None or end < 0 or text.find(TRACE_MARK, at + len(TRACE_MARK), end) >= 0:
        return None
    message = text[at:end].decode("utf-8", "replace")
    first, _, body = message.partition("\n")
    if _ONE_LINE.decode() in first:
        params = _one_line_params(first)
    else:
        params = [p for p in map(_param, body.split("\n")) if p is not None]
    key = first[first.find("(key: "):]
    scope, context = _SCOPE.search(key), _CONTEXT.search(key)
    return TraceLine(head.group("qualname").decode("utf-8", "replace"),
                     head.group("address").decode(), "parent_graph=None" in key, tuple(params),
                     scope.group(1) if scope else "", context=context.group(1) if context else "")


def parse_trace_lines(text: bytes, final: bool = True) -> tuple[list[TraceLine], int]:
    """The trace lines of a log's bytes, in order, and where the unread rest begins: at a
    message not yet whole (``final`` False: more bytes follow), else at the end."""
    out: list[TraceLine] = []
    at = text.find(TRACE_MARK)
    while at >= 0:
        if not final and _end(text, at) < 0 and len(text) - at < _MESSAGE_MAX:
            return out, at
        line = _message(text, at)
        if line is not None:
            out.append(line)
        at = text.find(TRACE_MARK, at + len(TRACE_MARK))
    return out, max(len(text) - len(TRACE_MARK), 0) if not final else len(text)


class TraceLineReader:
    """The trace lines of a log read block by block (blocks of whole lines, as the log
    reader hands them): a message whose lines go on past a block is kept until its end."""

    def __init__(self) -> None:
        self.lines: list[TraceLine] = []
        self.pending = b""

    def feed(self, data: bytes, start: int, end: int) -> None:
        """The lines ``data[start:end]``; cheap where no message is there or open."""
        if not self.pending:
            first = data.find(TRACE_MARK, start, end)
            if first < 0:
                return
            start = data.rfind(b"\n", start, first) + 1 or start
        text = self.pending + data[start:end]
        found, unread = parse_trace_lines(text, final=False)
        self.lines += found
        self.pending = text[unread:] if text.startswith(TRACE_MARK, unread) else b""

    def close(self) -> list[TraceLine]:
        """Every trace line read (a message cut off at the end is not one)."""
        if self.pending:
            self.lines += parse_trace_lines(self.pending)[0]
            self.pending = b""
        return self.lines
