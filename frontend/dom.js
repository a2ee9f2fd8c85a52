// Widgets the Op Mode tab's sections share: the element helper, names that wrap at "/"
// and "_", colour swatches, kernel chips and cells, evidence badges, verdicts, the dtype and
// device lines, one-tab-stop tables, cards and messages.
//
// In: the server's JSON for one kernel, mode or row. Out: DOM nodes; strings from the
// user's files are always text nodes, never HTML.

import {CLASSES, classKey, kernelKind, kindKey} from './colors.js';
import {fmtInt, fmtNumbersIn} from './data.js';
import {V} from './vocab.js';

/** @typedef {import('./data.js').Kernel} Kernel */
/** @typedef {import('./data.js').ModeStats} ModeStats */
/** @typedef {import('./data.js').Uncounted} Uncounted */

/**
 * Create an element. Strings among the children become text nodes.
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {!Object<string, *>=} props class, text, on<event>, dataset, or attributes
 * @param {...*} children nodes, strings, numbers, arrays of them; null and false are skipped
 * @return {!HTMLElementTagNameMap[K]}
 */
export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'class') node.className = value;
    else if (key === 'text') node.textContent = String(value);
    else if (key === 'dataset') Object.assign(node.dataset, value);
    else if (key.startsWith('on') && typeof value === 'function') {
      node.addEventListener(key.slice(2), value);
    } else if (value === true) node.setAttribute(key, '');
    else node.setAttribute(key, String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

/**
 * An op, kernel or node name as text that may wrap after "/" and "_" and between the
 * words of a CamelCase name (a <wbr> there): TensorFlow's names are one "word" of path
 * parts and CamelCase words (`_MklNativeConv2DBackpropFilterWithBias`), and a column as
 * wide as the longest would push the op table past its box.
 * @param {string} name
 * @return {!Array<(string|!HTMLElement)>}
 */
export function breakable(name) {
  const out = [];
  for (const part of String(name).split(/(?<=[/_])|(?<=[a-z])(?=[A-Z])/)) {
    if (out.length) out.push(document.createElement('wbr'));
    out.push(part);
  }
  return out;
}

/**
 * The colour swatch of a legend key (CLASSES), with the fused mark when ``fused``.
 * @param {string} key
 * @param {boolean=} fused
 * @return {!HTMLElement}
 */
export function swatch(key, fused = false) {
  const entry = CLASSES[key] || CLASSES[V.KIND_UNKNOWN];
  const node = el('span', {class: `opm-swatch opm-swatch-${key}` + (fused ? ' opm-fused-mark' : ''),
    'aria-hidden': 'true'});
  node.style.background = entry.color;
  return node;
}

/**
 * What each evidence word (V.EVIDENCE) means, for its badge's tooltip.
 * @param {string} evidence
 * @return {string}
 */
export function evidenceTitle(evidence) {
  return {
    [V.LOG]: 'named by the TensorFlow log (Instantiating kernel / Process node)',
    [V.PROFILE]: 'named by a profiler event <node>:<kernel>',
    [V.INFERRED]: 'inferred from rules, not observed',
  }[evidence] || evidence;
}

/**
 * @param {string} evidence
 * @return {!HTMLElement}
 */
export function evidenceBadge(evidence) {
  const title = evidenceTitle(evidence);
  return el('span', {class: `opm-badge opm-ev-${evidence}`, title, text: evidence});
}

/**
 * The words of a kernel's kind next to its name.
 * @param {string} kind one of V.KERNEL_KINDS
 * @return {string}
 */
export function kindWord(kind) {
  return {[V.KIND_ONEDNN]: 'oneDNN', [V.KIND_STOCK]: 'stock',
    [V.KIND_REMOVED]: 'no kernel (removed by grappler)', [V.KIND_UNKNOWN]: 'unknown'}[kind] || kind;
}

/**
 * A kernel's notes, and what it was fused into.
 * @param {!Kernel} kernel
 * @return {!Array<string>}
 */
export function kernelNotes(kernel) {
  const notes = [...(kernel.notes || [])];
  if (kernel.fused_into && kernel.fused_into.length) {
    notes.push(`fused into ${kernel.fused_into.slice(0, 3).join(', ')}`);
  }
  return notes;
}

/**
 * A kernel chip: colour swatch, name, oneDNN/stock word, fused tag, evidence badge.
 * @param {string} mode one of V.MODES
 * @param {!Kernel} kernel
 * @param {boolean} showCount
 * @return {!HTMLElement}
 */
export function kernelChip(mode, kernel, showCount) {
  const kind = kernelKind(kernel);
  const key = classKey(mode, kernel);
  const notes = kernelNotes(kernel);
  const removed = kind === V.KIND_REMOVED;
  const unknown = kind === V.KIND_UNKNOWN;
  return el('span', {class: `opm-chip opm-chip-${key}` + (kernel.fused ? ' opm-chip-fused' : ''),
    title: [removed || unknown ? kindWord(kind) : `${kernel.name}: ${kindWord(kind)}`,
      ...notes].join('\n'), 'data-kind': kind},
  // The swatch and the name keep together on one line; the words after them may wrap.
  el('span', {class: 'opm-chip-head'}, swatch(key, kernel.fused),
      removed ? null : el('span', {class: 'opm-kernel-name'}, unknown ? 'kernel ?' : breakable(kernel.name))),
  el('span', {class: `opm-kind opm-kind-${kind}`, text: kindWord(kind)}),
  kernel.fused ? el('span', {class: 'opm-tag opm-tag-fused', text: 'fused'}) : null,
  kernel.folded ? el('span', {class: 'opm-tag', title: 'constant-folded by grappler',
    text: 'folded'}) : null,
  evidenceBadge(kernel.evidence),
  showCount ? el('span', {class: 'opm-count', text: `×${fmtInt(kernel.executions)}`}) : null);
}

/**
 * The chip of executions no evidence names the kernel of (with their count, if not 0).
 * @param {number} count
 * @return {!HTMLElement}
 */
export function unknownChip(count) {
  return el('span', {class: `opm-chip opm-chip-${V.KIND_UNKNOWN}`, 'data-kind': V.KIND_UNKNOWN,
    title: 'executed, but no log line or profiler event names the kernel'},
  swatch(V.KIND_UNKNOWN), el('span', {class: 'opm-kernel-name', text: 'kernel ?'}),
  el('span', {class: `opm-kind opm-kind-${V.KIND_UNKNOWN}`, text: kindWord(V.KIND_UNKNOWN)}),
  count ? el('span', {class: 'opm-count', text: `×${fmtInt(count)}`}) : null);
}

/**
 * A mode's kernels as chips, and a chip for the executions of no known kernel.
 * @param {string} mode one of V.MODES
 * @param {!ModeStats} stats
 * @param {boolean=} alwaysCount
 * @return {!HTMLElement}
 */
export function kernelCell(mode, stats, alwaysCount = false) {
  if (!stats.executions && !stats.kernels.length) return el('span', {class: 'opm-none', text: '–'});
  const known = stats.kernels.reduce((n, k) => n + k.executions, 0);
  const missing = Math.max(0, stats.executions - known);
  const many = stats.kernels.length > 1 || (missing > 0 && stats.kernels.length > 0);
  const chips = stats.kernels.map((k) => kernelChip(mode, k, alwaysCount || many));
  if (!stats.kernels.length || known < stats.executions * 0.5) {
    chips.push(unknownChip(alwaysCount || many ? missing : 0));
  }
  return el('div', {class: 'opm-chips'}, chips);
}

/**
 * A graph op the dump did not count (its tensor_debug_mode records no output of it)
 * though the profile or the log saw it run: what they saw, and why the dump is silent.
 * @param {!Uncounted} u
 * @param {boolean=} withNote
 * @return {!HTMLElement}
 */
export function uncountedCell(u, withNote = true) {
  return el('div', {class: 'opm-uncounted'},
      el('div', {class: 'opm-chips'}, u.kernels.map((k) => el('span', {
        class: `opm-chip opm-chip-graph_${k.kind}`, 'data-kind': k.kind,
        title: `${k.name}: ${kindWord(k.kind)}, seen in the profile`},
      el('span', {class: 'opm-chip-head'}, swatch(kindKey(V.GRAPH, k.kind)),
          el('span', {class: 'opm-kernel-name'}, breakable(k.name))),
      el('span', {class: `opm-kind opm-kind-${k.kind}`, text: kindWord(k.kind)}),
      evidenceBadge(V.PROFILE),
      el('span', {class: 'opm-count', text: `×${fmtInt(k.events)} events`})))),
      withNote ? el('p', {class: 'opm-note opm-uncounted-note', text: fmtNumbersIn(u.note)}) : null);
}

/**
 * oneDNN, stock, partly oneDNN, or no kernel: the verdict of a mode in words.
 * @param {!ModeStats} stats
 * @return {string}
 */
export function verdict(stats) {
  const ran = stats.kernels.filter((k) => [V.KIND_ONEDNN, V.KIND_STOCK].includes(kernelKind(k)));
  const dnn = ran.filter((k) => kernelKind(k) === V.KIND_ONEDNN).reduce((n, k) => n + k.executions, 0);
  const all = ran.reduce((n, k) => n + k.executions, 0);
  if (!all) {
    return stats.kernels.some((k) => kernelKind(k) === V.KIND_REMOVED) ? 'no kernel ran' : 'kernel unknown';
  }
  if (dnn === all) return 'oneDNN';
  if (!dnn) return 'not oneDNN (stock)';
  return `partly oneDNN (${fmtInt(dnn)} of ${fmtInt(all)})`;
}

/**
 * "≥ " where the dump's circular buffer dropped older records: the count is a floor.
 * @param {?ModeStats|undefined} stats
 * @return {string}
 */
export function atLeast(stats) {
  return stats && stats.lower_bound ? '≥ ' : '';
}

/**
 * Executions per dtype the dump recorded (mixed precision: float16/bfloat16 beside
 * float32), each with the kernels it ran in the title.
 * @param {?ModeStats|undefined} stats
 * @return {?HTMLElement}
 */
export function dtypeLine(stats) {
  const split = (stats && stats.dtypes) || [];
  if (!split.length) return null;
  return el('div', {class: 'opm-dtypes', 'data-dtypes': split.map((e) => e.label).join(',')},
      el('span', {class: 'opm-dtypes-label', text: 'dtype: '}),
      split.map((e, i) => el('span', {class: 'opm-dtype' + (e.low_precision ? ' opm-dtype-low' : ''),
        'data-dtype': e.label,
        title: `${e.label}: ${e.kernels.map((k) => `${k.name} ×${fmtInt(k.executions)}`).join(', ')}`},
      i ? ' · ' : '', `${e.label} ×${fmtInt(e.executions)}`)));
}

/**
 * Executions per device (MirroredStrategy replicas), in the order of the run's devices.
 * @param {?ModeStats|undefined} stats
 * @param {!Array<string>} devices
 * @return {?HTMLElement}
 */
export function deviceLine(stats, devices) {
  const per = (stats && stats.devices) || null;
  if (!per || !devices.length) return null;
  return el('div', {class: 'opm-devices-line'},
      el('span', {class: 'opm-dtypes-label', text: 'per device: '}),
      devices.filter((d) => per[d]).map((d, i) => el('span', {'data-device': d},
          i ? ' · ' : '', `${d} ×${fmtInt(per[d])}`)));
}

/**
 * One tab stop for a table's rows: the current row has tabindex 0, the others -1;
 * ArrowUp/ArrowDown, Home and End move between them, Enter opens one (the row's own
 * handler). Keeps 50 rows from being 50 tab stops before the timeline.
 * @param {!HTMLElement} tbody
 */
export function rovingRows(tbody) {
  const rows = () => [...tbody.querySelectorAll('tr[data-op]')].map((r) => /** @type {!HTMLElement} */ (r));
  const all = rows();
  if (!all.length) return;
  const current = all.find((r) => r.classList.contains('opm-selected')) || all[0];
  for (const r of all) r.tabIndex = r === current ? 0 : -1;
  if (tbody.dataset.roving) return;
  tbody.dataset.roving = '1';
  tbody.addEventListener('keydown', (e) => {
    const list = rows();
    const at = list.indexOf(/** @type {!HTMLElement} */ (/** @type {!Element} */ (e.target).closest('tr[data-op]')));
    if (at < 0) return;
    const to = {ArrowDown: at + 1, ArrowUp: at - 1, Home: 0, End: list.length - 1}[e.key];
    if (to === undefined) return;
    e.preventDefault();
    const next = list[Math.max(0, Math.min(list.length - 1, to))];
    for (const r of list) r.tabIndex = r === next ? 0 : -1;
    next.focus();
  });
  tbody.addEventListener('focusin', (e) => {
    const row = /** @type {!Element} */ (e.target).closest('tr[data-op]');
    if (!row) return;
    for (const r of rows()) r.tabIndex = r === row ? 0 : -1;
  });
}

/**
 * A card: a titled <section>.
 * @param {string} title
 * @param {string} id
 * @param {...*} children as el() takes them
 * @return {!HTMLElement}
 */
export function section(title, id, ...children) {
  return el('section', {class: 'opm-card', id},
      el('h2', {class: 'opm-card-title', text: title}), ...children);
}

/**
 * A message: info, loading, empty, warn or error (an alert).
 * @param {string} text
 * @param {string=} kind
 * @return {!HTMLElement}
 */
export function message(text, kind = 'info') {
  return el('div', {class: `opm-message opm-message-${kind}`, role: kind === 'error' ? 'alert' : null,
    text});
}
