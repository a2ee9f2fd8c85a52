// The Op Mode tab's timeline card: zoom buttons, the window's text and its trace
// export around timeline.js's canvas, and the chip of the one trace it may be filtered to
// (the Functions section sets it, with the op table's). Methods of App (views.js).

import {api, fmtAt, fmtInt, fmtNs} from './data.js';
import {el, section} from './dom.js';
import {tickStep, Timeline} from './timeline.js';

/** @typedef {import('./views.js').App} App */
/**
 * What the timeline card keeps on the app (buildTimeline): its elements and the canvas
 * (built before anything reads it but the theme's callback, which checks; views.js).
 * @typedef {{timelineHost: !HTMLElement, timelineInfo: !HTMLElement,
 *   windowExport: !HTMLAnchorElement, timelineGraphFilter: !HTMLElement,
 *   timeline: !Timeline}} TimelineFields
 */

// `this` in each method is the App these methods are mixed into (views.js).
export const TimelineSection = /** @satisfies {ThisType<App>} */ ({
  buildTimeline() {
    // Timeline.
    this.timelineHost = el('div', {class: 'opm-timeline-host'});
    this.timelineInfo = el('span', {class: 'opm-muted', id: 'opm-timeline-info'});
    this.windowExport = el('a', {class: 'opm-link', id: 'opm-window-export', download: '',
      href: '#', hidden: true, text: 'Export this window as a trace',
      title: 'Chrome trace JSON of the window shown: open it in ui.perfetto.dev'});
    // Shown while the timeline holds one trace's calls (the Functions section sets it).
    this.timelineGraphFilter = el('span', {class: 'opm-graph-filter', id: 'opm-timeline-graph-filter',
      hidden: true});
    const debugBox = el('input', {type: 'checkbox', id: 'opm-debug',
      /** @param {!Event} e */
      onchange: (e) => this.timeline.setDebug(/** @type {!HTMLInputElement} */ (e.target).checked)});
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
            this.timelineGraphFilter, this.timelineInfo, this.windowExport),
        el('p', {class: 'opm-hint', text: 'Wheel to zoom, drag to pan, double-click to reset; ' +
          'hover a box for its op, kernel and duration. The strip on top shows where the ops are ' +
          'in the whole run: click it to go there. Keyboard: + and − zoom, arrows pan, Enter ' +
          'inspects a box, then arrows move between boxes and lanes, Esc stops. Zoomed out, ' +
          'boxes are bins: height = busy time. Boxes are coloured as in the table; fused ' +
          'kernels are outlined.'}),
        this.timelineHost));
    this.timeline = new Timeline(this.timelineHost, async (start, end, maxEvents, debug, graph, signal) => {
      // A run is chosen: the canvas fetches only once selectRun() gave it the run's span.
      const run = /** @type {string} */ (this.store.state.run);
      const data = await api.timeline(run, start, end, maxEvents, debug, graph, signal);
      // Which run, and which trace's calls, the canvas shows (for tests and tools).
      this.timelineHost.dataset.run = run;
      this.timelineHost.dataset.graph = data.graph || '';
      return data;
    });
    this.timeline.onChange = () => this.renderTimelineInfo();
  },

  /**
   * Show only the calls of one trace's concrete function and the graph ops inside them
   * ('' for everything), and say so in the chip.
   * @param {string} graph
   */
  setTimelineGraph(graph) {
    this.store.set({timelineGraph: graph});
    this.timeline.setGraph(graph);
    this.renderTimelineGraphFilter();
    this.renderTimelineInfo();
  },

  /** The chip of the one trace the timeline is filtered to, with its button to show all
   * (which clears the op table's filter too: the two show the same trace). */
  renderTimelineGraphFilter() {
    const graph = this.store.state.timelineGraph;
    this.timelineGraphFilter.hidden = !graph;
    this.timelineGraphFilter.replaceChildren(...(graph ? [
      el('span', {text: 'only the calls of trace '}), el('code', {text: graph}),
      el('span', {text: ' and the graph ops inside them'}),
      el('button', {type: 'button', class: 'opm-graph-filter-clear', id: 'opm-timeline-graph-clear',
        'aria-label': 'Show the whole timeline', title: 'Show the whole timeline', text: '×',
        onclick: () => this.clearGraph()}),
    ] : []));
  },

  /** @param {boolean=} keepView keep the zoom (the same run, reloaded because it grew) */
  async loadTimelineSpan(keepView = false) {
    const o = this.overview;
    if (!o || o.run !== this.store.state.run) return;   // still loading, or it failed
    const span = o.profile ? o.profile.span_ns : 0;
    this.timeline.setSpan(span, keepView);
    this.renderTimelineInfo();
  },

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
  },

  /** The trace exports the window shown (the toolbar's link and the timeline's). */
  renderWindowExport() {
    const run = this.store.state.run;
    if (!run || !this.timeline.span) {
      this.windowExport.hidden = true;
      return;
    }
    const view = this.timeline.view;
    const whole = view.start <= 0 && view.end >= this.timeline.span;
    /** @type {!Object<string, (number|boolean|string)>} */
    const extra = whole ? {} : {start: Math.floor(view.start), end: Math.ceil(view.end) + 1};
    if (this.timeline.debug) extra.debug = true;
    if (this.timeline.graph) extra.graph = this.timeline.graph;
    const href = api.exportUrl(run, 'trace', extra);
    this.windowExport.hidden = false;
    this.windowExport.setAttribute('href', href);
    this.windowExport.textContent = whole ? 'Export the trace (whole run)' : 'Export this window as a trace';
    if (this.traceLink) this.traceLink.setAttribute('href', href);
  },
});
