// The Functions section: the trace ledger of the run (tab/functions.functions), one row
// per Python function run as a tf.function: traces, calls, tracing time, why it traced
// again and what to change; a row opens onto each trace's arguments and what changed.
//
// In: a FunctionsPayload (data.js). Out: DOM nodes. Every string from the run (names,
// paths, graph names, reasons) is inserted as text, never as HTML.

import {api, failure, fmtInt} from './data.js';
import {el, message, section} from './dom.js';
import {V} from './vocab.js';

/** @typedef {import('./views.js').App} App */
/** @typedef {import('./data.js').TfFunction} TfFunction */
/** @typedef {import('./data.js').TraceDoc} TraceDoc */

/**
 * What the section keeps on the app: its body (buildFunctions).
 * @typedef {{functionsBody: !HTMLElement}} FunctionsFields
 */

/**
 * Seconds of tracing in words: the profile's, or at least the op creations' span.
 * @param {?number} s
 * @param {string} from
 * @return {string}
 */
function tracing(s, from) {
  if (s === null || s === undefined) return V.NOT_RECORDED;
  const ms = `${(s * 1e3).toFixed(1)} ms`;
  return from === 'op_creations' ? `≥ ${ms}` : ms;
}

/**
 * @param {string} location
 * @return {string}
 */
function shortPlace(location) {
  const cut = Math.max(location.lastIndexOf('/'), location.lastIndexOf('\\'));
  return cut >= 0 ? location.slice(cut + 1) : location;
}

/**
 * @param {!Object<string, unknown>} a
 * @return {string}
 */
function argText(a) {
  if (a.kind === 'python') {
    // the value as TF's key printed it, where its log line was read
    return a.value === undefined || a.value === V.NOT_RECORDED ? `${a.name}: a Python value` :
      `${a.name} = ${String(a.value)}`;
  }
  const shape = Array.isArray(a.shape) ?
    `[${a.shape.map((d) => (d === null ? 'None' : String(d))).join(', ')}]` : String(a.shape);
  // one "not recorded" where the dump recorded neither dtype nor shape (as the CLI says it)
  return shape === a.dtype ? `${a.name}: ${shape}` : `${a.name}: ${a.dtype} ${shape}`;
}

/**
 * @param {!TraceDoc} t
 * @return {string}
 */
function changedText(t) {
  if (!t.changed.length) return t.note || 'first trace';
  return t.changed.map((c) => {
    let words = String(c.cause) + (c.arg ? ` of ${c.arg}` : '');
    if (c.dim !== undefined && c.dim !== null) words += ` (dimension ${c.dim})`;
    if (c.before !== undefined && c.after !== undefined) words += `: ${JSON.stringify(c.before)} → ${JSON.stringify(c.after)}`;
    if (c.cause === 'unknown' && c.why) words += `: ${c.why}`;
    return words;
  }).join('; ') + (t.note ? ` (${t.note})` : '');  // which earlier trace the causes are told against
}

/**
 * A trace's graph name; a button that filters the op table to its op types where the
 * run's dump holds its graph, and the timeline to its calls.
 * @param {!TraceDoc} t
 * @param {function(string, string): void} showGraph
 * @return {!HTMLElement}
 */
function traceName(t, showGraph) {
  const name = el('code', {text: t.graph});
  if (!t.graph_id) return name;
  return el('button', {type: 'button', class: 'opm-link opm-trace-graph', 'data-graph': t.graph_id,
    title: 'Show only the op types of this trace in the op table, and its calls in the timeline',
    onclick: () => showGraph(t.graph_id, t.graph)}, name);
}

/**
 * @param {!TfFunction} f
 * @param {function(string, string): void} showGraph
 * @return {!HTMLElement}
 */
function traceTable(f, showGraph) {
  const head = el('tr', {}, ['Trace', 'Calls', 'Called from', 'Tracing', 'Arguments', 'What changed']
      .map((h) => el('th', {text: h})));
  const rows = f.trace_list.map((t) => el('tr', {},
      el('td', {}, traceName(t, showGraph)),
      el('td', {class: 'opm-num', text: fmtInt(t.calls)}),
      el('td', {text: t.call_sites.map(shortPlace).join(', ') || '—'}),
      el('td', {class: 'opm-num', text: tracing(t.tracing_s, t.tracing_from)}),
      el('td', {text: t.args.map(argText).join(', ') || 'none'}),
      el('td', {text: changedText(t)})));
  const more = f.traces > f.trace_list.length ?
    el('p', {class: 'opm-muted', text: `and ${fmtInt(f.traces - f.trace_list.length)} more traces`}) : null;
  return el('div', {class: 'opm-traces'}, el('table', {class: 'opm-table'}, el('thead', {}, head),
      el('tbody', {}, rows)), more);
}

/**
 * @param {!TfFunction} f
 * @param {function(string, string): void} showGraph
 * @return {!HTMLElement}
 */
function functionBlock(f, showGraph) {
  const causes = Object.entries(f.causes).map(([k, n]) => `${k} ×${n}`).join(', ');
  const calls = f.nested ? 'called inside another tf.function' : `${fmtInt(f.calls)} calls`;
  const objects = f.objects > 1 ? ` (${fmtInt(f.objects)} tf.function objects)` : '';
  const summary = el('summary', {},
      el('strong', {text: f.name}),
      el('span', {class: 'opm-muted', text: ` ${shortPlace(f.location)}`}),
      el('span', {text: ` · ${fmtInt(f.traces)} trace${f.traces === 1 ? '' : 's'}${objects} · ${calls}` +
        ` · tracing ${tracing(f.tracing_s, f.tracing_from)}`}),
      causes ? el('span', {class: 'opm-fn-causes', text: ` · ${causes}`}) : null);
  const advice = f.advice.length ? el('ul', {class: 'opm-fn-advice'},
      f.advice.map((a) => el('li', {text: a}))) : null;
  return el('details', {class: 'opm-fn', dataset: {python: f.python_name}}, summary, advice,
      el('p', {class: 'opm-muted', text: f.location}), traceTable(f, showGraph));
}

// `this` in each method is the App these methods are mixed into (views.js).
export const FunctionsSection = /** @satisfies {ThisType<App>} */ ({
  buildFunctions() {
    this.functionsBody = el('div', {class: 'opm-functions-ledger'});
    this.root.append(section('Functions', 'opm-functions-card', this.functionsBody));
  },

  async loadFunctions() {
    const run = /** @type {string} */ (this.store.state.run);
    let payload;
    try {
      payload = await api.functions(run);
    } catch (caught) {
      this.functionsBody.replaceChildren(message(failure(caught).message, 'error'));
      return;
    }
    if (run !== this.store.state.run) return;
    const hint = el('p', {class: 'opm-hint', text: 'Each Python function run as a tf.function: ' +
      'its traces (one graph each), its calls, the time spent tracing, why it traced again ' +
      '(shape, dtype, python_value, new_function_object or unknown) and what to change. ' +
      'Open one for its traces; a trace\u2019s name shows only its op types in the op table.'});
    this.functionsBody.replaceChildren(hint, ...(payload.functions.length ?
      payload.functions.map((f) => functionBlock(f, (id, name) => this.showGraph(id, name))) :
      [message(payload.empty, 'empty')]),
    payload.total > payload.functions.length ?
      el('p', {class: 'opm-muted', text: `and ${fmtInt(payload.total - payload.functions.length)} more`}) : '');
    this.functionsBody.dataset.run = run;
  },
});
