// The Op Mode tab's DOM: toolbar, legend, overview, op table with detail,
// timeline and run comparison.
//
// In: JSON from data.js. Out: DOM nodes. Every string that comes from the
// user's files (op names, kernels, graph names, paths, source lines, run
// names) is inserted as text (textContent / text nodes), never as HTML.

import {CLASSES, LEGEND_ORDER, classKey, matrixKey} from './colors.js';
import {Store, api, fmtBytes, fmtInt, fmtNs, fmtPct} from './data.js';
import {Timeline} from './timeline.js';

// ---------------------------------------------------------------- DOM helper

/**
 * Create an element. Strings among the children become text nodes.
 * @param {string} tag
 * @param {!Object=} props class, text, on<event>, dataset, or attributes
 * @param {...*} children
 * @return {!HTMLElement}
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

function swatch(key) {
  const entry = CLASSES[key] || CLASSES.unknown;
  const node = el('span', {class: 'opm-swatch', 'aria-hidden': 'true'});
  node.style.background = entry.color;
  return node;
}

function evidenceBadge(evidence) {
  const title = {
    log: 'named by the TensorFlow log (Instantiating kernel / Process node)',
    profile: 'named by a profiler event <node>:<kernel>',
    inferred: 'inferred from rules, not observed',
  }[evidence] || evidence;
  return el('span', {class: `opm-badge opm-ev-${evidence}`, title, text: evidence});
}

/** A kernel chip: colour swatch, name, oneDNN/stock word, evidence badge. */
function kernelChip(mode, kernel, showCount) {
  const key = classKey(mode, kernel);
  const kind = kernel.class === 'fused' ? 'fused' : kernel.class === 'unknown' ? 'no kernel'
    : (kernel.onednn ? 'oneDNN' : 'stock');
  const notes = [...(kernel.notes || []), ...(kernel.note ? [kernel.note] : [])];
  if (kernel.fused_into && kernel.fused_into.length) {
    notes.push(`fused into ${kernel.fused_into.slice(0, 3).join(', ')}`);
  }
  return el('span', {class: `opm-chip opm-chip-${key}`, title: notes.join('; ')},
      swatch(key),
      el('span', {class: 'opm-kernel-name', text: kernel.name}),
      el('span', {class: 'opm-kind', text: kind}),
      evidenceBadge(kernel.evidence),
      showCount ? el('span', {class: 'opm-count', text: `×${fmtInt(kernel.executions)}`}) : null);
}

function unknownChip() {
  return el('span', {class: 'opm-chip opm-chip-unknown',
    title: 'executed, but no log line or profiler event names the kernel'},
  swatch('unknown'), el('span', {class: 'opm-kernel-name', text: 'kernel ?'}),
  el('span', {class: 'opm-kind', text: 'unknown'}));
}

function kernelCell(mode, stats) {
  if (!stats.executions && !stats.kernels.length) return el('span', {class: 'opm-none', text: '–'});
  const chips = stats.kernels.map((k) => kernelChip(mode, k, stats.kernels.length > 1));
  const known = stats.kernels.reduce((n, k) => n + k.executions, 0);
  if (!stats.kernels.length || known < stats.executions * 0.5) chips.push(unknownChip());
  return el('div', {class: 'opm-chips'}, chips);
}

function section(title, id, ...children) {
  return el('section', {class: 'opm-card', id},
      el('h2', {class: 'opm-card-title', text: title}), ...children);
}

function message(text, kind = 'info') {
  return el('div', {class: `opm-message opm-message-${kind}`, role: kind === 'error' ? 'alert' : null,
    text});
}

// ---------------------------------------------------------------- the app

export class App {
  /** @param {!HTMLElement} root */
  constructor(root) {
    this.root = root;
    this.store = new Store({
      runs: [], progress: null, run: null, loadedAt: null,
      table: {sort: 'total', order: 'desc', filters: [], q: '', page: 0, pageSize: 50},
      op: null,
    });
    this.pollTimer = 0;
    this.tableRequest = null;
  }

  async start() {
    this.root.classList.add('opm-body');
    this.root.replaceChildren();
    this.buildLayout();
    await this.refreshRuns();
  }

  buildLayout() {
    // Toolbar.
    this.runSelect = el('select', {id: 'opm-run', 'aria-label': 'Run',
      onchange: () => this.selectRun(this.runSelect.value)});
    this.progressBar = el('progress', {class: 'opm-progress', max: 1, value: 0});
    this.progressText = el('span', {class: 'opm-progress-text'});
    this.exportLinks = el('span', {class: 'opm-exports'});
    const toolbar = el('header', {class: 'opm-toolbar'},
        el('h1', {class: 'opm-title', text: 'Op Mode'}),
        el('label', {class: 'opm-field'}, el('span', {text: 'Run'}), this.runSelect),
        el('span', {class: 'opm-progress-box'}, this.progressBar, this.progressText),
        this.exportLinks);

    // Legend. It sticks together with the toolbar, in one opaque block: two
    // sticky elements each guessing the other's height left a gap to scroll under.
    const legend = el('div', {class: 'opm-legend', role: 'list', 'aria-label': 'Colour legend'},
        LEGEND_ORDER.map((key) => el('span', {class: 'opm-legend-item', role: 'listitem',
          title: CLASSES[key].description}, swatch(key), el('span', {text: CLASSES[key].label}))));
    const sticky = el('div', {class: 'opm-sticky'}, toolbar, legend);
    this.root.append(sticky);
    // The op detail sticks just below this block, whose height changes as the
    // toolbar and legend wrap on narrow windows.
    new ResizeObserver(() => this.root.style.setProperty('--opm-sticky-h', `${sticky.offsetHeight}px`))
        .observe(sticky);

    this.status = el('div', {class: 'opm-status'});
    this.root.append(this.status);

    // Overview.
    this.overviewBody = el('div', {class: 'opm-overview'});
    this.root.append(section('Overview', 'opm-overview', this.overviewBody));

    // Op table + detail.
    this.searchBox = el('input', {type: 'search', id: 'opm-search',
      placeholder: 'Search op type or kernel', 'aria-label': 'Search op type or kernel',
      oninput: () => {
        clearTimeout(this.searchTimer);
        this.searchTimer = setTimeout(() => this.setTable({q: this.searchBox.value, page: 0}), 200);
      }});
    const filter = (value, label, help) => el('label', {class: 'opm-check', title: help},
        el('input', {type: 'checkbox', value, 'data-filter': value,
          onchange: (e) => this.toggleFilter(value, e.target.checked)}),
        el('span', {text: label}));
    this.tableHead = el('thead');
    this.tableBody = el('tbody');
    this.tableInfo = el('span', {class: 'opm-table-info'});
    this.prevButton = el('button', {type: 'button', text: '‹ Previous',
      onclick: () => this.setTable({page: Math.max(0, this.store.state.table.page - 1)})});
    this.nextButton = el('button', {type: 'button', text: 'Next ›',
      onclick: () => this.setTable({page: this.store.state.table.page + 1})});
    this.detail = el('aside', {class: 'opm-detail', 'aria-live': 'polite'},
        el('p', {class: 'opm-muted', text: 'Click an op type to see its kernels, evidence, call sites and graphs.'}));
    this.root.append(section('Op types', 'opm-ops',
        el('div', {class: 'opm-filters'},
            this.searchBox,
            filter('both', 'runs in both modes', 'op types with eager and graph executions'),
            filter('differs', 'kernel differs between modes',
                'the eager kernel is not the graph kernel'),
            filter('no_onednn', 'no oneDNN kernel', 'no _Mkl* kernel seen in either mode')),
        el('div', {class: 'opm-split'},
            el('div', {class: 'opm-table-wrap'},
                el('table', {class: 'opm-table', id: 'opm-table'}, this.tableHead, this.tableBody),
                el('div', {class: 'opm-pager'}, this.prevButton, this.tableInfo, this.nextButton)),
            this.detail)));

    // Timeline.
    this.timelineHost = el('div', {class: 'opm-timeline-host'});
    this.timelineInfo = el('span', {class: 'opm-muted'});
    const debugBox = el('input', {type: 'checkbox', id: 'opm-debug',
      onchange: (e) => this.timeline.setDebug(e.target.checked)});
    this.root.append(section('Timeline', 'opm-timeline-card',
        el('div', {class: 'opm-filters'},
            el('button', {type: 'button', text: 'Zoom in', onclick: () => this.timeline.zoom(0.5)}),
            el('button', {type: 'button', text: 'Zoom out', onclick: () => this.timeline.zoom(2)}),
            el('button', {type: 'button', text: 'Reset', onclick: () => this.timeline.reset()}),
            el('label', {class: 'opm-check'}, debugBox,
                el('span', {text: 'show tfdbg instrumentation'})),
            this.timelineInfo),
        el('p', {class: 'opm-hint', text: 'Wheel to zoom, drag to pan, double-click to reset; ' +
          'hover a box for its op, kernel and duration. Zoomed out, boxes are bins: height = busy time.'}),
        this.timelineHost));
    this.timeline = new Timeline(this.timelineHost, async (start, end, maxEvents, debug, signal) => {
      const run = this.store.state.run;
      const data = await api.timeline(run, start, end, maxEvents, debug, signal);
      this.timelineHost.dataset.run = run;   // which run the canvas shows (for tests and tools)
      return data;
    });
    this.timeline.onChange = () => this.renderTimelineInfo();

    // Compare.
    this.compareA = el('select', {id: 'opm-compare-a', 'aria-label': 'Run A',
      onchange: () => this.loadCompare()});
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
                el('span', {text: 'only op types that changed'}))),
        this.compareBody));
  }

  // ------------------------------------------------------------ runs and progress

  async refreshRuns() {
    clearTimeout(this.pollTimer);
    let data;
    try {
      data = await api.runs();
    } catch (err) {
      this.status.replaceChildren(message(`Cannot list runs: ${err.message}`, 'error'));
      this.pollTimer = setTimeout(() => this.refreshRuns(), 5000);
      return;
    }
    const {runs, progress} = data;
    this.store.set({runs, progress});
    this.renderProgress(progress);
    this.renderRunSelect(runs);
    this.renderCompareSelects(runs);
    const ready = runs.filter((r) => r.status === 'ready');
    let {run} = this.store.state;
    const current = runs.find((r) => r.run === run);
    if (!current || current.status !== 'ready') {
      const pick = ready.find((r) => r.run === '.') || ready[0];
      if (pick) await this.selectRun(pick.run);
    } else if (current.loaded_at !== this.store.state.loadedAt) {
      await this.selectRun(run, true);
    }
    if (!runs.length) {
      this.status.replaceChildren(message(progress.scans
        ? 'No tfdbg2 dump (tfdbg_events.*), profile (plugins/profile/*/*.xplane.pb) or ' +
          'TensorFlow log (*.txt, *.log) found in the logdir yet.'
        : 'Scanning the logdir…'));
    } else if (!ready.length) {
      this.status.replaceChildren(message('Loading runs…'));
    } else {
      const failed = runs.filter((r) => r.status === 'error');
      this.status.replaceChildren(...failed.map((r) =>
        message(`Run ${r.run} could not be loaded: ${r.error}`, 'error')));
    }
    if (progress.error) this.status.append(message(progress.error, 'error'));
    const busy = !progress.scans || progress.scanning || progress.runs_done < progress.runs_total;
    this.pollTimer = setTimeout(() => this.refreshRuns(), busy ? 1500 : 15000);
  }

  renderProgress(p) {
    const total = p.bytes_total || 1;
    this.progressBar.max = total;
    this.progressBar.value = p.bytes_done;
    const done = p.runs_done >= p.runs_total && !p.scanning && p.scans > 0;
    this.progressBar.hidden = done;
    this.progressText.textContent = done
      ? `${fmtInt(p.runs_total)} run${p.runs_total === 1 ? '' : 's'} loaded`
      : `loading ${p.loading || '…'}: ${fmtInt(p.runs_done)}/${fmtInt(p.runs_total)} runs, ` +
        `${fmtInt(p.files_done)}/${fmtInt(p.files_total)} files, ` +
        `${fmtBytes(p.bytes_done)} of ${fmtBytes(p.bytes_total)}`;
  }

  renderRunSelect(runs) {
    const selected = this.store.state.run;
    this.runSelect.replaceChildren(...runs.map((r) => {
      const label = `${r.run === '.' ? '. (logdir)' : r.run}` +
        (r.status === 'ready' ? '' : r.status === 'error' ? ' (error)' : ' (loading…)');
      return el('option', {value: r.run, disabled: r.status !== 'ready',
        selected: r.run === selected, text: label});
    }));
  }

  async selectRun(run, reload = false) {
    const entry = this.store.state.runs.find((r) => r.run === run);
    if (!entry || entry.status !== 'ready') return;
    if (run === this.store.state.run && !reload) return;
    const changed = run !== this.store.state.run;
    this.store.set({run, loadedAt: entry.loaded_at,
      op: changed ? null : this.store.state.op,
      table: changed ? {...this.store.state.table, page: 0} : this.store.state.table});
    this.runSelect.value = run;
    this.renderExports(run);
    if (changed) {
      this.detail.replaceChildren(el('p', {class: 'opm-muted',
        text: 'Click an op type to see its kernels, evidence, call sites and graphs.'}));
    }
    await Promise.all([
      this.loadOverview().then(() => this.loadTimelineSpan(!changed)),
      this.loadTable(),
      this.store.state.op ? this.loadDetail(this.store.state.op) : null]);
    this.defaultCompare();
  }

  renderExports(run) {
    const link = (format, label, help) => el('a', {href: api.exportUrl(run, format),
      download: '', class: 'opm-link', title: help, text: label});
    this.exportLinks.replaceChildren(el('span', {class: 'opm-muted', text: 'Export:'}),
        link('csv', 'CSV', 'op table as CSV'),
        link('json', 'JSON', 'op table as JSON (the CLI\'s contract)'),
        link('trace', 'Perfetto trace', 'Chrome trace JSON: open it in ui.perfetto.dev; ' +
          'track and slice names carry mode and kernel'));
  }

  // ------------------------------------------------------------ overview

  async loadOverview() {
    const run = this.store.state.run;
    this.overview = null;
    let o;
    try {
      o = await api.overview(run);
    } catch (err) {
      this.overviewBody.replaceChildren(message(err.message, 'error'));
      return;
    }
    if (run !== this.store.state.run) return;
    this.overview = o;
    this.overviewBody.replaceChildren(...this.renderOverview(o));
  }

  renderOverview(o) {
    const onednn = {on: 'on', off: 'off', unknown: 'unknown'}[o.onednn_state] ||
      (o.onednn_enabled === true ? 'on' : o.onednn_enabled === false ? 'off' : 'unknown');
    const reason = o.onednn_reason || o.onednn_source || 'no evidence either way';
    const facts = el('dl', {class: 'opm-facts'},
        el('dt', {text: 'TensorFlow'}), el('dd', {text: o.tensorflow_version || 'unknown'}),
        el('dt', {text: 'oneDNN'}), el('dd', {},
            el('strong', {class: `opm-onednn-${onednn}`, text: onednn}),
            el('span', {class: 'opm-muted', text: ` — how we know: ${reason}`})),
        el('dt', {text: 'Hosts'}), el('dd', {text: (o.hosts || []).join(', ') || '–'}),
        el('dt', {text: 'Counts from'}), el('dd', {text: o.counts_from || 'nothing readable'}),
        el('dt', {text: 'Sources'}), el('dd', {},
            Object.entries(o.sources || {}).map(([kind, files]) => el('div', {class: 'opm-source'},
                el('span', {class: 'opm-source-kind', text: `${kind}: `}),
                el('span', {text: files.length ? files.join(', ') : 'none'})))));

    const shares = el('div', {class: 'opm-shares'},
        this.shareBar('Executions', o.modes, 'executions', 'share_of_executions', fmtInt),
        o.modes.eager.time_ns !== null ?
          this.shareBar('Op time (profiled window)', o.modes, 'time_ns', 'share_of_time', fmtNs) :
          el('p', {class: 'opm-muted', text: 'Op time: no profile in this run.'}),
        el('div', {class: 'opm-coverage'},
            el('h3', {text: 'oneDNN coverage'}),
            ['eager', 'graph'].map((mode) => {
              const m = o.modes[mode];
              return el('p', {},
                  swatch(`${mode}_onednn`),
                  el('strong', {text: `${mode}: `}),
                  `${fmtInt(m.onednn_executions)} of ${fmtInt(m.kernel_known_executions)} ` +
                  `executions with a known kernel ran oneDNN (${fmtPct(m.onednn_share_of_known)})`,
                  m.executions > m.kernel_known_executions
                    ? el('span', {class: 'opm-muted',
                      text: `; kernel unknown for ${fmtInt(m.executions - m.kernel_known_executions)}`})
                    : null);
            })));

    const matrix = el('table', {class: 'opm-matrix', id: 'opm-matrix'},
        el('caption', {text: 'Executions (and profiled op time) by mode and kernel class'}),
        el('thead', {}, el('tr', {}, el('th', {text: 'mode'}),
            ['oneDNN', 'stock', 'fused', 'unknown'].map((label) => el('th', {text: label})))),
        el('tbody', {}, ['eager', 'graph'].map((mode) => el('tr', {},
            el('th', {scope: 'row', text: mode}),
            ['onednn', 'stock', 'fused', 'unknown'].map((cls) => {
              const cell = o.matrix.find((c) => c.mode === mode && c.class === cls) ||
                {executions: 0, time_ns: null};
              const key = matrixKey(mode, cls);
              return el('td', {class: cell.executions ? '' : 'opm-zero'},
                  swatch(key), el('span', {class: 'opm-cell-label', text: CLASSES[key].label}),
                  el('strong', {text: fmtInt(cell.executions)}),
                  cell.time_ns !== null && cell.time_ns !== undefined
                    ? el('span', {class: 'opm-muted', text: ` · ${fmtNs(cell.time_ns)}`}) : null);
            })))));

    const functions = el('div', {class: 'opm-functions'},
        el('h3', {text: `tf.functions called (${fmtInt(o.functions_total)})`}),
        o.functions.length ? el('ul', {},
            o.functions.slice(0, 12).map((f) => el('li', {},
                el('code', {text: f.name}), el('span', {class: 'opm-muted', text: ` × ${fmtInt(f.calls)}`}))))
          : el('p', {class: 'opm-muted', text: 'none recorded'}),
        o.functions.length > 12 ? el('p', {class: 'opm-muted',
          text: `and ${fmtInt(o.functions_total - 12)} more`}) : null);

    const parts = [el('div', {class: 'opm-overview-grid'}, facts, shares), matrix, functions];
    if (o.onednn_verbose && o.onednn_verbose.primitives.length) {
      const v = o.onednn_verbose;
      parts.push(el('details', {class: 'opm-verbose'},
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
      parts.push(el('details', {class: 'opm-warnings'},
          el('summary', {text: `${fmtInt(o.warnings_total)} warning(s) while reading`}),
          el('ul', {}, o.warnings.map((w) => el('li', {text: w})))));
    }
    return parts;
  }

  shareBar(title, modes, field, shareField, fmt) {
    const bar = el('div', {class: 'opm-sharebar', role: 'img',
      'aria-label': `${title}: eager ${fmtPct(modes.eager[shareField])}, graph ${fmtPct(modes.graph[shareField])}`});
    for (const mode of ['eager', 'graph']) {
      const share = modes[mode][shareField] || 0;
      const part = el('span', {class: `opm-share opm-share-${mode}`,
        text: share >= 0.12 ? `${mode} ${fmtPct(share)}` : ''});
      part.style.flexGrow = String(share);
      bar.append(part);
    }
    return el('div', {class: 'opm-share-block'},
        el('h3', {text: title}), bar,
        el('div', {class: 'opm-share-legend'},
            ['eager', 'graph'].map((mode) => el('span', {},
                el('strong', {text: `${mode} `}),
                `${fmt(modes[mode][field])} (${fmtPct(modes[mode][shareField])})`))));
  }

  // ------------------------------------------------------------ op table

  setTable(patch) {
    this.store.set({table: {...this.store.state.table, ...patch}});
    this.loadTable();
  }

  toggleFilter(value, on) {
    const filters = new Set(this.store.state.table.filters);
    if (on) filters.add(value); else filters.delete(value);
    this.setTable({filters: [...filters], page: 0});
  }

  async loadTable() {
    const {run, table} = this.store.state;
    if (!run) return;
    if (this.tableRequest) this.tableRequest.abort();
    const controller = new AbortController();
    this.tableRequest = controller;
    let page;
    try {
      page = await api.opTypes(run, table, controller.signal);
    } catch (err) {
      if (err.name === 'AbortError') return;
      this.tableBody.replaceChildren(el('tr', {}, el('td', {colspan: 6},
          message(err.message, 'error'))));
      return;
    }
    this.renderTable(page);
  }

  renderTable(page) {
    const {table} = this.store.state;
    const header = (label, sort, cls = '') => {
      const active = table.sort === sort;
      const arrow = active ? (table.order === 'desc' ? ' ▼' : ' ▲') : '';
      return el('th', {class: `${cls} opm-sortable${active ? ' opm-sorted' : ''}`,
        'aria-sort': active ? (table.order === 'desc' ? 'descending' : 'ascending') : 'none',
        scope: 'col'},
      el('button', {type: 'button', class: 'opm-sort', 'data-sort': sort,
        onclick: () => this.setTable({sort, page: 0,
          order: active ? (table.order === 'desc' ? 'asc' : 'desc') : (sort === 'op_type' ? 'asc' : 'desc')}),
        text: label + arrow}));
    };
    this.tableHead.replaceChildren(el('tr', {},
        header('Op type', 'op_type'),
        header('Eager', 'eager', 'opm-num'),
        el('th', {scope: 'col', text: 'Eager kernels'}),
        header('Graph', 'graph', 'opm-num'),
        el('th', {scope: 'col', text: 'Graph kernels'}),
        header('Time (eager, graph)', 'time', 'opm-num')));
    if (!page.rows.length) {
      this.tableBody.replaceChildren(el('tr', {}, el('td', {colspan: 6, class: 'opm-muted',
        text: page.all_total ? 'No op type matches the filters.' : 'No op executions recorded in this run.'})));
    } else {
      this.tableBody.replaceChildren(...page.rows.map((row) => {
        const tr = el('tr', {class: row.op_type === this.store.state.op ? 'opm-selected' : '',
          tabindex: 0, 'data-op': row.op_type,
          onclick: () => this.showOp(row.op_type),
          onkeydown: (e) => { if (e.key === 'Enter') this.showOp(row.op_type); }},
        el('td', {class: 'opm-op'},
            el('span', {text: row.op_type}),
            row.kernel_differs ? el('span', {class: 'opm-tag', text: 'kernel differs'}) : null,
            row.fused ? el('span', {class: 'opm-tag', text: 'fused'}) : null),
        el('td', {class: 'opm-num', text: fmtInt(row.eager.executions)}),
        el('td', {}, kernelCell('eager', row.eager)),
        el('td', {class: 'opm-num', text: fmtInt(row.graph.executions)}),
        el('td', {}, kernelCell('graph', row.graph)),
        el('td', {class: 'opm-num opm-muted opm-time'},
            el('div', {title: 'eager op time in the profile', text: fmtNs(row.eager.time_ns)}),
            el('div', {title: 'graph op time in the profile', text: fmtNs(row.graph.time_ns)})));
        return tr;
      }));
    }
    const first = page.total ? page.page * page.page_size + 1 : 0;
    const last = Math.min(page.total, (page.page + 1) * page.page_size);
    this.tableInfo.textContent = `${fmtInt(first)}–${fmtInt(last)} of ${fmtInt(page.total)}` +
      (page.total !== page.all_total ? ` (filtered from ${fmtInt(page.all_total)})` : '');
    this.prevButton.disabled = page.page === 0;
    this.nextButton.disabled = last >= page.total;
  }

  // ------------------------------------------------------------ op detail

  async showOp(op) {
    this.store.set({op});
    for (const tr of this.tableBody.querySelectorAll('tr[data-op]')) {
      tr.classList.toggle('opm-selected', tr.dataset.op === op);
    }
    await this.loadDetail(op);
  }

  async loadDetail(op) {
    const run = this.store.state.run;
    this.detail.replaceChildren(el('p', {class: 'opm-muted', text: `Loading ${op}…`}));
    let d;
    try {
      d = await api.op(run, op);
    } catch (err) {
      this.detail.replaceChildren(message(err.message, 'error'));
      return;
    }
    if (run !== this.store.state.run || op !== this.store.state.op) return;
    this.detail.replaceChildren(...this.renderDetail(d));
  }

  renderDetail(d) {
    const parts = [el('h3', {class: 'opm-detail-title', text: d.op_type})];
    // Explanation first (when the model carries one), else what the evidence says.
    const explanation = d.explanation || d.eager.explanation || d.graph.explanation;
    const block = el('div', {class: 'opm-explanation', id: 'opm-explanation'});
    block.append(el('h4', {text: explanation ? 'Why these kernels' : 'What the evidence says'}));
    if (explanation) {
      for (const [mode, text] of this.explanationParts(d)) {
        block.append(el('p', {}, mode ? el('strong', {text: `${mode}: `}) : null, text));
      }
    }
    if (d.evidence && d.evidence.length) {
      const list = el('ul', {class: explanation ? 'opm-evidence opm-muted' : 'opm-evidence'});
      for (const line of d.evidence) list.append(el('li', {text: line}));
      block.append(list);
    }
    parts.push(block);

    // Kernels per mode.
    const kernels = el('div', {class: 'opm-detail-kernels'});
    for (const mode of ['eager', 'graph']) {
      const stats = d[mode];
      kernels.append(el('div', {class: 'opm-detail-mode'},
          el('h4', {text: `${mode}: ${fmtInt(stats.executions)} executions` +
            (stats.time_ns !== undefined ? ` · ${fmtNs(stats.time_ns)}` : '')}),
          kernelCell(mode, stats),
          ...stats.kernels.flatMap((k) => [...(k.notes || []), ...(k.note ? [k.note] : [])]
              .map((note) => el('p', {class: 'opm-note', text: `${k.name}: ${note}`})))));
    }
    parts.push(kernels);

    const fused = d.fused_into || d.graph.fused_into;
    if (fused && fused.length) {
      parts.push(el('div', {class: 'opm-fused'}, el('h4', {text: 'Fused into'}),
          el('ul', {}, fused.map((f) => el('li', {},
              typeof f === 'string' ? f : [
                el('code', {text: f.kernel || f.name || JSON.stringify(f)}),
                f.executions !== undefined ? ` × ${fmtInt(f.executions)}` : '',
                f.evidence ? [' ', evidenceBadge(f.evidence)] : null,
                f.nodes && f.nodes.length ? el('div', {class: 'opm-muted',
                  text: `node${f.nodes.length > 1 ? 's' : ''}: ${f.nodes.join(', ')}`}) : null])))));
    }

    // Call sites.
    const sites = el('div', {class: 'opm-sites', id: 'opm-sites'}, el('h4', {text: 'Call sites'}));
    for (const mode of ['eager', 'graph']) {
      const list = d.call_sites[mode];
      if (!list.length) continue;
      sites.append(el('h5', {text: mode === 'eager'
        ? `eager: where it was executed (${fmtInt(d.call_sites_total.eager)} site(s))`
        : `graph: where it was traced into a graph (${fmtInt(d.call_sites_total.graph)} site(s))`}));
      for (const site of list) sites.append(this.renderSite(mode, site));
    }
    if (!d.call_sites.eager.length && !d.call_sites.graph.length) {
      sites.append(el('p', {class: 'opm-muted',
        text: 'No call sites: this run has no tfdbg2 dump with stack frames.'}));
    }
    parts.push(sites);

    // Graphs.
    if (d.graphs && d.graphs.length) {
      parts.push(el('div', {class: 'opm-graphs'},
          el('h4', {text: `Graphs that hold it (${fmtInt(d.graphs_total)})`}),
          el('table', {class: 'opm-small-table'},
              el('thead', {}, el('tr', {}, el('th', {text: 'graph'}), el('th', {text: 'inside'}),
                  el('th', {class: 'opm-num', text: 'ops'}), el('th', {class: 'opm-num', text: 'runs'}))),
              el('tbody', {}, d.graphs.map((g) => el('tr', {title: g.op_names.join('\n')},
                  el('td', {}, el('code', {text: g.name || g.graph_id})),
                  el('td', {class: 'opm-muted', text: g.outer || '–'}),
                  el('td', {class: 'opm-num', text: fmtInt(g.ops)}),
                  el('td', {class: 'opm-num', text: fmtInt(g.executions)})))))));
    }
    return parts;
  }

  explanationParts(d) {
    const out = [];
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
    add('eager', d.eager.explanation);
    add('graph', d.graph.explanation);
    return out;
  }

  renderSite(mode, site) {
    const where = `${site.file}:${site.line}`;
    const head = el('div', {class: 'opm-site-head'},
        el('code', {class: 'opm-site-where', text: where}),
        el('span', {class: 'opm-muted', text: ` in ${site.function || '?'}`}),
        el('span', {class: 'opm-count', text: mode === 'eager'
          ? ` × ${fmtInt(site.count)}`
          : ` × ${fmtInt(site.count)} runs of ${fmtInt(site.ops)} op(s)`}));
    const box = el('div', {class: 'opm-site'}, head);
    if (site.snippet) {
      const pre = el('pre', {class: 'opm-snippet'});
      site.snippet.lines.forEach((text, i) => {
        const number = site.snippet.first_line + i;
        pre.append(el('span', {class: number === site.snippet.line ? 'opm-line opm-line-hit' : 'opm-line'},
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
  }

  // ------------------------------------------------------------ timeline

  async loadTimelineSpan(keepView = false) {
    const o = this.overview;
    if (o && o.run !== this.store.state.run) return;
    const span = o && o.profile ? o.profile.span_ns : 0;
    this.timeline.setSpan(span, keepView);
    this.renderTimelineInfo();
  }

  renderTimelineInfo() {
    const d = this.timeline.data;
    const o = this.overview;
    if (!o || !o.profile.events) {
      this.timelineInfo.textContent = 'no profile in this run';
      return;
    }
    const view = this.timeline.view;
    this.timelineInfo.textContent = `window ${fmtNs(view.start)} – ${fmtNs(view.end)} of ` +
      `${fmtNs(o.profile.span_ns)}` + (d ? ` · ${fmtInt(d.total)} ops` +
      (d.level === 'bins' ? ' (binned; zoom in for single ops)' : '') : '');
  }

  // ------------------------------------------------------------ compare

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
  }

  defaultCompare() {
    const ready = this.readyRuns || [];
    if (ready.length < 2) {
      this.compareBody.replaceChildren(message('Comparing needs two runs. Put them under one ' +
        'logdir, e.g. logs/onednn_on and logs/onednn_off, and start TensorBoard on logs/.'));
      return;
    }
    if (this.compareChosen) return;
    const a = this.store.state.run;
    const other = ready.filter((r) => r.run !== a);
    const current = ready.find((r) => r.run === a);
    const b = other.find((r) => current && r.onednn_state !== current.onednn_state &&
      r.tensorflow_version === current.tensorflow_version) ||
      other.find((r) => current && r.onednn_state !== current.onednn_state) || other[0];
    this.compareA.value = a;
    this.compareB.value = b.run;
    this.loadCompare(false);
  }

  async loadCompare(user = true) {
    if (user) this.compareChosen = true;
    const a = this.compareA.value;
    const b = this.compareB.value;
    if (!a || !b) return;
    const ticket = this.compareTicket = (this.compareTicket || 0) + 1;
    let c;
    try {
      c = await api.compare(a, b, this.compareChanged.checked);
    } catch (err) {
      if (ticket === this.compareTicket) {
        this.compareBody.replaceChildren(message(err.message, 'error'));
      }
      return;
    }
    if (ticket !== this.compareTicket) return;   // a newer choice of runs is on its way
    this.compareBody.replaceChildren(...this.renderCompare(c));
  }

  renderCompare(c) {
    const runLabel = (r) => `${r.run} (TF ${r.tensorflow_version || '?'}, oneDNN ` +
      `${r.onednn_state || 'unknown'}: ${r.onednn_reason || r.onednn_source || 'no evidence'})`;
    const parts = [el('p', {},
        el('strong', {text: 'A: '}), runLabel(c.a), el('br'),
        el('strong', {text: 'B: '}), runLabel(c.b), el('br'),
        `${fmtInt(c.total)} op type(s) listed; the kernel changed for ${fmtInt(c.kernel_changes)}.`)];
    if (!c.rows.length) {
      parts.push(message('No op type differs in its modes or kernels.'));
      return parts;
    }
    const side = (mode, s) => {
      if (!s.executions && !s.kernels.length) return el('span', {class: 'opm-none', text: '–'});
      return el('span', {},
          el('span', {class: 'opm-num-inline', text: fmtInt(s.executions)}),
          s.kernels.length ? s.kernels.map((k, i) => {
            // The server's kernel class (why.kernel_class), one per kernel name.
            const cls = (s.classes || [])[i] || 'unknown';
            const key = classKey(mode, {class: cls, onednn: cls === 'onednn'});
            return el('span', {class: 'opm-chip'}, swatch(key),
                el('span', {class: 'opm-kernel-name', text: k}));
          }) : el('span', {class: 'opm-muted', text: ' kernel ?'}));
    };
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
        modeCell('eager', r.eager), modeCell('graph', r.graph),
        el('td', {}, r.changes.map((ch) => el('span', {class: ch.endsWith(' kernel')
          ? 'opm-tag opm-tag-strong' : 'opm-tag', text: ch}))))))));
    if (c.total > c.rows.length) {
      parts.push(el('p', {class: 'opm-muted', text: `Showing the first ${fmtInt(c.rows.length)}.`}));
    }
    return parts;
  }
}
