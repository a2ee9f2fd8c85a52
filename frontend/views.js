// The Op Mode tab's App: the toolbar, legend, run list and loading progress, and the
// sections put together. Each section's DOM and behaviour lives in its own module
// (overview.js: the answer at a glance and the overview; table.js: the op table;
// detail.js: the op detail; timelineview.js: the timeline card around timeline.js's
// canvas; compare.js: comparing two runs), as methods mixed into App, so they share the
// store and one another's elements as before. dom.js holds the widgets they share;
// data.js the data layer (routes, the store, formatting).
//
// In: JSON from data.js. Out: DOM nodes. Every string that comes from the user's files
// (op names, kernels, graph names, paths, source lines, run names) is inserted as text
// (textContent / text nodes), never as HTML.

import {buildLegend, CLASSES, FUSED, kindKey, LEGEND_ORDER, watchTheme} from './colors.js';
import {api, failure, fmtBytes, fmtInt, Store} from './data.js';
import {el, message, swatch} from './dom.js';
import {CompareSection} from './compare.js';
import {DetailSection} from './detail.js';
import {HotspotsSection} from './hotspots.js';
import {FunctionsSection} from './functions.js';
import {OverviewSection} from './overview.js';
import {TableSection} from './table.js';
import {TimelineSection} from './timelineview.js';
import {loadVocab, V} from './vocab.js';

/**
 * The sections' methods, mixed into App's prototype below, and the fields they keep on it.
 * @typedef {typeof OverviewSection & typeof TableSection & typeof DetailSection &
 *           typeof TimelineSection & typeof CompareSection & typeof HotspotsSection &
 *           import('./hotspots.js').HotspotsFields &
 *           typeof FunctionsSection & import('./functions.js').FunctionsFields &
 *           import('./overview.js').OverviewFields & import('./table.js').TableFields &
 *           import('./timelineview.js').TimelineFields &
 *           import('./compare.js').CompareFields} Sections
 */
/** @typedef {import('./data.js').RunEntry} RunEntry */
/** @typedef {import('./data.js').Progress} Progress */
/**
 * What the tab shows: the runs and the loader's progress, the run chosen (and when it was
 * loaded), the op table's query, the op type whose detail is open, the trace whose calls
 * alone the timeline shows (its concrete function's name; '' for all).
 * @typedef {{runs: !Array<RunEntry>, progress: ?Progress, run: ?string, loadedAt: ?number,
 *   table: !import('./data.js').TableQuery, op: ?string, timelineGraph: string}} AppState
 */
/** App's base: nothing at run time, the sections' methods and fields to the type checker. */
const WithSections = /** @type {new () => Sections} */ (/** @type {unknown} */ (class {}));

export class App extends WithSections {
  /** @param {!HTMLElement} root */
  constructor(root) {
    super();
    this.root = root;
    this.store = new Store(/** @type {AppState} */ ({
      runs: [], progress: null, run: null, loadedAt: null,
      table: {sort: 'total', order: 'desc', filters: [], q: '', page: 0, pageSize: 50, graph: '',
        graphName: ''},
      op: null, timelineGraph: '',
    }));
    this.pollTimer = 0;
    /** @type {?string} a run picked while still loading: shown once ready (selectRun) */
    this.wanted = null;
    /** @type {?AbortController} the op table's page request in flight (table.js) */
    this.tableRequest = null;
    // Built by buildLayout() (in start()) before anything reads them.
    /** @type {!HTMLElement} */ this.status;
    /** @type {!HTMLElement} */ this.progressFill;
    /** @type {!HTMLElement} */ this.progressBar;
    /** @type {!HTMLElement} */ this.progressText;
    /** @type {!HTMLElement} */ this.exportLinks;
    /** @type {!HTMLSelectElement} */ this.runSelect;
    /** @type {?HTMLAnchorElement} the toolbar's trace link (renderExports) */
    this.traceLink = null;
    // this.timeline, the timeline card's canvas: built by buildTimeline() (timelineview.js)
    // in buildLayout(); only the theme's callback may run before, and it checks.
  }

  async start() {
    this.root.classList.add('opm-body');
    this.root.replaceChildren();
    await loadVocab();  // the words every section names (vocab.js), before any renders
    buildLegend();
    this.stopTheme = watchTheme(this.root, () => this.timeline && this.timeline.draw());
    this.buildLayout();
    this.setState('loading');
    this.status.replaceChildren(message('Scanning the logdir…', 'loading'));
    await this.refreshRuns();
  }

  /**
   * What the page shows: "loading" (no run listed yet), "waiting" (runs listed, but none
   * read yet or the one picked still loading: the run list and one message), "empty"
   * (nothing to show in the logdir), "ready". Only "ready" shows the cards; the others
   * show one message.
   * @param {string} state
   */
  setState(state) {
    this.root.dataset.state = state;
  }

  buildLayout() {
    // Toolbar.
    this.runSelect = el('select', {id: 'opm-run', 'aria-label': 'Run',
      onchange: () => this.selectRun(this.runSelect.value)});
    // A drawn bar, not <progress>: its width is exactly the share done (0% draws empty).
    this.progressFill = el('span', {class: 'opm-progress-fill'});
    this.progressBar = el('span', {class: 'opm-progress', role: 'progressbar',
      'aria-label': 'Loading the logdir', 'aria-valuemin': 0, 'aria-valuemax': 100,
      'aria-valuenow': 0}, this.progressFill);
    this.progressText = el('span', {class: 'opm-progress-text'});
    this.exportLinks = el('span', {class: 'opm-exports'});
    const toolbar = el('header', {class: 'opm-toolbar'},
        el('h1', {class: 'opm-title', text: 'Op Mode'}),
        el('label', {class: 'opm-field'}, el('span', {text: 'Run'}), this.runSelect),
        el('span', {class: 'opm-progress-box'}, this.progressBar, this.progressText),
        this.exportLinks);

    // Legend. It sticks together with the toolbar, in one opaque block: two
    // sticky elements each guessing the other's height left a gap to scroll under.
    /** @param {string} key */
    const legendItem = (key) => el('span', {class: 'opm-legend-item', role: 'listitem',
      'data-key': key, title: CLASSES[key].description}, swatch(key),
    el('span', {text: CLASSES[key].label}));
    // Table and timeline share the mode x oneDNN colours; removed is the table's only
    // (a removed op has no box), tf.function calls and tfdbg's ops the timeline's only.
    /**
     * @param {string} id
     * @param {string} title
     * @param {...(!HTMLElement|!Array<!HTMLElement>)} items
     */
    const group = (id, title, ...items) => el('span', {class: 'opm-legend-group', role: 'list',
      id, 'aria-label': title},
    el('span', {class: 'opm-legend-group-title', 'aria-hidden': 'true', text: `${title}:`}), ...items);
    const legend = el('div', {class: 'opm-legend', role: 'group', 'aria-label': 'Colour legend'},
        group('opm-legend-both', 'Table and timeline',
            LEGEND_ORDER.filter((k) => ![V.KIND_REMOVED, 'function', 'debug'].includes(k)).map(legendItem),
            el('span', {class: 'opm-legend-item', role: 'listitem', title: FUSED.description},
                swatch(kindKey(V.GRAPH, V.KIND_ONEDNN), true), el('span', {text: FUSED.label}))),
        group('opm-legend-table', 'Table only', legendItem(V.KIND_REMOVED)),
        group('opm-legend-timeline', 'Timeline only', legendItem('function'), legendItem('debug')));
    const sticky = el('div', {class: 'opm-sticky'}, toolbar, legend);
    this.root.append(sticky);
    // The op detail sticks just below this block, whose height changes as the
    // toolbar and legend wrap on narrow windows.
    new ResizeObserver(() => this.root.style.setProperty('--opm-sticky-h', `${sticky.offsetHeight}px`))
        .observe(sticky);

    this.status = el('div', {class: 'opm-status', id: 'opm-status', 'aria-live': 'polite'});
    this.root.append(this.status);

    this.buildOverview();
    this.buildHotspots();
    this.buildFunctions();
    this.buildTable();
    this.buildTimeline();
    this.buildCompare();
  }

  // ------------------------------------------------------------ runs and progress

  async refreshRuns() {
    clearTimeout(this.pollTimer);
    let data;
    try {
      data = await api.runs(this.wanted);
    } catch (caught) {
      const err = failure(caught);
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
    const wanted = this.wanted === null ? undefined : runs.find((r) => r.run === this.wanted);
    if (wanted && wanted.status === 'ready') {
      // Rendered while the page still waits; the state below then shows it.
      this.wanted = null;
      await this.selectRun(wanted.run);
    } else if (this.wanted !== null && (!wanted || wanted.status !== 'loading')) {
      this.wanted = null;  // gone, or it failed: its error is said below
      if (this.store.state.run) this.runSelect.value = this.store.state.run;
    }
    let {run} = this.store.state;
    const current = runs.find((r) => r.run === run);
    if (this.wanted !== null) {
      // Picked while loading: shown once read (above), not replaced by another run.
    } else if (!current || current.status !== 'ready') {
      // The run with the most evidence: most executions counted, then the newest load.
      const pick = [...ready].sort((x, y) => (y.executions || 0) - (x.executions || 0) ||
        (y.loaded_at || 0) - (x.loaded_at || 0) || (x.run < y.run ? -1 : 1))[0];
      if (pick) this.setState('ready');
      if (pick) await this.selectRun(pick.run);
    } else if (current.loaded_at !== this.store.state.loadedAt) {
      await this.selectRun(current.run, true);
    }
    const failed = runs.filter((r) => r.status === 'error');
    if (this.wanted !== null) {
      // Picked while loading: the loader reads it next (it was asked for); nothing else is
      // shown meanwhile, so that no other run's answers stand under its name.
      this.setState('waiting');
      this.status.replaceChildren(message(`Loading run ${this.wanted}: it is read next, ` +
        'ahead of the runs queued before it; it shows here once read.', 'loading'));
    } else if (progress.logdir_set === false) {
      this.setState('empty');
      this.status.replaceChildren(message('TensorBoard was started without a logdir: start it ' +
        'with --logdir pointing at your logs (e.g. tensorboard --logdir logs/fit).'));
    } else if (!runs.length && progress.scans && !progress.scanning) {
      this.setState('empty');
      this.status.replaceChildren(message('Nothing to show yet: the logdir holds no tfdbg2 dump ' +
        '(tfdbg_events.*), profile (plugins/profile/*/*.xplane.pb) or TensorFlow log (*.txt, ' +
        '*.log). Write one, e.g. with tf.debugging.experimental.enable_dump_debug_info(logdir), ' +
        'and this tab picks it up within a minute.', 'empty'));
    } else if (!ready.length && failed.length && failed.length === runs.length) {
      this.setState('empty');
      this.status.replaceChildren(...failed.map((r) =>
        message(`Run ${r.run} could not be loaded: ${r.error}`, 'error')));
    } else if (!ready.length) {
      // Runs listed, none read yet: the run list is shown, to pick the one to read next.
      this.setState(runs.length ? 'waiting' : 'loading');
      this.status.replaceChildren(message(runs.length
        ? `Loading ${runs.length === 1 ? 'the run' : `${fmtInt(runs.length)} runs`}… ` +
          'the tab fills in as soon as one is read' +
          (runs.length > 1 ? '; a run picked in the list is read next.' : '.')
        : 'Scanning the logdir…', 'loading'));
    } else {
      this.setState('ready');
      this.status.replaceChildren(...failed.map((r) =>
        message(`Run ${r.run} could not be loaded: ${r.error}`, 'error')));
    }
    if (progress.error) this.status.append(message(progress.error, 'error'));
    const busy = !progress.scans || progress.scanning || progress.runs_done < progress.runs_total;
    this.pollTimer = setTimeout(() => this.refreshRuns(),
        this.wanted !== null ? 500 : busy ? 1500 : 15000);
  }

  /** @param {!Progress} p */
  renderProgress(p) {
    const share = p.bytes_total ? Math.min(1, Math.max(0, p.bytes_done / p.bytes_total)) : 0;
    const pct = Math.round(share * 1000) / 10;
    this.progressFill.style.width = `${pct}%`;
    this.progressBar.setAttribute('aria-valuenow', String(pct));
    const done = p.runs_done >= p.runs_total && !p.scanning && p.scans > 0;
    this.progressBar.hidden = done;
    this.progressText.textContent = done
      ? (p.runs_total ? `${fmtInt(p.runs_total)} run${p.runs_total === 1 ? '' : 's'} loaded` : '')
      : `loading ${p.loading || '…'}: ${fmtInt(p.runs_done)}/${fmtInt(p.runs_total)} runs, ` +
        `${fmtInt(p.files_done)}/${fmtInt(p.files_total)} files, ` +
        `${fmtBytes(p.bytes_done)} of ${fmtBytes(p.bytes_total)}`;
  }

  /** @param {!Array<RunEntry>} runs */
  renderRunSelect(runs) {
    const selected = this.wanted !== null ? this.wanted : this.store.state.run;
    this.runSelect.replaceChildren(...runs.map((r) => {
      const label = `${r.run === '.' ? '. (logdir)' : r.run}` +
        (r.status === 'ready' ? '' : r.status === 'error' ? ' (error)' : ' (loading…)');
      // A loading run can be picked: it is then read next (selectRun).
      return el('option', {value: r.run, disabled: r.status === 'error',
        selected: r.run === selected, text: label});
    }));
  }

  /**
   * @param {string} run
   * @param {boolean=} reload the run was loaded again (it grew): show it anew
   */
  async selectRun(run, reload = false) {
    const entry = this.store.state.runs.find((r) => r.run === run);
    if (entry && entry.status === 'loading') {
      await this.want(run);
      return;
    }
    if (!entry || entry.status !== 'ready') return;
    if (this.wanted !== null) {
      this.wanted = null;  // another run picked instead of the one still loading
      this.setState('ready');
      this.status.replaceChildren();
    }
    if (run === this.store.state.run && !reload) return;
    const changed = run !== this.store.state.run;
    // A trace the table and timeline were filtered to is of the run shown before.
    this.store.set({run, loadedAt: entry.loaded_at,
      op: changed ? null : this.store.state.op,
      table: changed ? {...this.store.state.table, page: 0, graph: '', graphName: ''}
        : this.store.state.table});
    this.runSelect.value = run;
    this.renderExports(run);
    if (changed) {
      this.closeDetail();
      // The span of a run is known once its overview is: until then the timeline loads.
      if (this.timeline) {  // built by buildLayout()
        this.timeline.setLoading();
        this.setTimelineGraph('');
      }
      this.renderTimelineInfo();
    }
    await Promise.all([
      this.loadOverview().then(() => this.loadTimelineSpan(!changed)),
      this.loadTable(),
      this.loadHotspots(),
      this.loadFunctions(),
      this.store.state.op ? this.loadDetail(this.store.state.op) : null]);
    this.defaultCompare();
  }

  /**
   * Wait for a run picked while it loads: the run list asked with it (``want``) has the
   * loader read it next; refreshRuns shows it once it is ready.
   * @param {string} run
   */
  async want(run) {
    this.wanted = run;
    this.runSelect.value = run;
    await this.refreshRuns();
  }

  /** @param {string} run */
  renderExports(run) {
    /**
     * @param {string} format
     * @param {string} label
     * @param {string} help
     */
    const link = (format, label, help) => el('a', {href: api.exportUrl(run, format),
      download: '', class: 'opm-link', title: help, text: label});
    this.exportLinks.replaceChildren(el('span', {class: 'opm-muted', text: 'Export:'}),
        link('csv', 'CSV', 'op table as CSV'),
        link('json', 'JSON', 'op table as JSON (the CLI\'s contract)'),
        this.traceLink = link('trace', 'Perfetto trace', 'Chrome trace JSON of the timeline\'s ' +
          'window: open it in ui.perfetto.dev; track and slice names carry mode and kernel'));
  }
}

// The sections' methods, on App's prototype: `this` is the app in each.
Object.assign(App.prototype, OverviewSection, TableSection, DetailSection, TimelineSection,
    CompareSection, HotspotsSection, FunctionsSection);
