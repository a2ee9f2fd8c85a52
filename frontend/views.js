// The Op Mode tab's DOM: toolbar, legend, the answer at a glance, overview,
// op table with its detail (beside the table on wide windows, a drawer over it
// on narrower ones), timeline and run comparison.
//
// In: JSON from data.js. Out: DOM nodes. Every string that comes from the
// user's files (op names, kernels, graph names, paths, source lines, run
// names) is inserted as text (textContent / text nodes), never as HTML.

import {CLASSES, FUSED, LEGEND_ORDER, classKey, kernelKind, kindKey, watchTheme} from './colors.js';
import {Store, api, fmtAt, fmtBytes, fmtInt, fmtNs, fmtNumbersIn, fmtPct} from './data.js';
import {Timeline, tickStep} from './timeline.js';

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

/**
 * An op, kernel or node name as text that may wrap after "/" and "_" (a <wbr> there),
 * never inside a word: TensorFlow's names are one "word" of path parts.
 * @param {string} name
 * @return {!Array<(string|!HTMLElement)>}
 */
export function breakable(name) {
  const out = [];
  for (const part of String(name).split(/(?<=[/_])/)) {
    if (out.length) out.push(document.createElement('wbr'));
    out.push(part);
  }
  return out;
}

function swatch(key, fused = false) {
  const entry = CLASSES[key] || CLASSES.unknown;
  const node = el('span', {class: `opm-swatch opm-swatch-${key}` + (fused ? ' opm-fused-mark' : ''),
    'aria-hidden': 'true'});
  node.style.background = entry.color;
  return node;
}

const EVIDENCE_TITLE = {
  log: 'named by the TensorFlow log (Instantiating kernel / Process node)',
  profile: 'named by a profiler event <node>:<kernel>',
  inferred: 'inferred from rules, not observed',
};

function evidenceBadge(evidence) {
  const title = EVIDENCE_TITLE[evidence] || evidence;
  return el('span', {class: `opm-badge opm-ev-${evidence}`, title, text: evidence});
}

/** The words of a kernel's kind next to its name. */
function kindWord(kind) {
  return {onednn: 'oneDNN', stock: 'stock', removed: 'no kernel (removed by grappler)',
    unknown: 'unknown'}[kind] || kind;
}

function kernelNotes(kernel) {
  const notes = [...(kernel.notes || []), ...(kernel.note ? [kernel.note] : [])];
  if (kernel.fused_into && kernel.fused_into.length) {
    notes.push(`fused into ${kernel.fused_into.slice(0, 3).join(', ')}`);
  }
  return notes;
}

/** A kernel chip: colour swatch, name, oneDNN/stock word, fused tag, evidence badge. */
function kernelChip(mode, kernel, showCount) {
  const kind = kernelKind(kernel);
  const key = classKey(mode, kernel);
  const notes = kernelNotes(kernel);
  const removed = kind === 'removed';
  const unknown = kind === 'unknown';
  return el('span', {class: `opm-chip opm-chip-${key}` + (kernel.fused ? ' opm-chip-fused' : ''),
    title: [removed || unknown ? kindWord(kind) : `${kernel.name}: ${kindWord(kind)}`,
      ...notes].join('\n'), 'data-kind': kind},
  swatch(key, kernel.fused),
  removed ? null : el('span', {class: 'opm-kernel-name'}, unknown ? 'kernel ?' : breakable(kernel.name)),
  el('span', {class: `opm-kind opm-kind-${kind}`, text: kindWord(kind)}),
  kernel.fused ? el('span', {class: 'opm-tag opm-tag-fused', text: 'fused'}) : null,
  kernel.folded ? el('span', {class: 'opm-tag', title: 'constant-folded by grappler',
    text: 'folded'}) : null,
  evidenceBadge(kernel.evidence),
  showCount ? el('span', {class: 'opm-count', text: `×${fmtInt(kernel.executions)}`}) : null);
}

function unknownChip(count) {
  return el('span', {class: 'opm-chip opm-chip-unknown', 'data-kind': 'unknown',
    title: 'executed, but no log line or profiler event names the kernel'},
  swatch('unknown'), el('span', {class: 'opm-kernel-name', text: 'kernel ?'}),
  el('span', {class: 'opm-kind opm-kind-unknown', text: 'unknown'}),
  count ? el('span', {class: 'opm-count', text: `×${fmtInt(count)}`}) : null);
}

function kernelCell(mode, stats, alwaysCount = false) {
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
 */
function uncountedCell(u, withNote = true) {
  return el('div', {class: 'opm-uncounted'},
      el('div', {class: 'opm-chips'}, u.kernels.map((k) => el('span', {
        class: `opm-chip opm-chip-graph_${k.kind}`, 'data-kind': k.kind,
        title: `${k.name}: ${kindWord(k.kind)}, seen in the profile`},
      swatch(kindKey('graph', k.kind)), el('span', {class: 'opm-kernel-name'}, breakable(k.name)),
      el('span', {class: `opm-kind opm-kind-${k.kind}`, text: kindWord(k.kind)}),
      evidenceBadge('profile'),
      el('span', {class: 'opm-count', text: `×${fmtInt(k.events)} events`})))),
      withNote ? el('p', {class: 'opm-note opm-uncounted-note', text: fmtNumbersIn(u.note)}) : null);
}

/** oneDNN, stock, partly oneDNN, or no kernel: the verdict of a mode in words. */
function verdict(stats) {
  const ran = stats.kernels.filter((k) => ['onednn', 'stock'].includes(kernelKind(k)));
  const dnn = ran.filter((k) => kernelKind(k) === 'onednn').reduce((n, k) => n + k.executions, 0);
  const all = ran.reduce((n, k) => n + k.executions, 0);
  if (!all) return stats.kernels.some((k) => kernelKind(k) === 'removed') ? 'no kernel ran' : 'kernel unknown';
  if (dnn === all) return 'oneDNN';
  if (!dnn) return 'not oneDNN (stock)';
  return `partly oneDNN (${fmtInt(dnn)} of ${fmtInt(all)})`;
}

/** "≥ " where the dump's circular buffer dropped older records: the count is a floor. */
function atLeast(stats) {
  return stats && stats.lower_bound ? '≥ ' : '';
}

/**
 * Executions per dtype the dump recorded (mixed precision: float16/bfloat16 beside
 * float32), each with the kernels it ran in the title.
 */
function dtypeLine(stats) {
  const split = (stats && stats.dtypes) || [];
  if (!split.length) return null;
  return el('div', {class: 'opm-dtypes', 'data-dtypes': split.map((e) => e.label).join(',')},
      el('span', {class: 'opm-dtypes-label', text: 'dtype: '}),
      split.map((e, i) => el('span', {class: 'opm-dtype' + (e.low_precision ? ' opm-dtype-low' : ''),
        'data-dtype': e.label,
        title: `${e.label}: ${e.kernels.map((k) => `${k.name} ×${fmtInt(k.executions)}`).join(', ')}`},
      i ? ' · ' : '', `${e.label} ×${fmtInt(e.executions)}`)));
}

/** Executions per device (MirroredStrategy replicas), in the order of the run's devices. */
function deviceLine(stats, devices) {
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
function rovingRows(tbody) {
  const rows = () => [...tbody.querySelectorAll('tr[data-op]')];
  const all = rows();
  if (!all.length) return;
  const current = all.find((r) => r.classList.contains('opm-selected')) || all[0];
  for (const r of all) r.tabIndex = r === current ? 0 : -1;
  if (tbody.dataset.roving) return;
  tbody.dataset.roving = '1';
  tbody.addEventListener('keydown', (e) => {
    const list = rows();
    const at = list.indexOf(e.target.closest('tr[data-op]'));
    if (at < 0) return;
    const to = {ArrowDown: at + 1, ArrowUp: at - 1, Home: 0, End: list.length - 1}[e.key];
    if (to === undefined) return;
    e.preventDefault();
    const next = list[Math.max(0, Math.min(list.length - 1, to))];
    for (const r of list) r.tabIndex = r === next ? 0 : -1;
    next.focus();
  });
  tbody.addEventListener('focusin', (e) => {
    const row = e.target.closest('tr[data-op]');
    if (!row) return;
    for (const r of rows()) r.tabIndex = r === row ? 0 : -1;
  });
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
    this.stopTheme = watchTheme(this.root, () => this.timeline && this.timeline.draw());
    this.buildLayout();
    this.setState('loading');
    this.status.replaceChildren(message('Scanning the logdir…', 'loading'));
    await this.refreshRuns();
  }

  /**
   * What the page shows: "loading" (no run ready yet), "empty" (nothing to show in
   * the logdir), "ready". Only "ready" shows the cards; the others show one message.
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
    const legendItem = (key) => el('span', {class: 'opm-legend-item', role: 'listitem',
      'data-key': key, title: CLASSES[key].description}, swatch(key),
    el('span', {text: CLASSES[key].label}));
    // Table and timeline share the mode x oneDNN colours; "removed" is the table's only
    // (a removed op has no box), tf.function calls and tfdbg's ops the timeline's only.
    const group = (id, title, ...items) => el('span', {class: 'opm-legend-group', role: 'list',
      id, 'aria-label': title},
    el('span', {class: 'opm-legend-group-title', 'aria-hidden': 'true', text: `${title}:`}), ...items);
    const legend = el('div', {class: 'opm-legend', role: 'group', 'aria-label': 'Colour legend'},
        group('opm-legend-both', 'Table and timeline',
            LEGEND_ORDER.filter((k) => !['removed', 'function', 'debug'].includes(k)).map(legendItem),
            el('span', {class: 'opm-legend-item', role: 'listitem', title: FUSED.description},
                swatch('graph_onednn', true), el('span', {text: FUSED.label}))),
        group('opm-legend-table', 'Table only', legendItem('removed')),
        group('opm-legend-timeline', 'Timeline only', legendItem('function'), legendItem('debug')));
    const sticky = el('div', {class: 'opm-sticky'}, toolbar, legend);
    this.root.append(sticky);
    // The op detail sticks just below this block, whose height changes as the
    // toolbar and legend wrap on narrow windows.
    new ResizeObserver(() => this.root.style.setProperty('--opm-sticky-h', `${sticky.offsetHeight}px`))
        .observe(sticky);

    this.status = el('div', {class: 'opm-status', id: 'opm-status', 'aria-live': 'polite'});
    this.root.append(this.status);

    // The answer at a glance: kernels per mode of the oneDNN op types.
    this.glanceBody = el('div', {class: 'opm-glance'});
    this.glanceTitle = el('h2', {class: 'opm-card-title', text: 'At a glance'});
    this.root.append(el('section', {class: 'opm-card', id: 'opm-glance-card'},
        this.glanceTitle, this.glanceBody));

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
    this.root.addEventListener('keydown', (e) => {
      if (e.key === 'Escape' && this.detail.classList.contains('opm-open')) this.closeDetail();
    });
    this.tableWrap = el('div', {class: 'opm-table-scroll'},
        el('table', {class: 'opm-table', id: 'opm-table'}, this.tableHead, this.tableBody));
    const skip = el('a', {href: '#opm-timeline-card', class: 'opm-skip', id: 'opm-skip-table',
      text: 'Skip the op table, to the timeline',
      onclick: (e) => { e.preventDefault(); this.timeline.canvas.focus(); }});
    this.root.append(section('Op types', 'opm-ops', skip,
        el('div', {class: 'opm-filters'},
            this.searchBox,
            filter('both', 'runs in both modes', 'op types with eager and graph executions'),
            filter('differs', 'kernel differs between modes',
                'the kernels that ran (not counting executions grappler removed or ' +
                'constant-folded, or whose kernel is unknown) differ between eager and graph, ' +
                'or one mode ran oneDNN and the other did not'),
            filter('no_onednn', 'no oneDNN kernel', 'no _Mkl* kernel seen in either mode'),
            filter('low_precision', 'mixed precision', 'op types with float16 or bfloat16 executions')),
        el('div', {class: 'opm-split'},
            el('div', {class: 'opm-table-wrap'},
                this.tableWrap,
                el('p', {class: 'opm-hint opm-time-note', id: 'opm-time-note',
                  text: 'Op time, from the profiled window: eager = EagerExecute time, which ' +
                    'includes dispatch (finding and preparing the kernel) as well as the kernel; ' +
                    'graph = the kernel\u2019s own compute event.'}),
                el('div', {class: 'opm-pager'}, this.prevButton, this.tableInfo, this.nextButton)),
            this.detail)));

    // Timeline.
    this.timelineHost = el('div', {class: 'opm-timeline-host'});
    this.timelineInfo = el('span', {class: 'opm-muted', id: 'opm-timeline-info'});
    this.windowExport = el('a', {class: 'opm-link', id: 'opm-window-export', download: '',
      href: '#', hidden: true, text: 'Export this window as a trace',
      title: 'Chrome trace JSON of the window shown: open it in ui.perfetto.dev'});
    const debugBox = el('input', {type: 'checkbox', id: 'opm-debug',
      onchange: (e) => this.timeline.setDebug(e.target.checked)});
    this.root.append(section('Timeline', 'opm-timeline-card',
        el('div', {class: 'opm-filters'},
            el('button', {type: 'button', id: 'opm-zoom-in', text: 'Zoom in',
              title: 'Zoom in on the ops (or where the pointer was), not the empty centre',
              onclick: () => this.timeline.zoom(0.5)}),
            el('button', {type: 'button', id: 'opm-zoom-out', text: 'Zoom out',
              onclick: () => this.timeline.zoom(2)}),
            el('button', {type: 'button', text: 'Reset', onclick: () => this.timeline.reset()}),
            el('label', {class: 'opm-check'}, debugBox,
                el('span', {text: 'show tfdbg instrumentation'})),
            this.timelineInfo, this.windowExport),
        el('p', {class: 'opm-hint', text: 'Wheel to zoom, drag to pan, double-click to reset; ' +
          'hover a box for its op, kernel and duration. The strip on top shows where the ops are ' +
          'in the whole run: click it to go there. Keyboard: + and − zoom, arrows pan, Enter ' +
          'inspects a box, then arrows move between boxes and lanes, Esc stops. Zoomed out, ' +
          'boxes are bins: height = busy time. Boxes are coloured as in the table; fused ' +
          'kernels are outlined.'}),
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
      // The run with the most evidence: most executions counted, then the newest load.
      const pick = [...ready].sort((x, y) => (y.executions || 0) - (x.executions || 0) ||
        (y.loaded_at || 0) - (x.loaded_at || 0) || (x.run < y.run ? -1 : 1))[0];
      if (pick) this.setState('ready');
      if (pick) await this.selectRun(pick.run);
    } else if (current.loaded_at !== this.store.state.loadedAt) {
      await this.selectRun(run, true);
    }
    const failed = runs.filter((r) => r.status === 'error');
    if (progress.logdir_set === false) {
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
      this.setState('loading');
      this.status.replaceChildren(message(runs.length
        ? `Loading ${runs.length === 1 ? 'the run' : `${fmtInt(runs.length)} runs`}… ` +
          'the tab fills in as soon as one is read.'
        : 'Scanning the logdir…', 'loading'));
    } else {
      this.setState('ready');
      this.status.replaceChildren(...failed.map((r) =>
        message(`Run ${r.run} could not be loaded: ${r.error}`, 'error')));
    }
    if (progress.error) this.status.append(message(progress.error, 'error'));
    const busy = !progress.scans || progress.scanning || progress.runs_done < progress.runs_total;
    this.pollTimer = setTimeout(() => this.refreshRuns(), busy ? 1500 : 15000);
  }

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
      this.closeDetail();
      // The span of a run is known once its overview is: until then the timeline loads.
      this.timeline.setLoading();
      this.renderTimelineInfo();
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
        this.traceLink = link('trace', 'Perfetto trace', 'Chrome trace JSON of the timeline\'s ' +
          'window: open it in ui.perfetto.dev; track and slice names carry mode and kernel'));
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
      this.glanceBody.replaceChildren();
      return;
    }
    if (run !== this.store.state.run) return;
    this.overview = o;
    this.renderGlance(o);
    this.overviewBody.replaceChildren(...this.renderOverview(o).filter(Boolean));
    this.overviewBody.dataset.run = run;   // which run the overview shows (for tests and tools)
  }

  /** The answer first: per oneDNN op type, the kernel of each mode with its evidence. */
  renderGlance(o) {
    const onednn = o.onednn_state || 'unknown';
    const g = o.glance || {rows: [], total: 0, basis: 'onednn'};
    this.glanceTitle.textContent = g.basis === 'onednn'
      ? 'At a glance: op types that ran a oneDNN kernel' : 'At a glance: op types that ran in both modes';
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
    if (!g.rows.length) {
      this.glanceBody.replaceChildren(head, el('p', {class: 'opm-muted',
        text: 'No op type ran a oneDNN kernel, and none ran in both modes.'}));
      return;
    }
    const cell = (row, mode) => el('td', {class: 'opm-glance-mode', 'data-mode': mode},
        row[mode].executions
          ? [el('span', {class: 'opm-glance-count', text: `${atLeast(row[mode])}${fmtInt(row[mode].executions)}×`}),
            el('span', {class: 'opm-verdict', text: verdict(row[mode])}),
            kernelCell(mode, row[mode], true)]
          : el('span', {class: 'opm-none', text: `did not run ${mode === 'eager' ? 'eagerly' : 'in a graph'}`}));
    const table = el('table', {class: 'opm-glance-table', id: 'opm-glance'},
        el('thead', {}, el('tr', {}, el('th', {scope: 'col', text: 'Op type'}),
            el('th', {scope: 'col', text: 'Eager: executions, kernel, evidence'}),
            el('th', {scope: 'col', text: 'Graph (tf.function): executions, kernel, evidence'}))),
        el('tbody', {}, g.rows.map((row) => el('tr', {'data-op': row.op_type, tabindex: -1,
          title: 'Click for the why, call sites and graphs',
          onclick: () => this.showOp(row.op_type),
          onkeydown: (e) => { if (e.key === 'Enter') this.showOp(row.op_type); }},
        el('th', {scope: 'row', class: 'opm-op'}, el('span', {class: 'opm-op-name'}, breakable(row.op_type)),
            row.kernel_differs ? el('span', {class: 'opm-tag opm-tag-strong', title: row.kernel_differs_why,
              text: 'kernel differs'}) : null),
        cell(row, 'eager'), cell(row, 'graph')))));
    const more = g.total > g.rows.length ? el('p', {class: 'opm-muted',
      text: `and ${fmtInt(g.total - g.rows.length)} more in the op table below`}) : null;
    rovingRows(table.tBodies[0]);
    this.glanceBody.replaceChildren(...[head, table, more].filter(Boolean));
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
        el('dt', {text: 'CPU'}), el('dd', {id: 'opm-cpu'}, (o.cpu && o.cpu.features)
          ? [el('span', {class: 'opm-cpu-features'}, o.cpu.features.map((f, i) => [i ? ' ' : '', el('code', {text: f})])),
            el('span', {class: 'opm-muted', text: ` — from ${o.cpu.source}`})]
          : el('span', {class: 'opm-muted', text: (o.cpu && o.cpu.note) || 'unknown'})),
        el('dt', {text: 'Hosts'}), el('dd', {text: (o.hosts || []).join(', ') || '–'}),
        el('dt', {text: 'Counts from'}), el('dd', {text: o.counts_from || 'nothing readable'}),
        el('dt', {text: 'Sources'}), el('dd', {},
            el('details', {class: 'opm-sources'},
                el('summary', {text: Object.entries(o.sources || {}).map(([kind, files]) =>
                  `${kind}: ${fmtInt(files.length)}`).join(' · ') || 'none'}),
                Object.entries(o.sources || {}).map(([kind, files]) => el('div', {class: 'opm-source'},
                    el('span', {class: 'opm-source-kind', text: `${kind}: `}),
                    el('span', {text: files.length ? files.join(', ') : 'none'}))))));

    const timeTitle = 'Op time in the profiled window (eager: EagerExecute time, including dispatch; ' +
      'graph: kernel compute time)';
    const outside = ['eager', 'graph'].filter((m) => o.modes[m].time_outside_table_ns);
    const dump = o.dump;
    const dumpNote = dump && (dump.uncounted_total || dump.outside_table.length) ? el('p', {
      class: 'opm-hint opm-dump-coverage', id: 'opm-dump-coverage'},
    el('strong', {text: 'Not counted: '}),
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
            ['eager', 'graph'].map((mode) => {
              const m = o.modes[mode];
              const notes = [];
              if (m.removed_executions) notes.push(`${fmtInt(m.removed_executions)} removed by grappler (no kernel)`);
              if (m.unknown_executions) notes.push(`kernel unknown for ${fmtInt(m.unknown_executions)}`);
              return el('p', {},
                  swatch(`${mode}_onednn`),
                  el('strong', {text: `${mode}: `}),
                  `${fmtInt(m.onednn_executions)} of ${fmtInt(m.kernel_known_executions)} ` +
                  `executions with a known kernel ran oneDNN (${fmtPct(m.onednn_share_of_known)})`,
                  notes.length ? el('span', {class: 'opm-muted', text: `; ${notes.join('; ')}`}) : null);
            })));

    const kinds = o.kinds || [];
    const kindCols = [['onednn', 'oneDNN'], ['stock', 'stock'],
      ['removed', 'no kernel (removed by grappler)'], ['unknown', 'unknown kernel']];
    const matrix = el('table', {class: 'opm-matrix', id: 'opm-matrix'},
        el('caption', {text: 'Executions (and op time, where executions are) by mode and kernel'}),
        el('thead', {}, el('tr', {}, el('th', {text: 'mode'}),
            kindCols.map(([, label]) => el('th', {text: label})))),
        el('tbody', {}, ['eager', 'graph'].map((mode) => el('tr', {'data-mode': mode},
            el('th', {scope: 'row', text: mode}),
            kindCols.map(([kind]) => {
              const cell = kinds.find((c) => c.mode === mode && c.kind === kind) ||
                {executions: 0, time_ns: null, fused_executions: 0};
              const key = kindKey(mode, kind);
              const showTime = cell.executions > 0 && kind !== 'removed' &&
                cell.time_ns !== null && cell.time_ns !== undefined;
              return el('td', {class: cell.executions ? '' : 'opm-zero', 'data-kind': kind,
                'data-executions': cell.executions},
              swatch(key), el('span', {class: 'opm-cell-label', text: CLASSES[key].label}),
              el('strong', {text: fmtInt(cell.executions)}),
              showTime ? el('span', {class: 'opm-muted', title: timeTitle,
                text: ` · ${fmtNs(cell.time_ns)}`}) : null,
              cell.fused_executions ? el('div', {class: 'opm-cell-fused'}, swatch(key, true),
                  `${fmtInt(cell.fused_executions)} fused`) : null);
            }))), this.xlaRow(o, kindCols.length)));
    const unattributed = ['eager', 'graph'].filter((m) => o.modes[m].time_unattributed_ns);
    const matrixNote = unattributed.length ? el('p', {class: 'opm-hint'},
        unattributed.map((m) => `${m}: ${fmtNs(o.modes[m].time_unattributed_ns)} of op time ` +
          'went to no kernel the counts name (e.g. the profile ran longer than the dump)').join('; ')) : null;

    const functions = el('div', {class: 'opm-functions'},
        el('h3', {text: `tf.functions called (${fmtInt(o.functions_total)})`}),
        o.functions.length ? el('ul', {},
            o.functions.slice(0, 12).map((f) => el('li', {},
                el('code', {text: f.name}), el('span', {class: 'opm-muted', text: ` × ${fmtInt(f.calls)}`}))))
          : el('p', {class: 'opm-muted', text: 'none recorded'}),
        o.functions.length > 12 ? el('p', {class: 'opm-muted',
          text: `and ${fmtInt(o.functions_total - 12)} more`}) : null);

    const parts = [this.lowerBoundNote(o, 'opm-lower-bound'),
      el('div', {class: 'opm-overview-grid'}, facts, shares), matrix, matrixNote,
      this.unknownsBlock(o), this.dtypesBlock(o), this.devicesBlock(o),
      el('details', {class: 'opm-more'}, el('summary', {text: `tf.functions (${fmtInt(o.functions_total)})`}),
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
  }

  /** "Counts are a lower bound" when the dump's circular buffer dropped older records. */
  lowerBoundNote(o, id) {
    const cut = o.lower_bound || {};
    const modes = ['eager', 'graph'].filter((m) => cut[m]);
    if (!modes.length) return null;
    const what = modes.map((m) => `${fmtInt(cut[m].records)} ${m === 'eager'
      ? 'eager execution' : 'graph execution trace'} records`).join(' and ');
    const first = cut[modes[0]];
    return el('div', {class: 'opm-message opm-message-warn opm-lower-bound', id, role: 'note',
      'data-modes': modes.join(',')},
    el('strong', {text: 'Counts are a lower bound. '}),
    `The dump's circular buffer kept only the last ${what} (${first.how}): ${modes.join(' and ')} ` +
      'counts (marked ≥) leave out what ran before. ',
    el('span', {}, el('strong', {text: 'What to do: '}), `${first.fix}.`));
  }

  /** XLA-compiled functions: a mode of their own (graph, compiled by XLA), with no op rows. */
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
  }

  /** Unknown kernels grouped by why, each with how to find out. */
  unknownsBlock(o) {
    const u = o.unknowns;
    if (!u || !u.executions) return null;
    const group = (g) => el('li', {class: 'opm-unknown-group'},
        el('div', {}, el('strong', {text: g.what === 'whether it ran'
          ? 'Unknown whether it ran, because ' : 'Kernel unknown, because '}), fmtNumbersIn(g.why), '.'),
        g.how ? el('div', {}, el('strong', {text: 'How to find out: '}), g.how) : null,
        el('div', {class: 'opm-muted'}, `${fmtInt(g.executions)} execution(s): `, opsText(g)));
    const opsText = (g) => g.ops.slice(0, 6).map((op) => `${op.op_type} (${op.mode} ×${fmtInt(op.executions)})`)
        .join(', ') + (g.ops.length > 6 ? ', …' : '');
    return el('div', {class: 'opm-unknowns', id: 'opm-unknowns'},
        el('h3', {}, swatch('unknown'), ` Kernel unknown for ${fmtInt(u.executions)} execution(s)`),
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
  }

  /** Executions by dtype, per mode; mixed precision (float16/bfloat16) said first. */
  dtypesBlock(o) {
    const d = o.dtypes;
    if (!d || !d.recorded) return null;
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
        line('eager'), line('graph'));
  }

  /** Executions per device (MirroredStrategy replicas), where the dump's records name several. */
  devicesBlock(o) {
    const devices = o.devices || [];
    if (!devices.length) return null;
    return el('div', {class: 'opm-device-totals', id: 'opm-devices'},
        el('h3', {text: 'Executions per device (the device each record names)'}),
        el('table', {class: 'opm-small-table'},
            el('thead', {}, el('tr', {}, el('th', {scope: 'col', text: 'device'}),
                el('th', {scope: 'col', class: 'opm-num', text: 'eager'}),
                el('th', {scope: 'col', class: 'opm-num', text: 'graph'}))),
            el('tbody', {}, devices.map((d) => el('tr', {'data-device': d.device},
                el('th', {scope: 'row'}, el('code', {text: d.device})),
                el('td', {class: 'opm-num', text: fmtInt(d.eager)}),
                el('td', {class: 'opm-num', text: fmtInt(d.graph)}))))),
        (o.devices_none && o.devices_none.eager) ? el('p', {class: 'opm-hint',
          text: `${fmtInt(o.devices_none.eager)} eager execution(s) of ops without outputs name no device.`}) : null);
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
    return el('div', {class: 'opm-share-block', 'data-field': field},
        el('h3', {text: title}), bar,
        el('div', {class: 'opm-share-legend'},
            ['eager', 'graph'].map((mode) => el('span', {'data-mode': mode,
              'data-value': modes[mode][field] === null ? '' : modes[mode][field]},
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
    const floor = (mode) => (cut.includes(mode) ? ' ≥' : '');
    const floorTitle = 'at least: the dump\u2019s circular buffer dropped older records';
    this.tableHead.replaceChildren(el('tr', {},
        header('Op type', 'op_type'),
        header(`Eager${floor('eager')}`, 'eager', 'opm-num', cut.includes('eager') ? floorTitle : null),
        el('th', {scope: 'col', text: 'Eager kernels'}),
        header(`Graph${floor('graph')}`, 'graph', 'opm-num', cut.includes('graph') ? floorTitle : null),
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
          onkeydown: (e) => { if (e.key === 'Enter') this.showOp(row.op_type); }},
        el('td', {class: 'opm-op'},
            el('span', {class: 'opm-op-name'}, breakable(row.op_type)),
            row.kernel_differs ? el('span', {class: 'opm-tag opm-tag-strong',
              title: row.kernel_differs_why || 'the kernels differ between the modes',
              text: 'kernel differs'}) : null),
        el('td', {class: 'opm-num', text: `${atLeast(row.eager)}${fmtInt(row.eager.executions)}`}),
        el('td', {}, kernelCell('eager', row.eager),
            row.low_precision || row.dtypes_differ ? dtypeLine(row.eager) : null),
        row.graph.uncounted
          ? el('td', {class: 'opm-num', 'data-uncounted': '1'},
              el('span', {class: 'opm-tag opm-tag-uncounted', title: row.graph.uncounted.note,
                text: 'not counted'}))
          : el('td', {class: 'opm-num', text: `${atLeast(row.graph)}${fmtInt(row.graph.executions)}`}),
        el('td', {}, row.graph.uncounted ? uncountedCell(row.graph.uncounted)
          : kernelCell('graph', row.graph),
        row.low_precision || row.dtypes_differ ? dtypeLine(row.graph) : null),
        devices.map((d) => el('td', {class: 'opm-num opm-muted opm-device', 'data-device': d},
            ['eager', 'graph'].map((mode) => el('div', {},
                el('span', {class: 'opm-time-label', text: `${mode} `}),
                fmtInt(((row[mode].devices || {})[d]) || 0))))),
        el('td', {class: 'opm-num opm-muted opm-time'},
            el('div', {title: 'eager: EagerExecute time in the profile, including dispatch'},
                el('span', {class: 'opm-time-label', text: 'eager '}), fmtNs(row.eager.time_ns)),
            el('div', {title: 'graph: the kernel\u2019s compute time in the profile'},
                el('span', {class: 'opm-time-label', text: 'graph '}), fmtNs(row.graph.time_ns))));
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
  }

  // ------------------------------------------------------------ op detail

  async showOp(op) {
    this.store.set({op});
    for (const tr of this.root.querySelectorAll('tr[data-op]')) {
      tr.classList.toggle('opm-selected', tr.dataset.op === op);
    }
    this.openDetail();
    await this.loadDetail(op);
  }

  detailPlaceholder() {
    this.detailBody.replaceChildren(el('p', {class: 'opm-muted',
      text: 'Click an op type to see its kernels, evidence, call sites and graphs.'}));
  }

  /** Show the detail: beside the table on wide windows, a drawer over the page otherwise. */
  openDetail() {
    this.detail.classList.add('opm-open');
    this.root.classList.add('opm-detail-open');
    // Beside the table it may be above or below the fold: bring it into view.
    const box = this.detail.getBoundingClientRect();
    if (box.bottom < 0 || box.top > window.innerHeight) {
      this.detail.scrollIntoView({block: 'nearest'});
    }
  }

  closeDetail() {
    this.detail.classList.remove('opm-open');
    this.root.classList.remove('opm-detail-open');
    this.store.set({op: null});
    for (const tr of this.root.querySelectorAll('tr.opm-selected')) tr.classList.remove('opm-selected');
    this.detailPlaceholder();
  }

  async loadDetail(op) {
    const run = this.store.state.run;
    this.detailBody.replaceChildren(el('h3', {class: 'opm-detail-title'}, breakable(op)),
        el('p', {class: 'opm-muted', text: 'Loading…'}));
    let d;
    try {
      d = await api.op(run, op);
    } catch (err) {
      this.detailBody.replaceChildren(message(err.message, 'error'));
      return;
    }
    if (run !== this.store.state.run || op !== this.store.state.op) return;
    this.detailBody.replaceChildren(...this.renderDetail(d));
    this.detail.scrollTop = 0;
    this.announcer.textContent = `${d.op_type}: ` + ['eager', 'graph'].map((mode) => {
      const stats = d[mode];
      if (stats.uncounted) return `${mode} not counted by the dump`;
      if (!stats.executions) return `${mode} did not run`;
      return `${mode} ${verdict(stats)}`;
    }).join('; ');
  }

  renderDetail(d) {
    const parts = [el('h3', {class: 'opm-detail-title'}, el('span', {}, breakable(d.op_type)),
        el('span', {class: 'opm-muted opm-detail-total', text: ` · ${fmtInt(d.total)} executions`}))];

    // The answer: per mode, executions, whether oneDNN, the kernels with evidence and counts.
    const answer = el('div', {class: 'opm-answer', id: 'opm-answer'});
    for (const mode of ['eager', 'graph']) {
      const stats = d[mode];
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
            el('strong', {text: mode}), ` did not run ${mode === 'eager' ? 'eagerly' : 'in a graph'}`));
        continue;
      }
      answer.append(el('div', {class: 'opm-answer-mode', 'data-mode': mode},
          el('div', {class: 'opm-answer-head'},
              el('strong', {text: mode}),
              el('span', {text: ` ${stats.lower_bound ? 'at least ' : ''}${fmtInt(stats.executions)} executions · `}),
              el('span', {class: 'opm-verdict', text: verdict(stats)}),
              stats.time_ns !== undefined ? el('span', {class: 'opm-muted',
                title: mode === 'eager' ? 'EagerExecute time, including dispatch'
                  : 'the kernel\u2019s compute time',
                text: ` · ${fmtNs(stats.time_ns)} op time`}) : null),
          kernelCell(mode, stats, true),
          this.dtypeSplit(mode, stats),
          deviceLine(stats, Object.keys(stats.devices || {}).sort()),
          // Why a kernel is unknown (or what grappler did) is said, not hidden in a tooltip.
          stats.kernels.filter((k) => kernelKind(k) === 'unknown' && kernelNotes(k).length)
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
    const why = d.why || {};
    const block = el('div', {class: 'opm-explanation', id: 'opm-explanation'});
    block.append(el('h4', {text: 'Why'}));
    let any = false;
    for (const mode of ['eager', 'graph']) {
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

    const fold = (title, id, ...children) => el('details', {class: 'opm-fold', id},
        el('summary', {text: title}), ...children);
    if (any && full.length) {
      parts.push(fold('Full explanation', 'opm-full-explanation',
          full.map(([mode, text]) => el('p', {}, mode ? el('strong', {text: `${mode}: `}) : null,
              fmtNumbersIn(text)))));
    }
    const notes = ['eager', 'graph'].flatMap((mode) => d[mode].kernels.flatMap((k) =>
      kernelNotes(k).map((note) => `${mode} · ${k.name}: ${note}`)));
    if ((d.evidence && d.evidence.length) || notes.length) {
      parts.push(fold('Evidence and notes', 'opm-evidence-box',
          el('ul', {class: 'opm-evidence'}, (d.evidence || []).map((line) =>
            el('li', {text: fmtNumbersIn(line)}))),
          notes.length ? el('ul', {class: 'opm-evidence opm-muted'}, notes.map((n) =>
            el('li', {text: fmtNumbersIn(n)}))) : null));
    }

    const fused = d.fused_into || d.graph.fused_into;
    if (fused && fused.length) {
      parts.push(fold(`Fused into (${fmtInt(fused.length)})`, 'opm-fused-box',
          el('ul', {class: 'opm-fused'}, fused.map((f) => el('li', {},
              typeof f === 'string' ? f : [
                el('code', {text: f.kernel || f.name || JSON.stringify(f)}),
                f.executions !== undefined ? ` × ${fmtInt(f.executions)}` : '',
                f.evidence ? [' ', evidenceBadge(f.evidence)] : null,
                f.nodes && f.nodes.length ? el('div', {class: 'opm-muted',
                  text: `node${f.nodes.length > 1 ? 's' : ''}: ${f.nodes.join(', ')}`}) : null])))));
    }

    // Call sites.
    const sites = el('div', {class: 'opm-sites', id: 'opm-sites'});
    for (const mode of ['eager', 'graph']) {
      const list = d.call_sites[mode];
      if (!list.length) continue;
      sites.append(el('h5', {text: mode === 'eager'
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
                  el('thead', {}, el('tr', {}, el('th', {text: 'graph'}), el('th', {text: 'inside'}),
                      el('th', {class: 'opm-num', text: 'ops'}), el('th', {class: 'opm-num', text: 'runs'}))),
                  el('tbody', {}, d.graphs.map((g) => el('tr', {title: g.op_names.join('\n')},
                      el('td', {}, el('code', {text: g.name || g.graph_id})),
                      el('td', {class: 'opm-muted', text: g.outer || '–'}),
                      el('td', {class: 'opm-num', text: fmtInt(g.ops)}),
                      el('td', {class: 'opm-num', text: fmtInt(g.executions)}))))))));
    }
    return parts;
  }

  /** Per dtype: executions and the kernels they ran (float16 MatMul stock, float32 oneDNN). */
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
                k.kind === 'removed' || k.kind === 'unknown' ? null
                  : el('span', {class: 'opm-kernel-name'}, breakable(k.name)),
                el('span', {class: `opm-kind opm-kind-${k.kind}`, text: kindWord(k.kind)}),
                e.kernels.length > 1 ? el('span', {class: 'opm-count', text: `×${fmtInt(k.executions)}`}) : null)))))));
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
    if (!o || o.run !== this.store.state.run) return;   // still loading, or it failed
    const span = o.profile ? o.profile.span_ns : 0;
    this.timeline.setSpan(span, keepView);
    this.renderTimelineInfo();
  }

  renderTimelineInfo() {
    const d = this.timeline.data;
    const o = this.overview;
    if (!o || o.run !== this.store.state.run) {
      this.timelineInfo.textContent = 'loading…';
      return;
    }
    if (!o.profile.events) {
      this.timelineInfo.textContent = 'no profile in this run';
      return;
    }
    const view = this.timeline.view;
    // As precise as the window is narrow: "5.801240 s – 5.801360 s (120.0 µs)".
    const step = tickStep(view.end - view.start, 100);
    const shown = this.timeline.visibleCount();
    this.timelineInfo.textContent = `window ${fmtAt(view.start, step)} – ${fmtAt(view.end, step)} ` +
      `(${fmtNs(view.end - view.start)}) of ${fmtNs(o.profile.span_ns)}` +
      (d && shown !== null ? (shown ? ` · ${fmtInt(shown)} ops` +
        (d.level === 'bins' ? ' (binned; zoom in for single ops)' : '') : ' · no ops here') : '');
    this.renderWindowExport();
  }

  /** The trace exports the window shown (the toolbar's link and the timeline's). */
  renderWindowExport() {
    const run = this.store.state.run;
    if (!run || !this.timeline.span) {
      this.windowExport.hidden = true;
      return;
    }
    const view = this.timeline.view;
    const whole = view.start <= 0 && view.end >= this.timeline.span;
    const extra = whole ? {} : {start: Math.floor(view.start), end: Math.ceil(view.end) + 1};
    if (this.timeline.debug) extra.debug = true;
    const href = api.exportUrl(run, 'trace', extra);
    this.windowExport.hidden = false;
    this.windowExport.setAttribute('href', href);
    this.windowExport.textContent = whole ? 'Export the trace (whole run)' : 'Export this window as a trace';
    if (this.traceLink) this.traceLink.setAttribute('href', href);
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
    const one = ready.length < 2;
    for (const input of [this.compareA, this.compareB, this.compareChanged]) input.disabled = one;
    this.compareHelp.textContent = one
      ? 'Comparing needs a second run: there is only one, so A and B cannot differ.' : '';
    this.markSameRun();
  }

  /** B never offers the run chosen as A: comparing a run with itself says nothing. */
  markSameRun() {
    for (const option of this.compareB.options) {
      option.disabled = option.value === this.compareA.value;
    }
    if (this.compareB.value === this.compareA.value) {
      const other = [...this.compareB.options].find((o) => !o.disabled);
      if (other) this.compareB.value = other.value;
    }
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
    this.markSameRun();
    this.compareB.value = b.run;
    this.loadCompare(false);
  }

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
            const key = classKey(mode, {name: k, class: cls, onednn: k.startsWith('_Mkl')});
            return el('span', {class: 'opm-chip'}, swatch(key),
                key === 'removed' ? el('span', {class: 'opm-kind opm-kind-removed',
                  text: 'no kernel (removed by grappler)'})
                  : el('span', {class: 'opm-kernel-name', text: k}));
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
