// The Op Mode tab's comparison of two runs: the run pickers (never A = B) and what
// changed per op type. Methods of App (views.js). In: the compare route's JSON.
// Out: DOM nodes, strings as text.

import {classKey} from './colors.js';
import {api, failure, fmtInt, fmtNs} from './data.js';
import {el, message, section, swatch} from './dom.js';
import {V} from './vocab.js';

/** @typedef {import('./data.js').RunEntry} RunEntry */
/** @typedef {import('./data.js').CompareSide} CompareSide */
/** @typedef {import('./data.js').CompareMode} CompareMode */

/** @typedef {import('./views.js').App} App */
/**
 * What the comparison keeps on the app (buildCompare): the pickers and their elements,
 * the ready runs, whether the user chose the runs, and the latest request's ticket.
 * @typedef {{compareA: !HTMLSelectElement, compareB: !HTMLSelectElement,
 *   compareHelp: !HTMLElement, compareChanged: !HTMLInputElement, compareBody: !HTMLElement,
 *   readyRuns?: !Array<RunEntry>, compareChosen?: boolean,
 *   compareTicket?: number}} CompareFields
 */

// `this` in each method is the App these methods are mixed into (views.js).
export const CompareSection = /** @satisfies {ThisType<App>} */ ({
  buildCompare() {
    // Compare.
    this.compareA = el('select', {id: 'opm-compare-a', 'aria-label': 'Run A',
      onchange: () => { this.markSameRun(); this.loadCompare(); }});
    this.compareHelp = el('span', {class: 'opm-muted', id: 'opm-compare-help'});
    this.compareB = el('select', {id: 'opm-compare-b', 'aria-label': 'Run B',
      onchange: () => this.loadCompare()});
    this.compareChanged = el('input', {type: 'checkbox', checked: true,
      onchange: () => this.loadCompare()});
    this.compareBody = el('div', {class: 'opm-compare'});
    this.root.append(section('Compare two runs', 'opm-compare-card',
        el('div', {class: 'opm-filters'},
            el('label', {class: 'opm-field'}, el('span', {text: 'A'}), this.compareA),
            el('label', {class: 'opm-field'}, el('span', {text: 'B'}), this.compareB),
            el('label', {class: 'opm-check'}, this.compareChanged,
                el('span', {text: 'only op types that changed'})), this.compareHelp),
        this.compareBody));
  },

  /** @param {!Array<RunEntry>} runs all of them, ready or not */
  renderCompareSelects(runs) {
    const ready = runs.filter((r) => r.status === 'ready');
    for (const select of [this.compareA, this.compareB]) {
      const value = select.value;
      select.replaceChildren(...ready.map((r) => el('option', {value: r.run,
        text: `${r.run === '.' ? '. (logdir)' : r.run} — TF ${r.tensorflow_version || '?'}, ` +
          `oneDNN ${r.onednn_state || '?'}`})));
      if (ready.some((r) => r.run === value)) select.value = value;
    }
    this.readyRuns = ready;
    const one = ready.length < 2;
    for (const input of [this.compareA, this.compareB, this.compareChanged]) input.disabled = one;
    this.compareHelp.textContent = one
      ? 'Comparing needs a second run: there is only one, so A and B cannot differ.' : '';
    this.markSameRun();
  },

  /** B never offers the run chosen as A: comparing a run with itself says nothing. */
  markSameRun() {
    for (const option of this.compareB.options) {
      option.disabled = option.value === this.compareA.value;
    }
    if (this.compareB.value === this.compareA.value) {
      const other = [...this.compareB.options].find((o) => !o.disabled);
      if (other) this.compareB.value = other.value;
    }
  },

  defaultCompare() {
    const ready = this.readyRuns || [];
    if (ready.length < 2) {
      this.compareBody.replaceChildren(message('Comparing needs two runs. Put them under one ' +
        'logdir, e.g. logs/onednn_on and logs/onednn_off, and start TensorBoard on logs/.'));
      return;
    }
    if (this.compareChosen) return;
    const a = /** @type {string} */ (this.store.state.run);   // selectRun() chose it
    const current = ready.find((r) => r.run === a);
    // B: a run with evidence (an op executed), not an empty one; of those, one of the
    // same recorded command first, then one whose oneDNN differs.
    const others = ready.filter((r) => r.run !== a);
    const withEvidence = others.filter((r) => (r.op_types || 0) > 0);
    const other = withEvidence.length ? withEvidence : others;
    const sameCommand = other.filter((r) => current && current.command && r.command === current.command);
    const b = sameCommand[0] || other.find((r) => current && r.onednn_state !== current.onednn_state &&
      r.tensorflow_version === current.tensorflow_version) ||
      other.find((r) => current && r.onednn_state !== current.onednn_state) || other[0];
    this.compareA.value = a;
    this.markSameRun();
    this.compareB.value = b.run;
    this.loadCompare(false);
  },

  /** @param {boolean=} user the user chose the runs (then they stay chosen) */
  async loadCompare(user = true) {
    if (user) this.compareChosen = true;
    const a = this.compareA.value;
    const b = this.compareB.value;
    if (!a || !b) return;
    if (a === b) {
      this.compareBody.replaceChildren(message('A and B are the same run: pick another run as B.'));
      return;
    }
    const ticket = this.compareTicket = (this.compareTicket || 0) + 1;
    let c;
    try {
      c = await api.compare(a, b, this.compareChanged.checked);
    } catch (caught) {
      const err = failure(caught);
      if (ticket === this.compareTicket) {
        this.compareBody.replaceChildren(message(err.message, 'error'));
      }
      return;
    }
    if (ticket !== this.compareTicket) return;   // a newer choice of runs is on its way
    this.compareBody.replaceChildren(...this.renderCompare(c));
  },

  /**
   * @param {!import('./data.js').Comparison} c
   * @return {!Array<!HTMLElement>}
   */
  renderCompare(c) {
    /** @param {!import('./data.js').RunBrief} r */
    const runLabel = (r) => `${r.run} (TF ${r.tensorflow_version || '?'}, oneDNN ` +
      `${r.onednn_state || V.ONEDNN_UNKNOWN}: ${r.onednn_reason || r.onednn_source || 'no evidence'})`;
    /** @param {!import('./data.js').RunBrief} r */
    const made = (r) => el('span', {class: 'opm-muted opm-cmp-evidence', text: ` — ${r.evidence}` +
      (r.command.length ? `; ${r.command.join(' ')} ${r.ended || ''}`.trimEnd() : '')});
    /** @type {!Array<!HTMLElement>} */
    const parts = [];
    if (c.evidence_note) {
      parts.push(el('div', {class: 'opm-message opm-message-warn', id: 'opm-compare-evidence', role: 'note'},
          el('strong', {text: 'Different evidence. '}), c.evidence_note));
    }
    parts.push(el('p', {},
        el('strong', {text: 'A: '}), runLabel(c.a), made(c.a), el('br'),
        el('strong', {text: 'B: '}), runLabel(c.b), made(c.b), el('br'),
        `${fmtInt(c.total)} op type(s) listed; the kernel changed for ${fmtInt(c.kernel_changes)}` +
        (c.evidence_changes ? `; only the kernel evidence differs for ${fmtInt(c.evidence_changes)}` : '') +
        '.'));
    if (!c.rows.length) {
      parts.push(message('No op type differs in its modes or kernels.'));
      return parts;
    }
    /**
     * @param {string} mode
     * @param {!CompareSide} s
     */
    const side = (mode, s) => {
      if (!s.executions && !s.kernels.length) return el('span', {class: 'opm-none', text: '–'});
      return el('span', {},
          el('span', {class: 'opm-num-inline', text: fmtInt(s.executions)}),
          s.kernels.length ? s.kernels.map((k, i) => {
            // The server's kernel class (why.kernel_class), one per kernel name.
            const cls = (s.classes || [])[i] || V.KIND_UNKNOWN;
            const key = classKey(mode, {name: k, class: cls, onednn: k.startsWith(V.ONEDNN_PREFIX)});
            const seen = (s.seen || [])[i] !== false;
            return el('span', {class: seen ? 'opm-chip' : 'opm-chip opm-chip-unseen',
              title: seen ? k : `${k}: not seen running (what this run's evidence attributes: ` +
                'removed, folded, unknown or inferred)'}, swatch(key),
                key === V.KIND_REMOVED ? el('span', {class: `opm-kind opm-kind-${V.KIND_REMOVED}`,
                  text: 'no kernel (removed by grappler)'})
                  : el('span', {class: 'opm-kernel-name', text: k}));
          }) : el('span', {class: 'opm-muted', text: ' kernel ?'}));
    };
    /**
     * @param {string} mode
     * @param {!CompareMode} m
     */
    const modeCell = (mode, m) => el('td', {class: 'opm-cmp-cell'},
        el('div', {class: 'opm-cmp-side'}, el('span', {class: 'opm-cmp-tag', text: 'A'}), side(mode, m.a)),
        el('div', {class: 'opm-cmp-side'}, el('span', {class: 'opm-cmp-tag', text: 'B'}), side(mode, m.b)),
        m.time_delta_ns !== null && m.time_delta_ns !== undefined
          ? el('div', {class: 'opm-muted',
            text: `Δ time ${m.time_delta_ns > 0 ? '+' : ''}${fmtNs(m.time_delta_ns)}`}) : null);
    parts.push(el('table', {class: 'opm-table opm-compare-table', id: 'opm-compare-table'},
        el('thead', {}, el('tr', {}, el('th', {text: 'Op type'}), el('th', {text: 'Eager (A / B)'}),
            el('th', {text: 'Graph (A / B)'}), el('th', {text: 'What changed'}))),
        el('tbody', {}, c.rows.map((r) => el('tr', {class: r.kernel_changed ? 'opm-kernel-changed' : '',
          'data-compare-op': r.op_type},
        el('td', {class: 'opm-op', text: r.op_type}),
        modeCell(V.EAGER, r.eager), modeCell(V.GRAPH, r.graph),
        el('td', {}, r.changes.map((ch) => ch.endsWith(' kernel evidence')
          ? el('span', {class: 'opm-tag opm-tag-evidence', text: `${ch.split(' ')[0]}: evidence differs`,
            title: 'Not a kernel change: the kernels both runs saw run are the same; what ' +
              'differs is what only one run\u2019s evidence attributes'})
          : el('span', {class: ch.endsWith(' kernel')
            ? 'opm-tag opm-tag-strong' : 'opm-tag', text: ch}))))))));
    if (c.total > c.rows.length) {
      parts.push(el('p', {class: 'opm-muted', text: `Showing the first ${fmtInt(c.rows.length)}.`}));
    }
    return parts;
  },
});
