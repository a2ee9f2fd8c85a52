// The Op Mode tab's op detail: the answer per mode (kernels with evidence, the dtype
// split, devices), the why, folded evidence, fusion, call sites and graphs; beside the
// table on wide windows, below it otherwise. Methods of App (views.js). In: the op
// route's JSON. Out: DOM nodes, strings as text.

import {kernelKind, kindKey} from './colors.js';
import {api, failure, fmtInt, fmtNs, fmtNumbersIn, ofMode} from './data.js';
import {breakable, deviceLine, el, evidenceBadge, kernelCell, kernelNotes, kindWord, message, swatch, uncountedCell, verdict} from './dom.js';
import {V} from './vocab.js';

/** @typedef {import('./data.js').OpDetail} OpDetail */

/**
 * A sentence whose `names` are code: text nodes and <code> elements, never HTML.
 * @param {string} text
 * @return {!Array<!Node>}
 */
function codeSpans(text) {
  return text.split('`').map((part, i) => i % 2 ? el('code', {text: part}) : document.createTextNode(part));
}
/** @typedef {import('./data.js').ModeStats} ModeStats */

/** @typedef {import('./views.js').App} App */

// `this` in each method is the App these methods are mixed into (views.js).
export const DetailSection = /** @satisfies {ThisType<App>} */ ({
  /** @param {string} op an op type of the run shown */
  async showOp(op) {
    this.store.set({op});
    for (const tr of /** @type {!NodeListOf<!HTMLElement>} */ (this.root.querySelectorAll('tr[data-op]'))) {
      tr.classList.toggle('opm-selected', tr.dataset.op === op);
    }
    this.openDetail();
    await this.loadDetail(op);
  },

  detailPlaceholder() {
    this.detailBody.replaceChildren(el('p', {class: 'opm-muted',
      text: 'Click an op type to see its kernels, evidence, call sites and graphs.'}));
  },

  /** Show the detail: beside the table on wide windows, below it otherwise. */
  openDetail() {
    this.detail.classList.add('opm-open');
    this.root.classList.add('opm-detail-open');
    // Below the table (narrow windows) it is under the fold: bring its top into view.
    // Beside it, only when it is out of sight.
    const box = this.detail.getBoundingClientRect();
    if (window.matchMedia('(max-width: 1199px)').matches) {
      this.detail.scrollIntoView({block: 'start'});
    } else if (box.bottom < 0 || box.top > window.innerHeight) {
      this.detail.scrollIntoView({block: 'nearest'});
    }
  },

  closeDetail() {
    this.detail.classList.remove('opm-open');
    this.root.classList.remove('opm-detail-open');
    this.store.set({op: null});
    for (const tr of this.root.querySelectorAll('tr.opm-selected')) tr.classList.remove('opm-selected');
    this.detailPlaceholder();
  },

  /** @param {string} op */
  async loadDetail(op) {
    const run = /** @type {string} */ (this.store.state.run);   // an op is shown of a run chosen
    this.detailBody.replaceChildren(el('h3', {class: 'opm-detail-title'}, breakable(op)),
        el('p', {class: 'opm-muted', text: 'Loading…'}));
    let d;
    try {
      d = await api.op(run, op);
    } catch (caught) {
      const err = failure(caught);
      this.detailBody.replaceChildren(message(err.message, 'error'));
      return;
    }
    if (run !== this.store.state.run || op !== this.store.state.op) return;
    this.detailBody.replaceChildren(...this.renderDetail(d));
    this.detail.scrollTop = 0;
    this.announcer.textContent = `${d.op_type}: ` + V.MODES.map((mode) => {
      const stats = ofMode(d, mode);
      if (stats.uncounted) return `${mode} not counted by the dump`;
      if (!stats.executions) return `${mode} did not run`;
      return `${mode} ${verdict(stats)}`;
    }).join('; ');
  },

  /**
   * @param {!OpDetail} d
   * @return {!Array<!HTMLElement>}
   */
  renderDetail(d) {
    /** @type {!Array<!HTMLElement>} */
    const parts = [el('h3', {class: 'opm-detail-title'}, el('span', {}, breakable(d.op_type)),
        el('span', {class: 'opm-muted opm-detail-total', text: ` · ${fmtInt(d.total)} executions`}))];

    // The answer in plain words first: a sentence per mode, one on the kernels of both.
    if (d.lead) {
      parts.push(el('div', {class: 'opm-lead', id: 'opm-lead'},
          [[V.EAGER, d.lead.eager], [V.GRAPH, d.lead.graph], ['kernel', d.lead.kernel]].map(
              ([key, text]) => {
                const cut = text.indexOf(':') + 1;
                return el('p', {class: 'opm-lead-line', 'data-lead': key},
                    el('strong', {text: text.slice(0, cut)}), codeSpans(text.slice(cut)));
              })));
    }

    // Per mode: executions, whether oneDNN, the kernels with evidence and counts.
    const answer = el('div', {class: 'opm-answer', id: 'opm-answer'});
    for (const mode of V.MODES) {
      const stats = ofMode(d, mode);
      if (stats.uncounted) {
        answer.append(el('div', {class: 'opm-answer-mode', 'data-mode': mode, 'data-uncounted': '1'},
            el('div', {class: 'opm-answer-head'},
                el('strong', {text: mode}),
                el('span', {text: ' not counted by the dump'}),
                stats.time_ns !== undefined ? el('span', {class: 'opm-muted',
                  text: ` · ${fmtNs(stats.time_ns)} op time`}) : null),
            uncountedCell(stats.uncounted)));
        continue;
      }
      if (!stats.executions && !stats.kernels.length) {
        answer.append(el('div', {class: 'opm-answer-mode opm-muted', 'data-mode': mode},
            el('strong', {text: mode}), ` did not run ${mode === V.EAGER ? 'eagerly' : 'in a graph'}`));
        continue;
      }
      answer.append(el('div', {class: 'opm-answer-mode', 'data-mode': mode},
          el('div', {class: 'opm-answer-head'},
              el('strong', {text: mode}),
              el('span', {text: ` ${stats.lower_bound ? 'at least ' : ''}${fmtInt(stats.executions)} executions · `}),
              el('span', {class: 'opm-verdict', text: verdict(stats)}),
              stats.time_ns ? el('span', {class: 'opm-muted',
                title: mode === V.EAGER ? 'EagerExecute time, including dispatch'
                  : 'the kernel\u2019s compute time',
                text: ` · ${fmtNs(stats.time_ns)} op time`})
                : this.overview && this.overview.modes[mode].time_ns !== null
                  ? el('span', {class: 'opm-muted', text: ' · not in the profiled window'}) : null),
          kernelCell(mode, stats, true),
          this.dtypeSplit(mode, stats),
          deviceLine(stats, Object.keys(stats.devices || {}).sort()),
          // Why a kernel is unknown (or what grappler did) is said, not hidden in a tooltip.
          stats.kernels.filter((k) => kernelKind(k) === V.KIND_UNKNOWN && kernelNotes(k).length)
              .map((k) => el('p', {class: 'opm-note opm-unknown-why'},
                  el('strong', {text: 'unknown: '}), fmtNumbersIn(kernelNotes(k).join('; '))))));
    }
    if (d.kernel_differs) {
      answer.append(el('p', {class: 'opm-differs'},
          el('span', {class: 'opm-tag opm-tag-strong', text: 'kernel differs'}), ' ',
          d.kernel_differs_why || ''));
    }
    parts.push(answer);

    // The why: one short paragraph per mode; the full text folded.
    /** @type {!Object<string, string>} */
    const why = d.why || {};
    const block = el('div', {class: 'opm-explanation', id: 'opm-explanation'});
    block.append(el('h4', {text: 'Why'}));
    let any = false;
    for (const mode of V.MODES) {
      if (!why[mode]) continue;
      any = true;
      block.append(el('p', {class: 'opm-why', 'data-mode': mode},
          el('strong', {text: `${mode}: `}), fmtNumbersIn(why[mode])));
    }
    const full = this.explanationParts(d);
    if (!any) {
      for (const [mode, text] of full) {
        block.append(el('p', {class: 'opm-why'}, mode ? el('strong', {text: `${mode}: `}) : null,
            fmtNumbersIn(text)));
      }
      if (!full.length) block.append(el('p', {class: 'opm-muted', text: 'No explanation: see the evidence.'}));
    }
    parts.push(block);

    /**
     * @param {string} title
     * @param {string} id
     * @param {...*} children as el() takes them
     */
    const fold = (title, id, ...children) => el('details', {class: 'opm-fold', id},
        el('summary', {text: title}), ...children);
    if (any && full.length) {
      parts.push(fold('Full explanation', 'opm-full-explanation',
          full.map(([mode, text]) => el('p', {}, mode ? el('strong', {text: `${mode}: `}) : null,
              fmtNumbersIn(text)))));
    }
    const notes = V.MODES.flatMap((mode) => ofMode(d, mode).kernels.flatMap((k) =>
      kernelNotes(k).map((note) => `${mode} · ${k.name}: ${note}`)));
    if ((d.evidence && d.evidence.length) || notes.length) {
      parts.push(fold('Evidence and notes', 'opm-evidence-box',
          el('ul', {class: 'opm-evidence'}, (d.evidence || []).map((line) =>
            el('li', {text: fmtNumbersIn(line)}))),
          notes.length ? el('ul', {class: 'opm-evidence opm-muted'}, notes.map((n) =>
            el('li', {text: fmtNumbersIn(n)}))) : null));
    }

    const fused = d.fused_into;
    if (fused && fused.length) {
      parts.push(fold(`Fused into (${fmtInt(fused.length)})`, 'opm-fused-box',
          el('ul', {class: 'opm-fused'}, fused.map((f) => el('li', {},
              el('code', {text: f.kernel}),
              ` × ${fmtInt(f.executions)}`,
              f.evidence ? [' ', evidenceBadge(f.evidence)] : null,
              f.nodes.length ? el('div', {class: 'opm-muted',
                text: `node${f.nodes.length > 1 ? 's' : ''}: ${f.nodes.join(', ')}`}) : null)))));
    }

    // Call sites.
    const sites = el('div', {class: 'opm-sites', id: 'opm-sites'});
    for (const mode of V.MODES) {
      const list = d.call_sites[mode];
      if (!list.length) continue;
      sites.append(el('h5', {text: mode === V.EAGER
        ? `eager: where it was executed (${fmtInt(d.call_sites_total.eager)} site(s))`
        : `graph: where it was traced into a graph (${fmtInt(d.call_sites_total.graph)} site(s))`}));
      for (const site of list) sites.append(this.renderSite(mode, site));
    }
    const siteCount = d.call_sites_total.eager + d.call_sites_total.graph;
    if (!siteCount) {
      sites.append(el('p', {class: 'opm-muted',
        text: 'No call sites: this run has no tfdbg2 dump with stack frames.'}));
    }
    parts.push(fold(`Call sites (${fmtInt(siteCount)})`, 'opm-sites-box', sites));

    // Graphs.
    if (d.graphs && d.graphs.length) {
      parts.push(fold(`Graphs that hold it (${fmtInt(d.graphs_total)})`, 'opm-graphs-box',
          el('div', {class: 'opm-graphs'},
              el('table', {class: 'opm-small-table'},
                  el('thead', {}, el('tr', {}, el('th', {text: V.GRAPH}), el('th', {text: 'inside'}),
                      el('th', {class: 'opm-num', text: 'ops'}), el('th', {class: 'opm-num', text: 'runs'}))),
                  el('tbody', {}, d.graphs.map((g) => el('tr', {title: g.op_names.join('\n')},
                      el('td', {}, el('code', {text: g.name || g.graph_id})),
                      el('td', {class: 'opm-muted', text: g.outer || '–'}),
                      el('td', {class: 'opm-num', text: fmtInt(g.ops)}),
                      el('td', {class: 'opm-num', text: fmtInt(g.executions)}))))))));
    }
    return parts;
  },

  /** Per dtype: executions and the kernels they ran (float16 MatMul stock, float32 oneDNN). */
  /**
   * @param {string} mode
   * @param {!ModeStats} stats
   * @return {?HTMLElement}
   */
  dtypeSplit(mode, stats) {
    const split = stats.dtypes || [];
    if (!split.length || (split.length === 1 && ['not recorded', 'a float type', 'no float output']
        .includes(split[0].label))) return null;
    return el('table', {class: 'opm-small-table opm-dtype-split', 'data-mode': mode},
        el('caption', {class: 'opm-sr-only', text: `${mode}: executions by dtype`}),
        el('thead', {}, el('tr', {}, el('th', {scope: 'col', text: 'dtype'}),
            el('th', {scope: 'col', class: 'opm-num', text: 'executions'}),
            el('th', {scope: 'col', text: 'kernel'}))),
        el('tbody', {}, split.map((e) => el('tr', {'data-dtype': e.label},
            el('th', {scope: 'row', class: e.low_precision ? 'opm-dtype-low' : '', text: e.label}),
            el('td', {class: 'opm-num', text: fmtInt(e.executions)}),
            el('td', {}, e.kernels.map((k) => el('span', {class: 'opm-chip', 'data-kind': k.kind},
                swatch(kindKey(mode, k.kind)),
                k.kind === V.KIND_REMOVED || k.kind === V.KIND_UNKNOWN ? null
                  : el('span', {class: 'opm-kernel-name'}, breakable(k.name)),
                el('span', {class: `opm-kind opm-kind-${k.kind}`, text: kindWord(k.kind)}),
                e.kernels.length > 1 ? el('span', {class: 'opm-count', text: `×${fmtInt(k.executions)}`}) : null)))))));
  },

  /**
   * The explanation as [mode, text] pairs ('' for the op type's own), whatever its shape:
   * a string, a list, an object by mode, or {text} / {summary}.
   * @param {!OpDetail} d
   * @return {!Array<[string, string]>}
   */
  explanationParts(d) {
    /** @type {!Array<[string, string]>} */
    const out = [];
    /**
     * @param {string} mode
     * @param {*} value an explanation of any of the shapes above
     */
    const add = (mode, value) => {
      if (!value) return;
      if (typeof value === 'string') out.push([mode, value]);
      else if (Array.isArray(value)) value.forEach((v) => add(mode, v));
      else if (typeof value === 'object') {
        if (value.text || value.summary) out.push([mode, value.text || value.summary]);
        else for (const [k, v] of Object.entries(value)) add(mode || k, v);
      }
    };
    add('', d.explanation);
    add(V.EAGER, d.eager.explanation);
    add(V.GRAPH, d.graph.explanation);
    return out;
  },

  /**
   * @param {string} mode
   * @param {!import('./data.js').Site} site
   * @return {!HTMLElement}
   */
  renderSite(mode, site) {
    const where = `${site.file}:${site.line}`;
    const head = el('div', {class: 'opm-site-head'},
        el('code', {class: 'opm-site-where', text: where}),
        el('span', {class: 'opm-muted', text: ` in ${site.function || '?'}`}),
        el('span', {class: 'opm-count', text: mode === V.EAGER
          ? ` × ${fmtInt(site.count)}`
          : ` × ${fmtInt(site.count)} runs of ${fmtInt(site.ops)} op(s)`}));
    const box = el('div', {class: 'opm-site'}, head);
    const snippet = site.snippet;
    if (snippet) {
      const pre = el('pre', {class: 'opm-snippet'});
      snippet.lines.forEach((text, i) => {
        const number = snippet.first_line + i;
        pre.append(el('span', {class: number === snippet.line ? 'opm-line opm-line-hit' : 'opm-line'},
            el('span', {class: 'opm-lineno', text: String(number).padStart(5, ' ')}),
            ` ${text}\n`));
      });
      box.append(pre);
    }
    // The site is the innermost frame outside TF; user_code, when another frame, is the
    // program's own line that led there (through the libraries in via).
    if (site.user_code) {
      box.append(el('div', {class: 'opm-site-from'}, 'from your code: ',
          el('code', {text: `${site.user_code.file}:${site.user_code.line}`}),
          el('span', {class: 'opm-muted', text: ` in ${site.user_code.function || '?'}`})));
    }
    if (site.via && site.via.length) {
      box.append(el('details', {class: 'opm-via'}, el('summary', {text: 'through, inside libraries'}),
          el('ol', {}, site.via.map((f) => el('li', {},
              el('code', {text: `${f.file}:${f.line}`}),
              el('span', {class: 'opm-muted', text: ` in ${f.function}`}))))));
    }
    return box;
  },
});
