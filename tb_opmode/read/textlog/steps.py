"""Graph node executions: Process node lines counted per text, and filed per step.

In: Process node lines as the scan found them, (step id, ``{{node NAME}} = KERNEL[...]``
text), or one line's parsed node; the debug node lines whose attrs name a dump op.
Out: the counts and kernels of ``ParseState`` (``graph_executions``, ``kernel_executions``,
``graph_kernels``, ``folded``), and per dump graph (tfdbg context id) the nodes of the
steps in which that graph's debug nodes ran (``context_kernels``, ``context_debug_inputs``).

A node prints the same text at every step, so a text is parsed once (``ProcessText``)
and its lines are counted per text object, in C; each open step keeps its texts until it
is filed. The kernel of a node is the one its last line names; a debug node's dump graph
is the one its target names when its step is filed.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from operator import itemgetter
from typing import Optional

from . import format as log_format
from .format import first_input
from .state import (
    KIND_DEAD,
    KIND_DEBUG,
    KIND_PLUMBING,
    MAX_OPEN_STEPS,
    MAX_TEXTS,
    OpenStep,
    ParseState,
    ProcessText,
)

__all__ = ["StepFiling"]

# How steps running one set of texts are filed: (nodes, dump graphs, own debug inputs).
_Filing = tuple[dict[bytes, tuple[bytes, bytes]], frozenset[bytes], dict[bytes, bytes]]
# Sets of texts whose filing is kept (``ParseState.filing_of_texts``).
_MAX_FILINGS = 256
_step_id_of = itemgetter(0)  # of a (step id, text, ...) the scan found


def _last_line_nodes(texts: list[ProcessText]) -> dict[bytes, tuple[bytes, bytes]]:
    """Node name -> (kernel, dtype) of the last of ``texts`` (in line order) naming it."""
    return {node.name: node.pair for node in texts
            if node.kind != KIND_PLUMBING and node.kind != KIND_DEAD}


class StepFiling(ParseState):
    """``ParseState`` and what the reading of Process node lines does with them."""

    def node_of_text(self, text: bytes) -> Optional[ProcessText]:
        """What a Process node line ending in ``text`` (``{{node NAME}} = KERNEL[attrs](inputs)
        device: D``) says, kept per distinct text. None when another line was written into
        it (such a line is read as a lone line, which splits it)."""
        if (b"] " in text or log_format.ONEDNN_MARK in text) \
                and log_format.EMBEDDED_LINE_START.search(text) is not None:
            return None
        j = text.find(b"}} = ")
        k = log_format.KERNEL_END.search(text, j + 5)
        if k is None:  # not in a text the scan matched; for the type checker
            return None
        node = ProcessText(text, j, k.start())
        if len(self.texts) >= MAX_TEXTS:
            self.texts.clear()  # texts that vary per line: memory stays bounded
            self.odd_texts.clear()
        self.texts[text] = node
        if b"] " in text or log_format.ONEDNN_MARK in text:
            self.odd_texts.add(node)
        if node.kind == KIND_DEBUG and node.name not in self.debug_inputs:
            self._await_debug_input(node)
        return node

    def _await_debug_input(self, node: ProcessText) -> None:
        """Note a debug node's text whose name has no input recorded yet: its first line
        counted gives it."""
        if len(self.debug_texts_pending) >= MAX_TEXTS:
            self.debug_texts_pending.clear()  # such texts only: inputs then taken per line
        self.debug_texts_pending.add(node)

    # -- lines whose texts are known ------------------------------------------------------
    def count_process_lines(self, found: Sequence[tuple[bytes, ...]], step_ids: dict[bytes, None],
                            nodes: list[ProcessText]) -> None:
        """Process node lines ((step id, text, ...) as a regex found them), all laid out as
        ``PROCESS_NODE_LINE`` expects, and their texts: the constant folding lines noted,
        the others counted per text (or taken one by one when a step is to be filed)."""
        if b"-1" in step_ids:
            found, nodes = self._without_folding_lines(found, nodes)
            del step_ids[b"-1"]
            if not found:
                return
        steps = self.open_steps
        if len(steps) + sum(s not in steps for s in step_ids) > MAX_OPEN_STEPS:
            # a step is filed to open another: that happens at a line, read them so
            self.take_process_lines(found, nodes)
            return
        self._count_per_text(found, step_ids, nodes)

    def _without_folding_lines(self, found: Sequence[tuple[bytes, ...]], nodes: list[ProcessText]
                               ) -> tuple[Sequence[tuple[bytes, ...]], list[ProcessText]]:
        """The lines and texts but those of step -1, whose nodes are noted as folded: step
        -1 is grappler's constant folding evaluating nodes while it optimises the graph,
        not a run of the graph."""
        for step_id, node in zip(map(_step_id_of, found), nodes):
            if step_id == b"-1" and node.kind != KIND_PLUMBING:
                self.folded.add(node.name)
        kept = [(x, node) for x, node in zip(found, nodes) if x[0] != b"-1"]
        return [x for x, _node in kept], [node for _x, node in kept]

    def _count_per_text(self, found: Sequence[tuple[bytes, ...]], step_ids: dict[bytes, None],
                        texts: list[ProcessText]) -> None:
        """Process node lines (step id, text) and their texts, with no step to file on the
        way: counted per text in C; each step keeps its texts (one object per text, so
        that no line's bytes are kept)."""
        self.text_counts.update(texts)
        seq = self.seq
        self.text_last_seq.update(zip(texts, range(seq, seq + len(texts))))
        self.seq = seq + len(texts)
        self._add_to_steps(found, step_ids, texts)
        if self.debug_texts_pending:
            self._record_pending_debug_nodes(texts)
        if len(self.text_last_seq) > MAX_TEXTS:
            self.fold_text_counts()

    def _add_to_steps(self, found: Sequence[tuple[bytes, ...]], step_ids: dict[bytes, None],
                      texts: list[ProcessText]) -> None:
        """Each open step keeps the texts of its lines, in line order."""
        steps = self.open_steps
        if len(step_ids) == 1:
            (step_id,) = step_ids
            step = steps.get(step_id)
            if step is None:
                step = steps[step_id] = OpenStep()
            step.texts += texts
            groups = [step]
        else:
            for step_id in step_ids:
                if step_id not in steps:
                    steps[step_id] = OpenStep()
            for step_id, node in zip(map(_step_id_of, found), texts):
                steps[step_id].texts.append(node)
            groups = [steps[s] for s in step_ids]
        for step in groups:
            if len(step.texts) > MAX_TEXTS:  # a long step: keep each text's last line
                step.texts = list(dict.fromkeys(step.texts[::-1]))[::-1]

    def _record_pending_debug_nodes(self, texts: list[ProcessText]) -> None:
        hits = self.debug_texts_pending.intersection(texts)
        if not hits:
            return
        for node in dict.fromkeys(texts):  # in line order: the first line's input wins
            if node in hits:
                self.debug_texts_pending.discard(node)
                if node.name not in self.debug_inputs:
                    self.record_debug_node(node.name, node.text)

    def fold_text_counts(self) -> None:
        """Add the counts of the lines counted per text to the per-node ones, each node's
        kernel the one of its last line."""
        last = self.text_last_seq
        for node in sorted(last, key=last.__getitem__):
            if node.kind == KIND_PLUMBING or node.kind == KIND_DEAD:
                continue
            n = self.text_counts[node]
            self.graph_executions[node.name] += n
            self.kernel_executions[node.kernel] += n
            if last[node] > self.name_seq.get(node.name, -1):
                self.graph_kernels[node.name] = node.pair
                self.name_seq[node.name] = last[node]
        self.text_counts.clear()
        last.clear()

    def take_process_lines(self, found: Sequence[tuple[bytes, ...]], nodes: list[ProcessText]) -> None:
        """Process node lines already parsed, (step id, text) and their texts, one by one."""
        for x, node in zip(found, nodes):
            step_id, text = x[0], x[1]
            kind = node.kind
            if kind == KIND_PLUMBING:
                continue
            if step_id == b"-1":
                # Step -1 is grappler's constant folding evaluating nodes while it
                # optimises the graph, not a run of the graph.
                self.folded.add(node.name)
                continue
            if kind == KIND_DEAD:
                continue  # an untaken branch: the node ran no kernel at this step
            self.node_ran(node.name, node.kernel, node.pair, step_id,
                          text if kind == KIND_DEBUG else None)

    def node_ran(self, name: bytes, kernel: bytes, pair: tuple[bytes, bytes], step_id: bytes,
                 debug_line: Optional[bytes]) -> None:
        """One execution of a graph node at a step, read on its own (``debug_line``: the
        text of a tfdbg debug node, whose input and target it names)."""
        self.graph_executions[name] += 1
        self.kernel_executions[kernel] += 1
        self.graph_kernels[name] = pair
        self.name_seq[name] = self.seq
        self.seq += 1
        step = self.open_steps.get(step_id)
        if step is None:
            if len(self.open_steps) >= MAX_OPEN_STEPS:
                self.file_step(next(iter(self.open_steps)))
            step = self.open_steps[step_id] = OpenStep()
        step.nodes[name] = pair
        if debug_line is not None:
            step.debug_lines[name] = debug_line
            if name not in self.debug_inputs:
                self.record_debug_node(name, debug_line)
            target = self.debug_targets.get(name)
            if target is not None:
                step.contexts.add(target[0])

    # -- tfdbg's debug nodes --------------------------------------------------------------
    def record_debug_node(self, name: bytes, line: bytes) -> None:
        """Record what a tfdbg debug node's line says: its first input (``...](input,
        ...)``), and from its attrs the dump op it reads, its mode, run id and buffer."""
        start, first = first_input(line)
        if start < 0:
            return
        if first:
            self.debug_inputs[name] = first
        op = log_format.DEBUG_OP_NAME.search(line, 0, start)
        ctx = log_format.DEBUG_CONTEXT.search(line, 0, start)
        if op is None or ctx is None:
            return
        slot = log_format.DEBUG_SLOT.search(line, 0, start)
        self.targets_version += 1
        self.debug_targets[name] = (ctx.group(1), op.group(1),
                                    int(slot.group(1)) if slot is not None else 0)
        mode = log_format.DEBUG_MODE.search(line, 0, start)
        if mode is not None:
            self.debug_modes[name] = int(mode.group(1))
        run_id = log_format.DEBUG_RUN_ID.search(line, 0, start)
        if run_id is not None:
            self.run_ids.add(run_id.group(1))
        if self.circular_buffer_size is None:
            size = log_format.DEBUG_BUFFER.search(line, 0, start)
            if size is not None:
                self.circular_buffer_size = int(size.group(1))

    def _own_debug_inputs(self, texts: Iterable[tuple[bytes, bytes]]) -> dict[bytes, bytes]:
        """Debug node -> the input its text names, for the (name, text) pairs of one step
        whose input is not the one ``debug_inputs`` keeps (the first line of the name)."""
        out: dict[bytes, bytes] = {}
        memo = self.input_of_text
        for name, text in texts:
            first = memo.get(text)
            if first is None:
                first = first_input(text)[1]
                if len(memo) >= MAX_TEXTS:
                    memo.clear()
                memo[text] = first
            if first and self.debug_inputs.get(name, first) != first:
                out[name] = first
        return out

    # -- filing a step --------------------------------------------------------------------
    def file_step(self, step_id: bytes) -> None:
        """File a step's nodes under the dump graphs whose debug nodes ran in it."""
        step = self.open_steps.pop(step_id)
        nodes, contexts = step.nodes, step.contexts
        inputs = self._own_debug_inputs(step.debug_lines.items()) if step.debug_lines else {}
        if step.texts:
            text_nodes, text_contexts, text_inputs = self._filing_of(step.texts)
            nodes = {**text_nodes, **nodes} if nodes else text_nodes
            contexts = contexts | text_contexts
            if text_inputs:
                inputs = {**text_inputs, **inputs}
        for context in contexts:
            self.context_kernels.setdefault(context, {}).update(nodes)
            if inputs:
                self.context_debug_inputs.setdefault(context, {}).update(inputs)

    def _filing_of(self, texts: list[ProcessText]) -> _Filing:
        """The nodes of a step's counted texts (the last line of a name wins), the dump
        graphs its debug nodes name and those debug nodes' inputs where they differ from
        ``debug_inputs``: the same for every step running these texts while the debug
        nodes' targets stay as they are."""
        distinct = frozenset(texts)
        got = self.filing_of_texts.get(distinct)
        if got is not None and got[0] == self.targets_version:
            return got[1], got[2], got[3]
        nodes, contexts, debug = self._nodes_of_texts(distinct, texts)
        if len(self.filing_of_texts) >= _MAX_FILINGS:
            self.filing_of_texts.clear()
        frozen = frozenset(contexts)
        inputs = self._own_debug_inputs(debug)
        self.filing_of_texts[distinct] = (self.targets_version, nodes, frozen, inputs)
        return nodes, frozen, inputs

    def _nodes_of_texts(self, distinct: frozenset[ProcessText], texts: list[ProcessText]) -> tuple[
            dict[bytes, tuple[bytes, bytes]], set[bytes], list[tuple[bytes, bytes]]]:
        """The nodes a step's texts ran (the last line of a name wins), the dump graphs its
        debug nodes name, and its debug nodes' (name, text)."""
        nodes: dict[bytes, tuple[bytes, bytes]] = {}
        contexts: set[bytes] = set()
        debug: list[tuple[bytes, bytes]] = []
        duplicate = False
        for node in distinct:
            if node.kind == KIND_PLUMBING or node.kind == KIND_DEAD:
                continue
            duplicate = duplicate or node.name in nodes
            nodes[node.name] = node.pair
            if node.kind == KIND_DEBUG:
                debug.append((node.name, node.text))
                target = self.debug_targets.get(node.name)
                if target is not None:
                    contexts.add(target[0])
        if duplicate:  # two texts of one name: the later line's kernel
            nodes = _last_line_nodes(texts)
        return nodes, contexts, debug

    def flush(self) -> None:
        """Finish what is open at the end of the reading: each thread's eager op counted,
        every step filed, the counts per text added to the per-node ones."""
        for tid in list(self.eager_ops):
            self.count_eager_op(self.eager_ops.pop(tid))
        for step_id in list(self.open_steps):
            self.file_step(step_id)
        self.fold_text_counts()
