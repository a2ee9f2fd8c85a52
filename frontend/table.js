// The Op Mode tab's op table card (search, filters, sortable columns, pager, the
// per-device columns) with the detail's element beside it. Methods of App (views.js).
// In: a page of the optypes route. Out: DOM nodes, strings as text.

import {api, failure, fmtInt, fmtNs, ofMode} from './data.js';
import {atLeast, breakable, dtypeLine, el, kernelCell, message, rovingRows, section, uncountedCell} from './dom.js';
import {V} from './vocab.js';

/** @typedef {import('./data.js').OpPage} OpPage */
/** @typedef {import('./data.js').TableQuery} TableQuery */

/** @typedef {import('./views.js').App} App */

/**
 * A mode's profiled time, or why there is none: the mode ran, but not while the
 * profiler did (a profile covers a window of the run; the counts cover all of it).
 * @param {!import('./data.js').ModeStats} stats
 * @return {string}
 */
function profiledTime(stats) {
  if (stats.time_ns !== undefined && stats.time_ns > 0) return fmtNs(stats.time_ns);
  return stats.executions ? 'not in profile window' : '–';
}
/**
 * What the op table keeps on the app (buildTable): its elements, the detail's (which
 * detail.js fills), the search's debounce timer and the page request in flight.
 * @typedef {{searchBox: !HTMLInputElement, searchTimer: number, tableHead: !HTMLElement,
 *   tableBody: !HTMLElement, tableInfo: !HTMLElement, prevButton: !HTMLButtonElement,
 *   nextButton: !HTMLButtonElement, detailBody: !HTMLElement, announcer: !HTMLElement,
 *   detail: !HTMLElement, tableWrap: !HTMLElement, graphFilter: !HTMLElement,
 *   tableRequest: ?AbortController}} TableFields
 */

// `this` in each method is the App these methods are mixed into (views.js).
export const TableSection = /** @satisfies {ThisType<App>} */ ({
  buildTable() {
    // Op table + detail.
    this.searchBox = el('input', {type: 'search', id: 'opm-search',
      placeholder: 'Search op type or kernel', 'aria-label': 'Search op type or kernel',
      oninput: () => {
        clearTimeout(this.searchTimer);
        this.searchTimer = setTimeout(() => this.setTable({q: this.searchBox.value, page: 0}), 200);
      }});
    /**
     * @param {string} value
     * @param {string} label
     * @param {string} help
     */
    const filter = (value, label, help) => el('label', {class: 'opm-check', title: help},
        el('input', {type: 'checkbox', value, 'data-filter': value,
          /** @param {!Event} e */
          onchange: (e) => this.toggleFilter(value, /** @type {!HTMLInputElement} */ (e.target).checked)}),
        el('span', {text: label}));
    this.tableHead = el('thead');
    this.tableBody = el('tbody');
    this.tableInfo = el('span', {class: 'opm-table-info'});
    // Shown while the table holds one trace's op types (the Functions section sets it).
    this.graphFilter = el('span', {class: 'opm-graph-filter', hidden: true});
    this.prevButton = el('button', {type: 'button', text: '‹ Previous',
      onclick: () => this.setTable({page: Math.max(0, this.store.state.table.page - 1)})});
    this.nextButton = el('button', {type: 'button', text: 'Next ›',
      onclick: () => this.setTable({page: this.store.state.table.page + 1})});
    this.detailBody = el('div', {class: 'opm-detail-body'});
    // Not aria-live: a screen reader would read the whole detail on every click. The
    // announcer says only the op and its answer.
    this.announcer = el('div', {class: 'opm-sr-only', id: 'opm-announce', 'aria-live': 'polite',
      role: 'status'});
    this.detail = el('aside', {class: 'opm-detail', id: 'opm-detail',
      'aria-label': 'Op type detail', tabindex: -1},
    el('button', {type: 'button', class: 'opm-detail-close', 'aria-label': 'Close the detail',
      title: 'Close (Esc)', text: '×', onclick: () => this.closeDetail()}),
    this.detailBody);
    this.root.append(this.announcer);
    this.detailPlaceholder();
    this.root.addEventListener('keydown', (/** @type {!KeyboardEvent} */ e) => {
      if (e.key === 'Escape' && this.detail.classList.contains('opm-open')) this.closeDetail();
    });
    this.tableWrap = el('div', {class: 'opm-table-scroll'},
        el('table', {class: 'opm-table', id: 'opm-table'}, this.tableHead, this.tableBody));
    const skip = el('a', {href: '#opm-timeline-card', class: 'opm-skip', id: 'opm-skip-table',
      text: 'Skip the op table, to the timeline',
      onclick: (/** @type {!Event} */ e) => { e.preventDefault(); this.timeline.canvas.focus(); }});
    this.root.append(section('Op types', 'opm-ops', skip,
        el('div', {class: 'opm-filters'},
            this.searchBox,
            filter('both', 'runs in both modes', 'op types with eager and graph executions'),
            filter('differs', 'kernel differs between modes',
                'the kernels that ran (not counting executions grappler removed or ' +
                'constant-folded, or whose kernel is unknown) differ between eager and graph, ' +
                'or one mode ran oneDNN and the other did not'),
            filter('no_onednn', 'no oneDNN kernel', 'no _Mkl* kernel seen in either mode'),
            filter('low_precision', 'mixed precision', 'op types with float16 or bfloat16 executions'),
            this.graphFilter),
        el('div', {class: 'opm-split'},
            el('div', {class: 'opm-table-wrap'},
                this.tableWrap,
                el('p', {class: 'opm-hint opm-time-note', id: 'opm-time-note',
                  text: 'Op time, from the profiled window: eager = EagerExecute time, which ' +
                    'includes dispatch (finding and preparing the kernel) as well as the kernel; ' +
                    'graph = the kernel\u2019s own compute event.'}),
                el('div', {class: 'opm-pager'}, this.prevButton, this.tableInfo, this.nextButton)),
            this.detail)));
  },

  /** @param {!Partial<TableQuery>} patch */
  setTable(patch) {
    this.store.set({table: {...this.store.state.table, ...patch}});
    this.loadTable();
  },

  /**
   * @param {string} value a filter of the optypes route
   * @param {boolean} on
   */
  toggleFilter(value, on) {
    const filters = new Set(this.store.state.table.filters);
    if (on) filters.add(value); else filters.delete(value);
    this.setTable({filters: [...filters], page: 0});
  },

  async loadTable() {
    const {run, table} = this.store.state;
    if (!run) return;
    if (this.tableRequest) this.tableRequest.abort();
    const controller = new AbortController();
    this.tableRequest = controller;
    let page;
    try {
      page = await api.opTypes(run, table, controller.signal);
    } catch (caught) {
      const err = failure(caught);
      if (err.name === 'AbortError') return;
      this.tableBody.replaceChildren(el('tr', {}, el('td', {colspan: 6},
          message(err.message, 'error'))));
      return;
    }
    this.renderTable(page);
  },

  /** @param {!OpPage} page */
  renderTable(page) {
    const {table} = this.store.state;
    /**
     * @param {string} label
     * @param {string} sort
     * @param {string=} cls
     * @param {?string=} title
     */
    const header = (label, sort, cls = '', title = null) => {
      const active = table.sort === sort;
      const arrow = active ? (table.order === 'desc' ? ' ▼' : ' ▲') : '';
      return el('th', {class: `${cls} opm-sortable${active ? ' opm-sorted' : ''}`,
        'aria-sort': active ? (table.order === 'desc' ? 'descending' : 'ascending') : 'none',
        scope: 'col', title},
      el('button', {type: 'button', class: 'opm-sort', 'data-sort': sort,
        onclick: () => this.setTable({sort, page: 0,
          order: active ? (table.order === 'desc' ? 'asc' : 'desc') : (sort === 'op_type' ? 'asc' : 'desc')}),
        text: label + arrow}));
    };
    const cut = page.lower_bound || [];
    const devices = page.devices || [];
    /** @param {string} mode */
    const floor = (mode) => (cut.includes(mode) ? ' ≥' : '');
    const floorTitle = 'at least: the dump\u2019s circular buffer dropped older records';
    this.tableHead.replaceChildren(el('tr', {},
        header('Op type', 'op_type'),
        header(`Eager${floor(V.EAGER)}`, V.EAGER, 'opm-num', cut.includes(V.EAGER) ? floorTitle : null),
        el('th', {scope: 'col', text: 'Eager kernels'}),
        header(`Graph${floor(V.GRAPH)}`, V.GRAPH, 'opm-num', cut.includes(V.GRAPH) ? floorTitle : null),
        el('th', {scope: 'col', text: 'Graph kernels'}),
        devices.map((d) => el('th', {scope: 'col', class: 'opm-num opm-device-head', 'data-device': d,
          title: `executions on ${d} (the device the dump's records name)`, text: d})),
        header('Op time', 'time', 'opm-num opm-time-head',
            'Profiled op time. eager: EagerExecute time, including dispatch; graph: the ' +
            'kernel\u2019s compute time')));
    if (!page.rows.length) {
      this.tableBody.replaceChildren(el('tr', {}, el('td', {colspan: 6 + devices.length, class: 'opm-muted',
        text: page.all_total ? 'No op type matches the filters.' : 'No op executions recorded in this run.'})));
    } else {
      this.tableBody.replaceChildren(...page.rows.map((row) => {
        const tr = el('tr', {class: row.op_type === this.store.state.op ? 'opm-selected' : '',
          tabindex: -1, 'data-op': row.op_type,
          onclick: () => this.showOp(row.op_type),
          onkeydown: (/** @type {!KeyboardEvent} */ e) => { if (e.key === 'Enter') this.showOp(row.op_type); }},
        el('td', {class: 'opm-op'},
            el('span', {class: 'opm-op-name', title: row.op_type}, breakable(row.op_type)),
            row.kernel_differs ? el('span', {class: 'opm-tag opm-tag-strong',
              title: row.kernel_differs_why || 'the kernels differ between the modes',
              text: 'kernel differs'}) : null),
        el('td', {class: 'opm-num', text: `${atLeast(row.eager)}${fmtInt(row.eager.executions)}`}),
        el('td', {}, kernelCell(V.EAGER, row.eager),
            row.low_precision || row.dtypes_differ ? dtypeLine(row.eager) : null),
        // A graph count the dump could not make: a dash in the count column (the tag
        // itself, wider than any count, leads the graph kernels it describes).
        row.graph.uncounted
          ? el('td', {class: 'opm-num', 'data-uncounted': '1', title: row.graph.uncounted.note},
              el('span', {class: 'opm-muted', 'aria-hidden': 'true', text: '–'}),
              el('span', {class: 'opm-sr-only', text: 'not counted'}))
          : el('td', {class: 'opm-num', text: `${atLeast(row.graph)}${fmtInt(row.graph.executions)}`}),
        el('td', {}, row.graph.uncounted ? [el('span', {class: 'opm-tag opm-tag-uncounted',
          title: row.graph.uncounted.note, text: 'graph count: not counted by the dump'}),
        uncountedCell(row.graph.uncounted)]
          : kernelCell(V.GRAPH, row.graph),
        row.low_precision || row.dtypes_differ ? dtypeLine(row.graph) : null),
        devices.map((d) => el('td', {class: 'opm-num opm-muted opm-device', 'data-device': d},
            V.MODES.map((mode) => el('div', {},
                el('span', {class: 'opm-time-label', text: `${mode} `}),
                fmtInt(((ofMode(row, mode).devices || {})[d]) || 0))))),
        el('td', {class: 'opm-num opm-muted opm-time'},
            el('div', {title: 'eager: EagerExecute time in the profile, including dispatch'},
                el('span', {class: 'opm-time-label', text: 'eager '}),
                el('span', {class: 'opm-time-value', text: profiledTime(row.eager)})),
            el('div', {title: 'graph: the kernel\u2019s compute time in the profile'},
                el('span', {class: 'opm-time-label', text: 'graph '}),
                el('span', {class: 'opm-time-value', text: profiledTime(row.graph)}))));
        return tr;
      }));
    }
    rovingRows(this.tableBody);
    const first = page.total ? page.page * page.page_size + 1 : 0;
    const last = Math.min(page.total, (page.page + 1) * page.page_size);
    this.tableInfo.textContent = `${fmtInt(first)}–${fmtInt(last)} of ${fmtInt(page.total)}` +
      (page.total !== page.all_total ? ` (filtered from ${fmtInt(page.all_total)})` : '');
    this.prevButton.disabled = page.page === 0;
    this.nextButton.disabled = last >= page.total;
    this.renderGraphFilter();
  },

  /** The chip of the one trace the table is filtered to, with its button to show all. */
  renderGraphFilter() {
    const {graph, graphName} = this.store.state.table;
    this.graphFilter.hidden = !graph;
    this.graphFilter.replaceChildren(...(graph ? [
      el('span', {text: 'only the op types of trace '}), el('code', {text: graphName || graph}),
      el('span', {text: ' (their counts are the whole run\u2019s)'}),
      el('button', {type: 'button', class: 'opm-graph-filter-clear', 'aria-label': 'Show every op type',
        title: 'Show every op type (and the whole timeline)', text: '×',
        onclick: () => this.clearGraph()}),
    ] : []));
  },

  /**
   * Show only the op types of one trace's graph, and in the timeline only its calls (by
   * its concrete function's name), and bring the table into view.
   * @param {string} graphId
   * @param {string} graphName
   */
  showGraph(graphId, graphName) {
    this.setTable({graph: graphId, graphName, page: 0});
    this.setTimelineGraph(graphName);
    document.getElementById('opm-ops')?.scrollIntoView({block: 'start'});
  },

  /** Show every op type and the whole timeline again: the two chips show one trace, and
   * either one's × clears both. */
  clearGraph() {
    this.setTable({graph: '', graphName: '', page: 0});
    this.setTimelineGraph('');
  },
});
