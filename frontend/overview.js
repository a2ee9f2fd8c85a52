// The Op Mode tab's answer at a glance and overview card: run facts (TensorFlow,
// oneDNN, the CPU), the lower-bound note, shares, the mode x kernel matrix (with XLA as
// a mode of its own), unknown kernels with why, dtypes, devices, functions, primitives.
// Methods of App (views.js). In: the overview JSON. Out: DOM nodes, strings as text.

import {CLASSES, kindKey} from './colors.js';
import {api, failure, fmtInt, fmtNs, fmtNumbersIn, fmtPct, ofMode} from './data.js';
import {atLeast, breakable, el, kernelCell, message, rovingRows, section, swatch, verdict} from './dom.js';
import {V} from './vocab.js';

/** @typedef {import('./data.js').Overview} Overview */
/** @typedef {import('./data.js').ModeTotals} ModeTotals */
/** @typedef {import('./data.js').Row} Row */

/** @typedef {import('./views.js').App} App */
/**
 * What the overview keeps on the app: its elements (buildOverview) and the run's overview
 * once loaded (loadOverview; null while it loads or when it failed).
 * @typedef {{glanceBody: !HTMLElement, glanceTitle: !HTMLElement, overviewBody: !HTMLElement,
 *   overview: ?Overview}} OverviewFields
 */

/**
 * How the run was recorded (`tb-opmode record`'s evidence level), how its counts were
 * made where that is not one exact count per execution, and the note of a dump that
 * reads tensors (its fusions are not the job's): dt/dd pairs, none for a run made by hand.
 * @param {!Overview} o
 * @return {!Array<!HTMLElement>}
 */
function recordingFacts(o) {
  const out = [];
  const r = o.recording;
  if (r && r.evidence) {
    out.push(el('dt', {text: 'Recorded with'}),
        el('dd', {id: 'opm-recorded', text: `--evidence ${r.evidence} (${r.dump_mode || 'no dump'})`}));
  }
  if (r && r.command.length) {
    out.push(el('dt', {text: 'Command'}), el('dd', {id: 'opm-command'},
        el('code', {text: r.command.join(' ')}),
        el('span', {class: jobFailed(r) ? 'opm-job-failed' : 'opm-muted',
          text: ` — ${r.ended || 'its manifest does not say how it ended'}`})));
  }
  const graph = (o.count_basis || {}).graph || '';
  if (graph.startsWith('per call')) {
    out.push(el('dt', {text: 'Graph counts'}), el('dd', {id: 'opm-count-basis', text: graph}));
  }
  if (r && r.note) {
    out.push(el('dt', {text: 'Kernels'}), el('dd', {id: 'opm-fusion-note', class: 'opm-hint', text: r.note}));
  }
  return out;
}

/**
 * Whether a recorded job failed: a non-zero exit status, or a signal ended it.
 * @param {!import('./data.js').RecordingDoc} r
 * @return {boolean}
 */
function jobFailed(r) {
  return Boolean(r.signal) || (r.exit_status !== null && r.exit_status !== 0);
}

/**
 * The line over the overview of a run whose recorded job failed: its command and how it
 * ended (null for any other run).
 * @param {!Overview} o
 * @return {?HTMLElement}
 */
function failedJobNote(o) {
  const r = o.recording;
  if (!r || !r.command.length || !jobFailed(r)) return null;
  return el('div', {class: 'opm-message opm-message-warn', id: 'opm-job-failed', role: 'note'},
      el('strong', {text: 'The recorded job failed. '}), el('code', {text: r.command.join(' ')}),
      ` ${r.ended}: this run holds only what it wrote before it ended (see its stderr.log).`);
}

// `this` in each method is the App these methods are mixed into (views.js).
export const OverviewSection = /** @satisfies {ThisType<App>} */ ({
  buildOverview() {
    // The answer at a glance: kernels per mode of the oneDNN op types.
    this.glanceBody = el('div', {class: 'opm-glance'});
    this.glanceTitle = el('h2', {class: 'opm-card-title', text: 'At a glance'});
    this.root.append(el('section', {class: 'opm-card', id: 'opm-glance-card'},
        this.glanceTitle, this.glanceBody));

    // Overview.
    this.overviewBody = el('div', {class: 'opm-overview'});
    this.root.append(section('Overview', 'opm-overview', this.overviewBody));
  },

  async loadOverview() {
    const run = /** @type {string} */ (this.store.state.run);   // selectRun() chose it
    this.overview = null;
    let o;
    try {
      o = await api.overview(run);
    } catch (caught) {
      const err = failure(caught);
      this.overviewBody.replaceChildren(message(err.message, 'error'));
      this.glanceBody.replaceChildren();
      return;
    }
    if (run !== this.store.state.run) return;
    this.overview = o;
    this.renderGlance(o);
    this.overviewBody.replaceChildren(
        .../** @type {!Array<!HTMLElement>} */ (this.renderOverview(o).filter(Boolean)));
    this.overviewBody.dataset.run = run;   // which run the overview shows (for tests and tools)
  },

  /**
   * The answer first: per oneDNN op type, the kernel of each mode with its evidence.
   * @param {!Overview} o
   */
  renderGlance(o) {
    const onednn = o.onednn_state || V.ONEDNN_UNKNOWN;
    const g = o.glance || {rows: [], total: 0, basis: '', names: [], differs_total: 0, premises: []};
    // Always the same question, whatever the oneDNN state: what ran in both modes, and
    // whose kernel differs by mode.
    this.glanceTitle.textContent = 'At a glance: op types that ran both eagerly and in graphs';
    /** @type {{features?: ?Array<string>}} */
    const cpu = o.cpu || {};
    const head = el('div', {class: 'opm-glance-head'}, el('p', {class: 'opm-glance-facts'},
        el('span', {text: `TensorFlow ${o.tensorflow_version || '(version unknown)'} · oneDNN `}),
        el('strong', {class: `opm-onednn-${onednn}`, text: onednn}),
        el('span', {class: 'opm-muted', text: ` (${o.onednn_reason || 'no evidence either way'})`}),
        el('span', {text: ' · CPU: '}),
        cpu.features ? el('span', {class: 'opm-cpu-brief', text: cpu.features.join(' ')})
          : el('span', {class: 'opm-muted', text: 'instruction sets unknown (no TF start-up line)'}),
        (o.xla_functions || []).length ? el('span', {},
            ` · XLA: ${fmtInt(o.xla_functions.length)} function(s) compiled`) : null),
    this.lowerBoundNote(o, 'opm-glance-lower-bound'));
    const names = g.names || [];
    const both = el('p', {class: 'opm-glance-both', id: 'opm-glance-both'},
        el('strong', {text: `${fmtInt(g.total)} ran in both modes`}),
        names.length ? `: ${names.join(', ')}${g.total > names.length ? ', …' : ''}. ` : '. ',
        el('strong', {text: `${fmtInt(g.differs_total || 0)} ran a different kernel by mode`}),
        g.differs_total ? `: ${g.rows.filter((r) => r.kernel_differs).map((r) => r.op_type).join(', ')}.` : '.');
    const premises = (g.premises || []).length ? el('ul', {class: 'opm-glance-premises', id: 'opm-glance-premises'},
        g.premises.map((line) => el('li', {}, line.split('`').map((part, i) =>
          i % 2 ? el('code', {text: part}) : part)))) : null;
    head.append(both);
    if (premises) head.append(premises);
    if (!g.rows.length) {
      this.glanceBody.replaceChildren(head, el('p', {class: 'opm-muted',
        text: 'No op type ran both eagerly and in a graph.'}));
      return;
    }
    /**
     * @param {!Row} row
     * @param {string} mode
     */
    const cell = (row, mode) => el('td', {class: 'opm-glance-mode', 'data-mode': mode},
        ofMode(row, mode).executions
          ? [el('span', {class: 'opm-glance-count',
            text: `${atLeast(ofMode(row, mode))}${fmtInt(ofMode(row, mode).executions)}×`}),
          el('span', {class: 'opm-verdict', text: verdict(ofMode(row, mode))}),
          kernelCell(mode, ofMode(row, mode), true)]
          : el('span', {class: 'opm-none', text: `did not run ${mode === V.EAGER ? 'eagerly' : 'in a graph'}`}));
    const table = el('table', {class: 'opm-glance-table', id: 'opm-glance'},
        el('thead', {}, el('tr', {}, el('th', {scope: 'col', text: 'Op type'}),
            el('th', {scope: 'col', text: 'Eager: executions, kernel, evidence'}),
            el('th', {scope: 'col', text: 'Graph (tf.function): executions, kernel, evidence'}))),
        el('tbody', {}, g.rows.map((row) => el('tr', {'data-op': row.op_type, tabindex: -1,
          title: 'Click for the why, call sites and graphs',
          onclick: () => this.showOp(row.op_type),
          onkeydown: (/** @type {!KeyboardEvent} */ e) => { if (e.key === 'Enter') this.showOp(row.op_type); }},
        el('th', {scope: 'row', class: 'opm-op'}, el('span', {class: 'opm-op-name'}, breakable(row.op_type)),
            row.kernel_differs ? el('span', {class: 'opm-tag opm-tag-strong', title: row.kernel_differs_why,
              text: 'kernel differs'}) : null),
        cell(row, V.EAGER), cell(row, V.GRAPH)))));
    const more = g.total > g.rows.length ? el('p', {class: 'opm-muted',
      text: `and ${fmtInt(g.total - g.rows.length)} more in the op table below`}) : null;
    rovingRows(/** @type {!HTMLTableElement} */ (table).tBodies[0]);
    this.glanceBody.replaceChildren(.../** @type {!Array<!HTMLElement>} */ ([head, table, more].filter(Boolean)));
  },

  /**
   * A mode's oneDNN share of profiled kernel time (oneDNN and stock kernels), labelled.
   * @param {!Overview} o
   * @param {string} mode
   * @return {?HTMLElement}
   */
  onednnTimeShare(o, mode) {
    const time = (/** @type {string} */ kind) => {
      const cell = (o.kinds || []).find((c) => c.mode === mode && c.kind === kind);
      return (cell && cell.time_ns) || 0;
    };
    const onednn = time(V.KIND_ONEDNN);
    const all = onednn + time(V.KIND_STOCK);
    // A run without a profile has no window to be outside of (its time_ns is null).
    if (o.modes[mode].time_ns === null) {
      return el('span', {class: 'opm-muted', text: '; by time: no profile in this run'});
    }
    if (!all) return el('span', {class: 'opm-muted', text: '; by time: not in the profiled window'});
    if (!onednn && o.modes[mode].onednn_executions) {
      return el('span', {class: 'opm-muted', text: '; by time: its oneDNN executions were not in the profiled window'});
    }
    return el('span', {}, `; by time in the profiled window: ${fmtPct(onednn / all)} ` +
      `(${fmtNs(onednn)} of ${fmtNs(all)})`);
  },

  /**
   * @param {!Overview} o
   * @return {!Array<?HTMLElement>} the overview's parts; null where a part has nothing to say
   */
  renderOverview(o) {
    const states = [V.ONEDNN_ON, V.ONEDNN_OFF, V.ONEDNN_UNKNOWN];
    const onednn = states.includes(o.onednn_state) ? o.onednn_state
      : o.onednn_enabled === true ? V.ONEDNN_ON : o.onednn_enabled === false ? V.ONEDNN_OFF : V.ONEDNN_UNKNOWN;
    const reason = o.onednn_reason || o.onednn_source || 'no evidence either way';
    const facts = el('dl', {class: 'opm-facts'},
        el('dt', {text: 'TensorFlow'}), el('dd', {text: o.tensorflow_version || 'unknown'}),
        el('dt', {text: 'oneDNN'}), el('dd', {},
            el('strong', {class: `opm-onednn-${onednn}`, text: onednn}),
            el('span', {class: 'opm-muted', text: ` — how we know: ${reason}`})),
        el('dt', {text: 'CPU'}), el('dd', {id: 'opm-cpu'}, (o.cpu && o.cpu.features)
          ? [el('span', {class: 'opm-cpu-features'}, o.cpu.features.map((f, i) => [i ? ' ' : '', el('code', {text: f})])),
            el('span', {class: 'opm-muted', text: ` — from ${o.cpu.source}`})]
          : el('span', {class: 'opm-muted', text: (o.cpu && o.cpu.note) || 'unknown'})),
        el('dt', {text: 'Hosts'}), el('dd', {text: (o.hosts || []).join(', ') || '–'}),
        el('dt', {text: 'Counts from'}), el('dd', {text: o.counts_from || 'nothing readable'}),
        recordingFacts(o),
        el('dt', {text: 'Sources'}), el('dd', {},
            el('details', {class: 'opm-sources'},
                el('summary', {text: Object.entries(o.sources || {}).map(([kind, files]) =>
                  `${kind}: ${fmtInt(files.length)}`).join(' · ') || 'none'}),
                Object.entries(o.sources || {}).map(([kind, files]) => el('div', {class: 'opm-source'},
                    el('span', {class: 'opm-source-kind', text: `${kind}: `}),
                    el('span', {text: files.length ? files.join(', ') : 'none'}))))));

    const timeTitle = 'Op time in the profiled window (eager: EagerExecute time, including dispatch; ' +
      'graph: kernel compute time)';
    const outside = V.MODES.filter((m) => o.modes[m].time_outside_table_ns);
    const dump = o.dump;
    // Folded under the execution shares it qualifies: the caveat, not the figures, first.
    const dumpNote = dump && (dump.uncounted_total || dump.outside_table.length) ? el('details', {
      class: 'opm-hint opm-dump-coverage', id: 'opm-dump-coverage'},
    el('summary', {text: `Not counted by the dump: ${fmtInt(dump.uncounted_total +
      dump.outside_table.length)} op type(s) the profile or log saw run`}),
    `${dump.gap}. `,
    dump.uncounted_total ? `Graph executions of ${fmtInt(dump.uncounted_total)} op type(s) in the ` +
      `table are therefore 0 (${dump.uncounted_op_types.slice(0, 6).join(', ')}` +
      `${dump.uncounted_total > 6 ? ', …' : ''}), though the profile saw ` +
      `${fmtInt(dump.uncounted_profile_events)} of their graph events` +
      (dump.uncounted_log_executions ? ` and the log ${fmtInt(dump.uncounted_log_executions)} ` +
        'of their graph executions' : '') + '. ' : '',
    dump.outside_table.length ? `The dump has no row at all for ${dump.outside_table.slice(0, 5)
        .join(', ')}${dump.outside_table.length > 5 ? ', …' : ''} (graph ops the profile saw). ` : '',
    'The execution shares above cover what the dump counts.') : null;
    const execTitle = dump ? `Executions the dump counts (${dump.modes.join(', ') || 'mode unknown'}` +
      `: ${dump.records})` : 'Executions';
    const shares = el('div', {class: 'opm-shares'},
        this.shareBar(execTitle, o.modes, 'executions', 'share_of_executions', fmtInt),
        dumpNote,
        o.modes.eager.time_ns !== null ?
          this.shareBar(timeTitle, o.modes, 'time_ns', 'share_of_time', fmtNs) :
          el('p', {class: 'opm-muted', text: 'Op time: no profile in this run.'}),
        outside.length ? el('p', {class: 'opm-hint', id: 'opm-time-outside'},
            'Not in these totals nor in the table (the profile saw them, the dump did not count ' +
            'them): ', outside.map((m) => `${m} ${fmtNs(o.modes[m].time_outside_table_ns)} ` +
              `(${o.modes[m].outside_table.slice(0, 4).join(', ')}` +
              `${o.modes[m].outside_table.length > 4 ? ', …' : ''})`).join('; '), '.') : null,
        el('div', {class: 'opm-coverage'},
            el('h3', {text: 'oneDNN coverage'}),
            V.MODES.map((mode) => {
              const m = o.modes[mode];
              const notes = [];
              if (m.removed_executions) notes.push(`${fmtInt(m.removed_executions)} removed by grappler (no kernel)`);
              if (m.unknown_executions) notes.push(`kernel unknown for ${fmtInt(m.unknown_executions)}`);
              return el('p', {},
                  swatch(kindKey(mode, V.KIND_ONEDNN)),
                  el('strong', {text: `${mode}: `}),
                  `by executions: ${fmtPct(m.onednn_share_of_known)} (${fmtInt(m.onednn_executions)} ` +
                  `of ${fmtInt(m.kernel_known_executions)} with a known kernel ran oneDNN)`,
                  this.onednnTimeShare(o, mode),
                  notes.length ? el('span', {class: 'opm-muted', text: `; ${notes.join('; ')}`}) : null);
            })));

    const kinds = o.kinds || [];
    const kindCols = [[V.KIND_ONEDNN, 'oneDNN'], [V.KIND_STOCK, 'stock'],
      [V.KIND_REMOVED, 'no kernel (removed by grappler)'], [V.KIND_UNKNOWN, 'unknown kernel']];
    const matrix = el('table', {class: 'opm-matrix', id: 'opm-matrix'},
        el('caption', {text: 'Executions (and op time, where executions are) by mode and kernel'}),
        el('thead', {}, el('tr', {}, el('th', {text: 'mode'}),
            kindCols.map(([, label]) => el('th', {text: label})))),
        el('tbody', {}, V.MODES.map((mode) => el('tr', {'data-mode': mode},
            el('th', {scope: 'row', text: mode}),
            kindCols.map(([kind]) => {
              const cell = kinds.find((c) => c.mode === mode && c.kind === kind) ||
                {executions: 0, time_ns: null, fused_executions: 0};
              const key = kindKey(mode, kind);
              const showTime = cell.executions > 0 && kind !== V.KIND_REMOVED &&
                cell.time_ns !== null && cell.time_ns !== undefined;
              return el('td', {class: cell.executions ? '' : 'opm-zero', 'data-kind': kind,
                'data-executions': cell.executions},
              swatch(key), el('span', {class: 'opm-cell-label', text: CLASSES[key].label}),
              el('strong', {text: fmtInt(cell.executions)}),
              showTime ? el('span', {class: 'opm-muted', title: timeTitle,
                text: cell.time_ns ? ` · ${fmtNs(cell.time_ns)}` : ' · not in the profiled window'}) : null,
              cell.fused_executions ? el('div', {class: 'opm-cell-fused'}, swatch(key, true),
                  `${fmtInt(cell.fused_executions)} fused`) : null);
            }))), this.xlaRow(o, kindCols.length)));
    const unattributed = V.MODES.filter((m) => o.modes[m].time_unattributed_ns);
    const matrixNote = unattributed.length ? el('p', {class: 'opm-hint'},
        unattributed.map((m) => `${m}: ${fmtNs(o.modes[m].time_unattributed_ns)} of op time ` +
          'went to no kernel the counts name (e.g. the profile ran longer than the dump)').join('; ')) : null;

    // As the Functions card counts them: Python functions, their traces (one graph each)
    // and calls from Python; the graphs called that are no trace of theirs, apart.
    const fns = o.tf_functions;
    const plural = (/** @type {number} */ n, /** @type {string} */ word) =>
      `${fmtInt(n)} ${word}${n === 1 ? '' : 's'}`;
    const fnCounts = `${plural(fns.python_functions, 'Python function')}, ` +
      `${plural(fns.traces, 'trace')}, ${plural(fns.calls, 'call')} from Python`;
    const functions = el('div', {class: 'opm-functions', id: 'opm-overview-functions'},
        el('p', {class: 'opm-hint', text: 'As the Functions card counts them: each Python ' +
          'function run as a tf.function, its traces (one graph each) and its calls from Python ' +
          '(a function called only inside another tf.function has none).'}),
        fns.functions.length ? el('ul', {},
            fns.functions.slice(0, 12).map((f) => el('li', {},
                el('strong', {text: f.name}), el('span', {class: 'opm-muted',
                  text: ` · ${plural(f.traces, 'trace')} · ` +
                    (f.nested ? 'called inside another tf.function' : plural(f.calls, 'call'))}))))
          : el('p', {class: 'opm-muted', text: 'none recorded'}),
        fns.functions.length > 12 ? el('p', {class: 'opm-muted',
          text: `and ${fmtInt(fns.python_functions - 12)} more`}) : null,
        fns.other_graphs.length ? el('p', {class: 'opm-muted', id: 'opm-other-graphs'},
            `Also called: ${plural(fns.other_graphs.length, 'function graph')} TensorFlow made itself, no ` +
            'tf.function of yours (not in the Functions card): ',
            fns.other_graphs.slice(0, 6).map((f, i) => [i ? ', ' : '', el('code', {text: f.name}),
              ` ×${fmtInt(f.calls)}`])) : null);

    const parts = [failedJobNote(o), this.lowerBoundNote(o, 'opm-lower-bound'),
      el('div', {class: 'opm-overview-grid'}, facts, shares), matrix, matrixNote,
      this.unknownsBlock(o), this.dtypesBlock(o), this.devicesBlock(o),
      el('details', {class: 'opm-more'}, el('summary', {text: `tf.functions: ${fnCounts}`}),
          functions)];
    if (o.onednn_verbose && o.onednn_verbose.primitives.length) {
      const v = o.onednn_verbose;
      parts.push(el('details', {class: 'opm-verbose opm-more'},
          el('summary', {text: `oneDNN primitives in the log (ONEDNN_VERBOSE): ` +
            `${fmtInt(v.primitives_total)} kind(s)`}),
          v.note ? el('p', {class: 'opm-muted', text: v.note}) : null,
          el('table', {class: 'opm-small-table'},
              el('thead', {}, el('tr', {}, ['kind', 'implementation', 'prop kind'].map((h) =>
                el('th', {text: h})), el('th', {class: 'opm-num', text: 'count'}),
              el('th', {class: 'opm-num', text: 'time'}))),
              el('tbody', {}, v.primitives.map((p) => el('tr', {},
                  el('td', {text: p.kind}), el('td', {}, el('code', {text: p.implementation})),
                  el('td', {text: p.prop_kind || ''}),
                  el('td', {class: 'opm-num', text: fmtInt(p.count)}),
                  el('td', {class: 'opm-num',
                    text: p.time_ms !== undefined ? fmtNs(p.time_ms * 1e6) : '–'})))))));
    }
    if (o.warnings_total) {
      parts.push(el('details', {class: 'opm-warnings opm-more'},
          el('summary', {text: `${fmtInt(o.warnings_total)} warning(s) while reading`}),
          el('ul', {}, o.warnings.map((w) => el('li', {text: w})))));
    }
    return parts;
  },

  /**
   * "Counts are a lower bound" when the dump's circular buffer dropped older records.
   * @param {!Overview} o
   * @param {string} id
   * @return {?HTMLElement}
   */
  lowerBoundNote(o, id) {
    const cut = o.lower_bound || {};
    const modes = V.MODES.filter((m) => cut[m]);
    if (!modes.length) return null;
    const what = modes.map((m) => `${fmtInt(cut[m].records)} ${m === V.EAGER
      ? 'eager execution' : 'graph execution trace'} records`).join(' and ');
    const first = cut[modes[0]];
    return el('div', {class: 'opm-message opm-message-warn opm-lower-bound', id, role: 'note',
      'data-modes': modes.join(',')},
    el('strong', {text: 'Counts are a lower bound. '}),
    `The dump's circular buffer kept only the last ${what} (${first.how}): ${modes.join(' and ')} ` +
      'counts (marked ≥) leave out what ran before. ',
    el('span', {}, el('strong', {text: 'What to do: '}), `${first.fix}.`));
  },

  /**
   * XLA-compiled functions: a mode of their own (graph, compiled by XLA), with no op rows.
   * @param {!Overview} o
   * @param {number} cols the matrix' kernel columns
   * @return {?HTMLElement}
   */
  xlaRow(o, cols) {
    const xla = o.xla_functions || [];
    if (!xla.length) return null;
    const launches = xla.reduce((n, f) => n + f.launches, 0);
    return el('tr', {'data-mode': 'xla', id: 'opm-xla'},
        el('th', {scope: 'row'}, 'XLA', el('div', {class: 'opm-muted opm-xla-sub', text: 'graph, compiled by XLA'})),
        el('td', {colspan: cols, class: 'opm-xla-cell'},
            el('strong', {text: `${fmtInt(xla.length)} function(s), ${fmtInt(launches)} launch(es) in the log: `}),
            xla.slice(0, 6).map((f, i) => el('span', {}, i ? ', ' : '', el('code', {text: f.name}),
                ` ×${fmtInt(f.launches)}`)),
            el('p', {class: 'opm-note', text: fmtNumbersIn(xla[0].note)})));
  },

  /**
   * Unknown kernels grouped by why, each with how to find out.
   * @param {!Overview} o
   * @return {?HTMLElement}
   */
  unknownsBlock(o) {
    const u = o.unknowns;
    if (!u || !u.executions) return null;
    /** @param {!import('./data.js').UnknownGroup} g */
    const group = (g) => el('li', {class: 'opm-unknown-group'},
        el('div', {}, el('strong', {text: g.what === 'whether it ran'
          ? 'Unknown whether it ran, because ' : 'Kernel unknown, because '}), fmtNumbersIn(g.why), '.'),
        g.how ? el('div', {}, el('strong', {text: 'How to find out: '}), g.how) : null,
        el('div', {class: 'opm-muted'}, `${fmtInt(g.executions)} execution(s): `, opsText(g)));
    /** @param {!import('./data.js').UnknownGroup} g */
    const opsText = (g) => g.ops.slice(0, 6).map((op) => `${op.op_type} (${op.mode} ×${fmtInt(op.executions)})`)
        .join(', ') + (g.ops.length > 6 ? ', …' : '');
    return el('div', {class: 'opm-unknowns', id: 'opm-unknowns'},
        el('h3', {}, swatch(V.KIND_UNKNOWN), ` Kernel unknown for ${fmtInt(u.executions)} execution(s)`),
        el('ul', {}, u.groups.slice(0, 3).map(group)),
        u.groups.length > 3 ? el('details', {class: 'opm-more'},
            el('summary', {text: `${fmtInt(u.groups.length - 3)} more reason(s)`}),
            el('ul', {}, u.groups.slice(3).map(group))) : null,
        u.without_reason ? el('ul', {}, el('li', {class: 'opm-unknown-group'},
            el('div', {}, el('strong', {text: 'Kernel unknown, because '}),
                `${u.without_reason_how.split(':')[0]} (${fmtInt(u.without_reason)} execution(s)).`),
            el('div', {}, el('strong', {text: 'How to find out: '}),
                u.without_reason_how.split(': ').slice(1).join(': ')))) : null,
        u.groups_total > u.groups.length ? el('p', {class: 'opm-muted',
          text: `and ${fmtInt(u.groups_total - u.groups.length)} more reason(s)`}) : null);
  },

  /**
   * Executions by dtype, per mode; mixed precision (float16/bfloat16) said first.
   * @param {!Overview} o
   * @return {?HTMLElement}
   */
  dtypesBlock(o) {
    const d = o.dtypes;
    if (!d || !d.recorded) return null;
    /** @param {string} mode */
    const line = (mode) => el('p', {'data-mode': mode}, el('strong', {text: `${mode}: `}),
        d.modes[mode].length ? d.modes[mode].map((e, i) => el('span', {
          class: ['float16', 'bfloat16'].includes(e.label) ? 'opm-dtype opm-dtype-low' : 'opm-dtype'},
        i ? ' · ' : '', `${e.label} ×${fmtInt(e.executions)}`)) : '–');
    return el('div', {class: 'opm-dtype-totals', id: 'opm-dtypes'},
        el('h3', {text: 'Executions by dtype (as the dump records them)'}),
        d.low_precision.length ? el('p', {class: 'opm-mixed'},
            el('strong', {text: `Mixed precision: ${d.low_precision.join(', ')}`}),
            ` in ${fmtInt(d.low_precision_op_types)} op type(s) beside float32 (the kernel can ` +
            'differ by dtype: see each op\u2019s dtype split; filter the table with “mixed precision”).') : null,
        line(V.EAGER), line(V.GRAPH));
  },

  /**
   * Executions per device (MirroredStrategy replicas), where the dump's records name several.
   * @param {!Overview} o
   * @return {?HTMLElement}
   */
  devicesBlock(o) {
    const devices = o.devices || [];
    if (!devices.length) return null;
    return el('div', {class: 'opm-device-totals', id: 'opm-devices'},
        el('h3', {text: 'Executions per device (the device each record names)'}),
        el('table', {class: 'opm-small-table'},
            el('thead', {}, el('tr', {}, el('th', {scope: 'col', text: 'device'}),
                el('th', {scope: 'col', class: 'opm-num', text: V.EAGER}),
                el('th', {scope: 'col', class: 'opm-num', text: V.GRAPH}))),
            el('tbody', {}, devices.map((d) => el('tr', {'data-device': d.device},
                el('th', {scope: 'row'}, el('code', {text: d.device})),
                el('td', {class: 'opm-num', text: fmtInt(d.eager)}),
                el('td', {class: 'opm-num', text: fmtInt(d.graph)}))))),
        (o.devices_none && o.devices_none.eager) ? el('p', {class: 'opm-hint',
          text: `${fmtInt(o.devices_none.eager)} eager execution(s) of ops without outputs name no device.`}) : null);
  },

  /**
   * A bar of the modes' shares of executions or of time, with the figures below it.
   * @param {string} title
   * @param {!Object<string, ModeTotals>} modes
   * @param {'executions'|'time_ns'} field
   * @param {'share_of_executions'|'share_of_time'} shareField
   * @param {function(?number): string} fmt
   * @return {!HTMLElement}
   */
  shareBar(title, modes, field, shareField, fmt) {
    const bar = el('div', {class: 'opm-sharebar', role: 'img',
      'aria-label': `${title}: eager ${fmtPct(modes.eager[shareField])}, graph ${fmtPct(modes.graph[shareField])}`});
    for (const mode of V.MODES) {
      const share = modes[mode][shareField] || 0;
      const part = el('span', {class: `opm-share opm-share-${mode}`,
        text: share >= 0.12 ? `${mode} ${fmtPct(share)}` : ''});
      part.style.flexGrow = String(share);
      part.hidden = !share;  // a mode with none takes no room (a run of nothing: an empty bar)
      bar.append(part);
    }
    return el('div', {class: 'opm-share-block', 'data-field': field},
        el('h3', {text: title}), bar,
        el('div', {class: 'opm-share-legend'},
            V.MODES.map((mode) => el('span', {'data-mode': mode,
              'data-value': modes[mode][field] === null ? '' : modes[mode][field]},
            el('strong', {text: `${mode} `}),
            `${fmt(modes[mode][field])} (${fmtPct(modes[mode][shareField])})`))));
  },
});
