// The timeline: a canvas with one lane per mode (tf.function calls, eager
// ops, graph ops), each op a box coloured by mode x oneDNN (colors.js).
//
// In: a function that fetches a window of the run's profile
// (GET timeline?start&end&max_events&debug&graph: single events, or bins when zoomed
// out; with graph, only one trace's calls and the graph ops inside them). Out: drawing,
// zoom (wheel, buttons), pan (drag), hover details in a tooltip (text only). Only the
// visible window is ever fetched; while a fetch is pending the last data is redrawn at
// the new scale, so zoom and pan stay smooth. Above the lanes, a strip shows where in
// the whole run the ops are and which part the window shows (click or drag it to move
// there). By keyboard: +/- zoom (on the ops, not an empty centre), arrows pan, Enter
// inspects the box nearest the centre, then arrows move between boxes (left/right) and
// lanes (up/down), Escape stops; what is inspected is said in a live region and shown in
// the tooltip.

import {CLASSES, FUSED, timelineKey} from './colors.js';
import {failure, fmtAt, fmtInt, fmtNs, fmtPct} from './data.js';
import {V} from './vocab.js';

/** @typedef {import('./data.js').TimelineWindow} TimelineWindow */
/** @typedef {Extract<TimelineWindow, {level: 'events'}>} EventsWindow */
/** @typedef {Extract<TimelineWindow, {level: 'bins'}>} BinsWindow */
/**
 * An event [lane, start, dur, name id, kernel id, class] or a bin [lane, start, end,
 * count, busy ns, class, name id, oneDNN count] of a window (data.js TimelineWindow).
 * @typedef {!Array<number>} Item
 */
/** An item under the pointer or inspected, and which of the two it is. @typedef {{kind: string, item: !Item}} Hit */

const GUTTER = 112;
const AXIS = 24;
/** @type {!Object<string, number>} px per lane, by the lane's name (the route's lanes) */
const LANE_HEIGHT = {function: 22, eager: 44, graph: 44};
/** @type {!Object<string, string>} */
const LANE_LABEL = {function: 'tf.function calls', eager: 'eager ops', graph: 'graph ops'};
const LANE_GAP = 6;
const MIN_SPAN = 1000; // ns
const STRIP = 18;      // px: the overview strip of the whole run

/** The tab's base font size in px (rem), so the canvas text follows text scaling. */
function remPx() {
  return parseFloat(getComputedStyle(document.documentElement).fontSize) || 16;
}

/**
 * [lane, start, end] of an event or a bin of the window's data.
 * @param {!TimelineWindow} d
 * @param {!Item} item
 * @return {!Array<number>}
 */
function extent(d, item) {
  return d.level === 'events' ? [item[0], item[1], item[1] + item[2]] : [item[0], item[1], item[2]];
}

/**
 * The best tick step (1, 2 or 5 x 10^n ns) for ``count`` ticks over ``width`` ns.
 * @param {number} width
 * @param {number} count
 * @return {number}
 */
export function tickStep(width, count) {
  const target = width / Math.max(2, count);
  const pow = Math.pow(10, Math.floor(Math.log10(Math.max(target, 1))));
  for (const m of [1, 2, 5, 10]) {
    if (pow * m >= target) return pow * m;
  }
  return pow * 10;
}

/**
 * @param {string} name a custom property of the tab's style
 * @param {string} fallback
 * @return {string}
 */
function cssVar(name, fallback) {
  const value = getComputedStyle(document.body).getPropertyValue(name).trim();
  return value || fallback;
}

export class Timeline {
  /**
   * @param {!HTMLElement} host element to draw into
   * @param {function(number, number, number, boolean, string, !AbortSignal): !Promise<!TimelineWindow>} fetchWindow
   *     start, end, max events, debug instrumentation too, the concrete function whose
   *     calls alone to show ('' for all), signal
   */
  constructor(host, fetchWindow) {
    this.fetchWindow = fetchWindow;
    // null: the run's span is not known yet (its overview is loading); 0: no profile.
    /** @type {?number} */
    this.span = null;
    this.view = {start: 0, end: 1};
    /** @type {?TimelineWindow} the window shown, as the timeline route answers it */
    this.data = null;
    this.debug = false;
    /** The concrete function (a trace's graph name) whose calls alone are shown; '' for all. */
    this.graph = '';
    /** @type {boolean} zoom to the filter's calls when the overview comes */
    this.zoomToCalls = false;
    /** @type {?AbortController} */
    this.pending = null;
    this.timer = 0;
    /** @type {?{x: number, start: number, end: number}} a pan by the pointer: where it began */
    this.drag = null;
    this.hover = null;
    this.status = '';
    /** @type {?function(): void} called after the view changes (timelineview.js sets it) */
    this.onChange = null;

    this.root = document.createElement('div');
    this.root.className = 'opm-timeline';
    this.canvas = document.createElement('canvas');
    this.canvas.className = 'opm-timeline-canvas';
    this.canvas.setAttribute('role', 'img');
    this.canvas.setAttribute('aria-label',
        'Timeline of op executions: eager and graph lanes, coloured by mode and oneDNN use');
    this.canvas.tabIndex = 0;
    this.canvas.setAttribute('aria-describedby', 'opm-timeline-keys');
    this.keys = document.createElement('p');
    this.keys.id = 'opm-timeline-keys';
    this.keys.className = 'opm-sr-only';
    this.keys.textContent = 'Keys: plus and minus zoom, left and right arrows pan, Enter inspects ' +
      'the box nearest the centre; then arrows move between boxes and lanes, Escape stops.';
    // What keyboard inspection found, said once per move (not the whole canvas).
    this.live = document.createElement('div');
    this.live.className = 'opm-sr-only opm-timeline-live';
    this.live.setAttribute('aria-live', 'polite');
    this.live.setAttribute('role', 'status');
    /** @type {?Item} what keyboard inspection outlines */
    this.focusItem = null;
    /** @type {?TimelineWindow} the whole run, coarse: the strip's density */
    this.overview = null;
    /** @type {?AbortController} */
    this.overviewPending = null;
    this.stripDrag = false;
    /** @type {!Array<string>} the axis' labels, as last drawn */
    this.tickLabels = [];
    this.strip = document.createElement('canvas');
    this.strip.className = 'opm-timeline-strip';
    this.strip.setAttribute('role', 'img');
    this.strip.setAttribute('aria-label', 'Where the ops are in the whole run, and the part shown');
    this.tooltip = document.createElement('div');
    this.tooltip.className = 'opm-tooltip';
    this.tooltip.hidden = true;
    this.root.append(this.strip, this.canvas, this.tooltip, this.keys, this.live);
    host.appendChild(this.root);

    this.canvas.addEventListener('wheel', (e) => this.onWheel(e), {passive: false});
    this.canvas.addEventListener('mousedown', (e) => this.onDown(e));
    window.addEventListener('mousemove', (e) => this.onMove(e));
    window.addEventListener('mouseup', () => this.onUp());
    this.canvas.addEventListener('mouseleave', () => this.hideTooltip());
    this.canvas.addEventListener('dblclick', () => this.reset());
    this.canvas.addEventListener('keydown', (e) => this.onKey(e));
    this.canvas.addEventListener('blur', () => { if (this.focusItem) this.hideTooltip(); });
    this.strip.addEventListener('mousedown', (e) => { this.stripDrag = true; this.onStrip(e); });
    window.addEventListener('mousemove', (e) => { if (this.stripDrag) this.onStrip(e); });
    window.addEventListener('mouseup', () => { this.stripDrag = false; });
    // The theme (colors.js watchTheme) calls draw() when it changes.
    new ResizeObserver(() => this.draw()).observe(this.root);
  }

  /** The run is loading: say so (not "no profile") until setSpan. */
  setLoading() {
    clearTimeout(this.timer);
    if (this.pending) this.pending.abort();
    this.span = null;
    this.data = null;
    this.overview = null;
    this.focusItem = null;
    this.draw();
  }

  /**
   * @param {number} span ns of the whole profile
   * @param {boolean=} keepView keep the zoom (the same run, reloaded because it grew)
   */
  setSpan(span, keepView = false) {
    if (!span) {
      // No profile: nothing to fetch.
      this.span = 0;
      this.data = null;
      this.view = {start: 0, end: 1};
      this.draw();
      return;
    }
    this.span = Math.max(span, 1);
    if (!keepView || this.view.end > this.span) this.view = {start: 0, end: this.span};
    this.data = null;
    this.focusItem = null;
    this.draw();
    this.schedule(0);
    this.loadOverview();
  }

  /** @param {boolean} debug show tfdbg's instrumentation too */
  setDebug(debug) {
    this.debug = debug;
    this.data = null;
    this.schedule(0);
    this.loadOverview();
  }

  /** @param {string} graph a trace's concrete function: only its calls and the graph ops
   *     inside them are shown (the strip too); '' shows everything again */
  setGraph(graph) {
    if (graph === this.graph) return;
    if (this.pending) this.pending.abort();   // a window of the other filter: not to be drawn
    this.graph = graph;
    this.data = null;
    this.focusItem = null;
    // One trace's calls can be a sliver of the run: show them, once the whole run's
    // filtered overview says where they are; a cleared filter shows the whole run again.
    this.zoomToCalls = Boolean(graph);
    if (!graph) this.reset();
    this.draw();
    this.schedule(0);
    this.loadOverview();
  }

  /**
   * The window that holds the calls of the overview (the filter's trace), a tenth of its
   * width wider on each side; null where it holds none.
   * @param {!TimelineWindow} d
   * @return {?{start: number, end: number}}
   */
  callsWindow(d) {
    const lane = d.lanes.indexOf('function');
    const items = (d.level === 'events' ? d.events : d.bins) || [];
    let start = Infinity;
    let end = -Infinity;
    for (const item of items) {
      if (item[0] !== lane) continue;
      const [, a, z] = extent(d, item);
      start = Math.min(start, a);
      end = Math.max(end, z);
    }
    if (!(end > start)) return null;
    const pad = (end - start) / 10;
    return {start: start - pad, end: end + pad};
  }

  /** The whole run, coarsely (bins, or events when few): the strip's density. */
  async loadOverview() {
    if (this.overviewPending) this.overviewPending.abort();
    if (!this.span) return;   // loading, or no profile: nothing to fetch
    const controller = this.overviewPending = new AbortController();
    const span = this.span;
    try {
      const data = await this.fetchWindow(0, Math.ceil(span || 0) + 1, 600, this.debug, this.graph,
          controller.signal);
      if (controller.signal.aborted || span !== this.span) return;
      this.overview = data;
      const calls = this.zoomToCalls ? this.callsWindow(data) : null;
      this.zoomToCalls = false;
      if (calls) this.setView(calls.start, calls.end);
      this.drawStrip();
    } catch (caught) {
      const err = failure(caught);
      if (err.name !== 'AbortError') this.overview = null;
    }
  }

  /** Ops (events or bins) of the loaded data inside the window shown. */
  visible() {
    const d = this.data;
    if (!d) return [];
    const items = d.level === 'events' ? d.events : d.bins;
    return items.filter((item) => {
      const [, a, z] = extent(d, item);
      return z >= this.view.start && a < this.view.end;
    });
  }

  /** How many ops the window shows (null while unknown). */
  visibleCount() {
    const d = this.data;
    if (!d) return null;
    if (d.level === 'bins') return d.total;
    return this.visible().length;
  }

  /** The point the buttons and keys zoom on (the wheel zooms on the pointer): the
   * inspected box, else the ops nearest the centre (never an empty centre). */
  zoomAnchor() {
    const width = this.view.end - this.view.start;
    /** @param {number} t */
    const frac = (t) => Math.min(1, Math.max(0, (t - this.view.start) / width));
    if (this.focusItem && this.data) {
      const [, a, z] = extent(this.data, this.focusItem);
      return frac((a + z) / 2);
    }
    const items = this.visible();
    if (!items.length) return 0.5;
    const centre = this.view.start + width / 2;
    /** @type {?Array<number>} */
    let best = null;
    let bestDist = Infinity;
    for (const item of items) {
      const [, a, z] = extent(/** @type {!TimelineWindow} */ (this.data), item);  // items are its
      const dist = centre < a ? a - centre : centre > z ? centre - z : 0;
      if (dist < bestDist) { best = [a, z]; bestDist = dist; }
      if (!dist) break;
    }
    return bestDist === 0 || !best ? 0.5 : frac(Math.min(Math.max(centre, best[0]), best[1]));
  }

  reset() {
    if (!this.span) return;
    this.view = {start: 0, end: this.span};
    this.changed();
  }

  /**
   * @param {number} factor
   * @param {?number=} centerFrac where the zoom is anchored, as a share of the width
   */
  zoom(factor, centerFrac = null) {
    if (!this.span) return;
    if (centerFrac === null) centerFrac = this.zoomAnchor();
    const width = this.view.end - this.view.start;
    const center = this.view.start + width * centerFrac;
    let newWidth = Math.min(this.span, Math.max(MIN_SPAN, width * factor));
    let start = center - newWidth * centerFrac;
    this.setView(start, start + newWidth);
  }

  /**
   * @param {number} start ns
   * @param {number} end ns
   */
  setView(start, end) {
    const width = end - start;
    if (start < 0) { start = 0; end = width; }
    const span = /** @type {number} */ (this.span);  // set: callers return while it is not
    if (end > span) { end = span; start = Math.max(0, end - width); }
    this.view = {start, end};
    this.changed();
  }

  changed() {
    this.draw();
    this.schedule(150);
    if (this.onChange) this.onChange();
  }

  lanes() {
    return ['function', V.EAGER, V.GRAPH];
  }

  height() {
    return AXIS + this.lanes().reduce((h, lane) => h + LANE_HEIGHT[lane] + LANE_GAP, 0) + 4;
  }

  /** @param {string} lane @return {number} */
  laneTop(lane) {
    let y = AXIS;
    for (const name of this.lanes()) {
      if (name === lane) return y;
      y += LANE_HEIGHT[name] + LANE_GAP;
    }
    return y;
  }

  plotWidth() {
    return Math.max(10, this.root.clientWidth - GUTTER - 8);
  }

  covers() {
    const d = this.data;
    if (!(d && d.level === 'events' && d.start <= this.view.start && d.end >= this.view.end &&
      d.debug === this.debug && (d.graph || '') === this.graph)) return false;
    // An empty window is asked for itself: the answer says where the nearest ops are.
    return this.visible().length > 0 || (d.start === Math.floor(this.view.start) && !!d.nearest);
  }

  /** @param {number} delay ms */
  schedule(delay) {
    clearTimeout(this.timer);
    if (!this.span || this.covers()) return;
    this.timer = setTimeout(() => this.load(), delay);
  }

  async load() {
    if (this.pending) this.pending.abort();
    const controller = new AbortController();
    this.pending = controller;
    const start = Math.floor(this.view.start);
    const end = Math.ceil(this.view.end) + 1;
    const maxEvents = Math.min(10000, Math.max(500, Math.round(this.plotWidth() * 4)));
    this.status = '';
    try {
      const data = await this.fetchWindow(start, end, maxEvents, this.debug, this.graph, controller.signal);
      if (controller.signal.aborted) return;
      data.debug = this.debug;
      this.data = data;
      this.status = '';
      if (this.focusItem) {
        // The same box in the new data, if it is there.
        const [lane, start] = [this.focusItem[0], this.focusItem[1]];
        const items = data.level === 'events' ? data.events : data.bins;
        this.focusItem = items.find((it) => it[0] === lane && it[1] === start) || null;
      }
    } catch (caught) {
      const err = failure(caught);
      if (err.name === 'AbortError') return;
      this.status = `cannot load the timeline: ${err.message}`;
    } finally {
      if (this.pending === controller) this.pending = null;
    }
    this.draw();
    if (this.onChange) this.onChange();
  }

  /** @param {number} t ns @return {number} px */
  x(t) {
    return GUTTER + (t - this.view.start) / (this.view.end - this.view.start) * this.plotWidth();
  }

  draw() {
    const width = Math.max(200, this.root.clientWidth);
    const height = this.height();
    const dpr = window.devicePixelRatio || 1;
    this.canvas.style.width = `${width}px`;
    this.canvas.style.height = `${height}px`;
    if (this.canvas.width !== Math.round(width * dpr) ||
        this.canvas.height !== Math.round(height * dpr)) {
      this.canvas.width = Math.round(width * dpr);
      this.canvas.height = Math.round(height * dpr);
    }
    const ctx = /** @type {!CanvasRenderingContext2D} */ (this.canvas.getContext('2d'));
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    const fg = cssVar('--opm-fg', '#212121');
    const muted = cssVar('--opm-muted', '#616161');
    const laneBg = cssVar('--opm-lane-bg', '#f5f5f5');
    const border = cssVar('--opm-border', '#e0e0e0');
    ctx.clearRect(0, 0, width, height);
    ctx.font = `${0.75 * remPx()}px Roboto, "Helvetica Neue", sans-serif`;
    ctx.textBaseline = 'middle';

    // Lanes and their labels.
    for (const lane of this.lanes()) {
      const top = this.laneTop(lane);
      ctx.fillStyle = laneBg;
      ctx.fillRect(GUTTER, top, this.plotWidth(), LANE_HEIGHT[lane]);
      ctx.fillStyle = fg;
      ctx.textAlign = 'right';
      ctx.fillText(LANE_LABEL[lane], GUTTER - 8, top + LANE_HEIGHT[lane] / 2);
    }
    this.drawAxis(ctx, fg, muted, border);

    const d = this.data;
    ctx.save();
    ctx.beginPath();
    ctx.rect(GUTTER, AXIS, this.plotWidth(), height - AXIS);
    ctx.clip();
    if (d && d.level === 'events') this.drawEvents(ctx, d);
    else if (d && d.level === 'bins') this.drawBins(ctx, d);
    ctx.restore();

    if (d) this.noteEmptyLanes(ctx, d, muted);
    if (this.focusItem && d) this.drawFocus(ctx, d, fg);
    this.drawStrip();
    let message = this.status;
    if (!message && d && this.visibleCount() === 0) {
      /** @type {{before?: ?number, after?: ?number}} */
      const near = d.nearest || {};
      const where = [];
      if (near.before !== null && near.before !== undefined) {
        where.push(`${fmtNs(this.view.start - near.before)} earlier`);
      }
      if (near.after !== null && near.after !== undefined) {
        where.push(`${fmtNs(near.after - this.view.end)} later`);
      }
      message = 'no ops here' + (where.length ? ` — the nearest are ${where.join(' and ')} ` +
        '(the strip above shows where ops are)' : '');
      // Filtered to a trace the profile holds no call of (it ran outside the profiled
      // window, or inside another function's calls, as a nested trace does).
      if (d.graph && !where.length) message = `no call of ${d.graph} in the profiled window`;
    }
    if (this.span === null) message = 'loading the run…';
    else if (!this.span) message = 'this run has no profile (no .xplane.pb)';
    else if (!d && !message) message = 'loading…';
    // What the canvas says, for screen readers and tests.
    this.canvas.dataset.message = message;
    if (message) {
      ctx.fillStyle = muted;
      ctx.textAlign = 'center';
      ctx.fillText(message, GUTTER + this.plotWidth() / 2, AXIS + (height - AXIS) / 2);
    }
  }

  /**
   * @param {!CanvasRenderingContext2D} ctx
   * @param {string} fg
   * @param {string} muted
   * @param {string} border
   */
  drawAxis(ctx, fg, muted, border) {
    const width = this.view.end - this.view.start;
    const step = tickStep(width, this.plotWidth() / 110);
    this.tickLabels = [];
    ctx.strokeStyle = border;
    ctx.fillStyle = muted;
    ctx.textAlign = 'center';
    ctx.lineWidth = 1;
    const first = Math.ceil(this.view.start / step) * step;
    for (let t = first; t <= this.view.end; t += step) {
      const x = Math.round(this.x(t)) + 0.5;
      ctx.beginPath();
      ctx.moveTo(x, AXIS - 6);
      ctx.lineTo(x, this.height() - 4);
      ctx.stroke();
      const label = fmtAt(t, step);
      this.tickLabels.push(label);
      ctx.fillText(label, x, AXIS / 2 - 2);
    }
    this.canvas.dataset.ticks = this.tickLabels.join('|');
  }

  /** @param {string} lane @return {!Array<number>} top and height, px */
  boxGeometry(lane) {
    const top = this.laneTop(lane) + 2;
    return [top, LANE_HEIGHT[lane] - 4];
  }

  /**
   * @param {!CanvasRenderingContext2D} ctx
   * @param {!EventsWindow} d
   */
  drawEvents(ctx, d) {
    const scale = this.plotWidth() / (this.view.end - this.view.start);
    /** @type {!Map<string, !Array<[number, string, number]>>} x, lane, width per colour */
    const byColor = new Map();
    for (const ev of d.events) {
      const [lane, start, dur, , , cls] = ev;
      const laneName = d.lanes[lane];
      const key = timelineKey(d.classes[cls]);
      const x = this.x(start);
      const w = Math.max(1, dur * scale);
      if (x + w < GUTTER || x > GUTTER + this.plotWidth()) continue;
      let list = byColor.get(key);
      if (!list) byColor.set(key, list = []);
      list.push([x, laneName, w]);
    }
    for (const [key, list] of byColor) {
      ctx.fillStyle = CLASSES[key] ? CLASSES[key].color : '#999999';
      for (const [x, laneName, w] of list) {
        const [top, h] = this.boxGeometry(laneName);
        ctx.fillRect(x, top, w, h);
      }
    }
    // Separate neighbours where boxes are wide enough to tell apart.
    ctx.strokeStyle = 'rgba(0,0,0,0.35)';
    ctx.lineWidth = 1;
    for (const list of byColor.values()) {
      for (const [x, laneName, w] of list) {
        if (w < 4) continue;
        const [top, h] = this.boxGeometry(laneName);
        ctx.strokeRect(Math.round(x) + 0.5, top + 0.5, Math.max(1, Math.round(w) - 1), h - 1);
      }
    }
    // Fused kernels: the table's mark, an outline; the fill stays mode x oneDNN.
    const fused = new Set(d.fused || []);
    if (fused.size) {
      ctx.strokeStyle = FUSED.color;
      ctx.lineWidth = 2;
      for (const ev of d.events) {
        if (!fused.has(ev[4])) continue;
        const x = this.x(ev[1]);
        const w = Math.max(2, ev[2] * scale);
        if (x + w < GUTTER || x > GUTTER + this.plotWidth()) continue;
        const [top, h] = this.boxGeometry(d.lanes[ev[0]]);
        ctx.strokeRect(x + 1, top + 1, Math.max(1, w - 2), h - 2);
      }
      ctx.lineWidth = 1;
    }
    // Names inside boxes wide enough for them.
    ctx.textAlign = 'left';
    for (const ev of d.events) {
      const [lane, start, dur, nameId, , cls] = ev;
      const w = dur * scale;
      if (w < 40) continue;
      const left = this.x(start);
      const x = Math.max(GUTTER, left);
      const right = Math.min(GUTTER + this.plotWidth(), left + w);
      const visible = right - x - 6;
      if (visible < 20) continue;   // off screen, or too little of it shows
      const laneName = d.lanes[lane];
      const [top, h] = this.boxGeometry(laneName);
      const key = timelineKey(d.classes[cls]);
      ctx.fillStyle = CLASSES[key] ? CLASSES[key].text : '#000000';
      // Graph boxes: the kernel that ran (the node name is in the tooltip); others: the op.
      const kernel = d.names[ev[4]];
      // tf.function boxes: the Python function's name (`step`, `Keras train step`).
      const label = laneName === V.GRAPH && kernel ? kernel
        : (d.labels && d.labels[d.names[nameId]]) || /** @type {string} */ (d.names[nameId].split('/').pop());
      ctx.save();
      ctx.beginPath();
      ctx.rect(x, top, visible + 3, h);
      ctx.clip();
      ctx.fillText(label, x + 3, top + h / 2);
      ctx.restore();
    }
  }

  /**
   * A lane with nothing in the window says why: the profile holds only what ran while the
   * profiler did (eager ops outside it are still counted in the table).
   * @param {!CanvasRenderingContext2D} ctx
   * @param {!TimelineWindow} d
   * @param {string} muted
   */
  noteEmptyLanes(ctx, d, muted) {
    const items = d.level === 'events' ? d.events : d.bins;
    if (!items.length) return;   // the whole canvas says so
    const used = new Set(items.map((item) => d.lanes[item[0]]));
    const whole = this.span !== null && this.view.end - this.view.start >= this.span;
    const empty = this.lanes().filter((lane) => !used.has(lane));
    this.canvas.dataset.emptyLanes = empty.join(',');
    ctx.fillStyle = muted;
    ctx.textAlign = 'left';
    for (const lane of empty) {
      ctx.fillText(this.emptyLaneNote(lane, d, whole), GUTTER + 8, this.laneTop(lane) + LANE_HEIGHT[lane] / 2);
    }
  }

  /**
   * Why a lane shows nothing.
   * @param {string} lane
   * @param {!TimelineWindow} d
   * @param {boolean} whole the window is the whole run
   * @return {string}
   */
  emptyLaneNote(lane, d, whole) {
    // Filtered to one trace: Python waits while its function runs, so no eager op is its.
    if (lane === V.EAGER && d.graph) {
      return `no eager op: only the calls of ${d.graph} and the graph ops inside them are shown`;
    }
    const what = lane === 'function' ? 'tf.function call' : `${lane} op`;
    return whole ? `no ${what} in the profiled window (the profiler ran for part of the run; ` +
      'the table counts all of it)' : `no ${what} in this part of the window`;
  }

  /**
   * @param {!CanvasRenderingContext2D} ctx
   * @param {!BinsWindow} d
   */
  drawBins(ctx, d) {
    for (const bin of d.bins) {
      const [lane, start, end, , busy, cls] = bin;
      const laneName = d.lanes[lane];
      const [top, h] = this.boxGeometry(laneName);
      const x = this.x(start);
      const w = Math.max(1, this.x(end) - x);
      const fill = Math.min(1, busy / Math.max(1, end - start));
      const bh = Math.max(3, h * Math.sqrt(fill));
      const key = timelineKey(d.classes[cls]);
      ctx.fillStyle = CLASSES[key] ? CLASSES[key].color : '#999999';
      ctx.fillRect(x, top + h - bh, w, bh);
    }
  }

  /**
   * @param {!CanvasRenderingContext2D} ctx
   * @param {!TimelineWindow} d
   * @param {string} fg
   */
  drawFocus(ctx, d, fg) {
    const [lane, a, z] = extent(d, /** @type {!Item} */ (this.focusItem));  // draw() checks
    const [top, h] = this.boxGeometry(d.lanes[lane]);
    const x = Math.max(GUTTER - 2, this.x(a));
    const w = Math.max(3, Math.min(GUTTER + this.plotWidth() + 2, this.x(z)) - x);
    ctx.save();
    ctx.strokeStyle = fg;
    ctx.lineWidth = 2;
    ctx.setLineDash([4, 2]);
    ctx.strokeRect(x - 2, top - 2, w + 4, h + 4);
    ctx.restore();
  }

  /** The strip: density of ops over the whole run, the window shown outlined. */
  drawStrip() {
    const width = Math.max(200, this.root.clientWidth);
    const dpr = window.devicePixelRatio || 1;
    this.strip.style.width = `${width}px`;
    this.strip.style.height = `${STRIP}px`;
    if (this.strip.width !== Math.round(width * dpr) || this.strip.height !== Math.round(STRIP * dpr)) {
      this.strip.width = Math.round(width * dpr);
      this.strip.height = Math.round(STRIP * dpr);
    }
    const ctx = /** @type {!CanvasRenderingContext2D} */ (this.strip.getContext('2d'));
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, width, STRIP);
    const plot = this.plotWidth();
    ctx.fillStyle = cssVar('--opm-lane-bg', '#f3f3f3');
    ctx.fillRect(GUTTER, 0, plot, STRIP);
    ctx.fillStyle = cssVar('--opm-fg', '#212121');
    ctx.font = `${0.6875 * remPx()}px Roboto, "Helvetica Neue", sans-serif`;
    ctx.textAlign = 'right';
    ctx.textBaseline = 'middle';
    ctx.fillText('whole run', GUTTER - 8, STRIP / 2);
    const o = this.overview;
    const span = this.span;
    let columns = 0;
    if (o && span) {
      const busy = new Float64Array(Math.ceil(plot));
      const perPx = span / plot;
      const items = o.level === 'events' ? o.events : o.bins;
      // Ops only: a tf.function call spans its ops and would paint the whole strip.
      const fnLane = o.lanes.indexOf('function');
      for (const item of items) {
        if (item[0] === fnLane) continue;
        const [, a, z] = extent(o, item);
        const weight = o.level === 'events' ? (z - a) : item[4];
        const p0 = Math.max(0, Math.min(busy.length - 1, Math.floor(a / perPx)));
        const p1 = Math.max(p0, Math.min(busy.length - 1, Math.floor(Math.max(a, z - 1) / perPx)));
        const share = Math.max(weight, perPx * 0.05) / (p1 - p0 + 1);
        for (let px = p0; px <= p1; px++) busy[px] += share;
      }
      ctx.fillStyle = cssVar('--opm-muted', '#616161');
      for (let px = 0; px < busy.length; px++) {
        if (!busy[px]) continue;
        columns++;
        const h = Math.max(2, (STRIP - 2) * Math.sqrt(Math.min(1, busy[px] / perPx)));
        ctx.fillRect(GUTTER + px, STRIP - 1 - h, 1, h);
      }
      const x0 = GUTTER + this.view.start / span * plot;
      const x1 = GUTTER + this.view.end / span * plot;
      ctx.strokeStyle = cssVar('--opm-accent', '#f57c00');
      ctx.lineWidth = 2;
      ctx.strokeRect(Math.min(x0, x1 - 3), 1, Math.max(3, x1 - x0), STRIP - 2);
    }
    this.strip.dataset.columns = String(columns);
  }

  /** @param {!MouseEvent} e */
  onStrip(e) {
    if (!this.span) return;
    const box = this.strip.getBoundingClientRect();
    const frac = Math.min(1, Math.max(0, (e.clientX - box.left - GUTTER) / this.plotWidth()));
    const width = this.view.end - this.view.start;
    const t = frac * this.span;
    this.setView(t - width / 2, t + width / 2);
    e.preventDefault();
  }

  /** Inspect an event or bin by keyboard: outline it, show its tooltip, say it. */
  /** @param {?Item} item an item of the loaded data, or null to stop */
  inspect(item) {
    this.focusItem = item;
    this.draw();
    if (!item) {
      this.hideTooltip();
      return;
    }
    const d = /** @type {!TimelineWindow} */ (this.data);  // the item is of it
    const [lane, a, z] = extent(d, item);
    const lines = this.tooltipLines({kind: d.level === 'events' ? 'event' : 'bin', item});
    const box = this.canvas.getBoundingClientRect();
    const x = Math.min(GUTTER + this.plotWidth(), Math.max(GUTTER, this.x((a + z) / 2)));
    const [top, h] = this.boxGeometry(d.lanes[lane]);
    this.showTooltip({kind: d.level === 'events' ? 'event' : 'bin', item}, box.left + x, box.top + top + h);
    this.live.textContent = lines.join('. ');
    this.canvas.dataset.inspected = lines[0];
  }

  /** The item of ``lane`` (index) nearest time ``t`` in the loaded data. */
  /**
   * @param {number} lane
   * @param {number} t ns
   * @return {?Item}
   */
  nearestIn(lane, t) {
    const d = this.data;
    if (!d) return null;
    /** @type {?Array<number>} */
    let best = null;
    let bestDist = Infinity;
    for (const item of d.level === 'events' ? d.events : d.bins) {
      if (item[0] !== lane) continue;
      const [, a, z] = extent(d, item);
      const dist = t < a ? a - t : t > z ? t - z : 0;
      if (dist < bestDist) { best = item; bestDist = dist; }
    }
    return best;
  }

  /** Step to the next (+1) or previous (-1) item in the inspected item's lane. */
  /** @param {number} dir */
  stepFocus(dir) {
    // onKey calls it while an item of the loaded data is inspected.
    const d = /** @type {!TimelineWindow} */ (this.data);
    const focus = /** @type {!Item} */ (this.focusItem);
    const lane = focus[0];
    const items = (d.level === 'events' ? d.events : d.bins).filter((it) => it[0] === lane)
        .sort((x, y) => x[1] - y[1]);
    const at = items.indexOf(focus);
    const next = items[at + dir];
    if (!next) return;
    const [, a, z] = extent(d, next);
    const width = this.view.end - this.view.start;
    if (z < this.view.start || a > this.view.end) this.setView((a + z) / 2 - width / 2, (a + z) / 2 + width / 2);
    this.inspect(next);
  }

  /** Move the inspection to the lane above (-1) or below (+1), the item nearest in time. */
  /** @param {number} dir */
  laneFocus(dir) {
    // onKey calls it while an item of the loaded data is inspected.
    const d = /** @type {!TimelineWindow} */ (this.data);
    const [lane, a, z] = extent(d, /** @type {!Item} */ (this.focusItem));
    for (let l = lane + dir; l >= 0 && l < d.lanes.length; l += dir) {
      const item = this.nearestIn(l, (a + z) / 2);
      if (item) { this.inspect(item); return; }
    }
  }

  /** Event or bin under the pointer, or null. */
  /**
   * @param {number} px
   * @param {number} py
   * @return {?Hit}
   */
  pick(px, py) {
    const d = this.data;
    if (!d || px < GUTTER) return null;
    let laneIndex = -1;
    for (const [i, lane] of d.lanes.entries()) {
      const top = this.laneTop(lane);
      if (py >= top && py <= top + LANE_HEIGHT[lane]) laneIndex = i;
    }
    if (laneIndex < 0) return null;
    const nsPerPx = (this.view.end - this.view.start) / this.plotWidth();
    const t = this.view.start + (px - GUTTER) * nsPerPx;
    const slack = 2 * nsPerPx;
    if (d.level === 'events') {
      /** @type {?Item} */
      let best = null;
      for (const ev of d.events) {
        if (ev[0] !== laneIndex) continue;
        if (ev[1] - slack <= t && t <= ev[1] + ev[2] + slack) {
          if (!best || ev[2] < best[2]) best = ev;
        }
      }
      return best ? {kind: 'event', item: best} : null;
    }
    for (const bin of d.bins) {
      if (bin[0] === laneIndex && bin[1] <= t && t < bin[2]) return {kind: 'bin', item: bin};
    }
    return null;
  }

  /**
   * @param {!Hit} hit an item of the loaded data
   * @return {!Array<string>}
   */
  tooltipLines(hit) {
    const d = /** @type {!TimelineWindow} */ (this.data);
    const cls = timelineKey(d.classes[hit.item[hit.kind === 'event' ? 5 : 5]]);
    const legend = CLASSES[cls];
    if (hit.kind === 'event') {
      const [lane, start, dur, nameId, kernelId] = hit.item;
      const pyName = d.labels && d.labels[d.names[nameId]];
      const lines = [pyName ? `${pyName} (${d.names[nameId]})` : d.names[nameId]];
      lines.push(`${legend ? legend.label : cls} (${d.lanes[lane]} lane)`);
      const kernel = d.names[kernelId];
      if (d.lanes[lane] !== 'function') {
        lines.push(`kernel: ${kernel || 'unknown (no evidence names it)'}` +
          ((d.fused || []).includes(kernelId) ? ' (fused kernel)' : ''));
      }
      if (d.lanes[lane] === V.EAGER) lines.push('EagerExecute time, including dispatch');
      lines.push(`start ${fmtNs(start)}, duration ${fmtNs(dur)}`);
      return lines;
    }
    const [lane, start, end, count, busy, , nameId, onednn] = hit.item;
    return [
      `${fmtInt(count)} ops in ${fmtNs(end - start)} (${d.lanes[lane]} lane)`,
      `mostly ${d.names[nameId]} · ${legend ? legend.label : cls}`,
      `oneDNN: ${fmtInt(onednn)} of ${fmtInt(count)}; busy ${fmtPct(busy / Math.max(1, end - start))}`,
      'zoom in to see single ops',
    ];
  }

  /**
   * @param {!Hit} hit
   * @param {number} clientX
   * @param {number} clientY
   */
  showTooltip(hit, clientX, clientY) {
    this.tooltip.replaceChildren();
    for (const line of this.tooltipLines(hit)) {
      const div = document.createElement('div');
      div.textContent = line;
      this.tooltip.appendChild(div);
    }
    this.tooltip.hidden = false;
    const box = this.root.getBoundingClientRect();
    let left = clientX - box.left + 14;
    const top = clientY - box.top + 14;
    const width = this.tooltip.offsetWidth;
    if (left + width > box.width) left = Math.max(0, clientX - box.left - width - 14);
    this.tooltip.style.left = `${left}px`;
    this.tooltip.style.top = `${top}px`;
  }

  hideTooltip() {
    this.tooltip.hidden = true;
  }

  /** @param {!WheelEvent} e */
  onWheel(e) {
    if (!this.span) return;
    e.preventDefault();
    const box = this.canvas.getBoundingClientRect();
    const frac = Math.min(1, Math.max(0, (e.clientX - box.left - GUTTER) / this.plotWidth()));
    if (e.shiftKey || Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
      const delta = (e.deltaX || e.deltaY) / this.plotWidth() * (this.view.end - this.view.start);
      this.setView(this.view.start + delta, this.view.end + delta);
      return;
    }
    this.zoom(Math.exp(e.deltaY * 0.0025), frac);
  }

  /** @param {!MouseEvent} e */
  onDown(e) {
    if (e.button !== 0) return;
    this.drag = {x: e.clientX, start: this.view.start, end: this.view.end};
    this.canvas.classList.add('dragging');
  }

  /** @param {!MouseEvent} e */
  onMove(e) {
    if (this.drag) {
      const nsPerPx = (this.drag.end - this.drag.start) / this.plotWidth();
      const delta = (this.drag.x - e.clientX) * nsPerPx;
      this.setView(this.drag.start + delta, this.drag.end + delta);
      this.hideTooltip();
      return;
    }
    if (e.target !== this.canvas) return;
    const box = this.canvas.getBoundingClientRect();
    const hit = this.pick(e.clientX - box.left, e.clientY - box.top);
    if (hit) this.showTooltip(hit, e.clientX, e.clientY);
    else this.hideTooltip();
  }

  onUp() {
    if (this.drag) {
      this.drag = null;
      this.canvas.classList.remove('dragging');
    }
  }

  /** @param {!KeyboardEvent} e */
  onKey(e) {
    const width = this.view.end - this.view.start;
    if (this.focusItem && this.data) {
      if (e.key === 'ArrowRight') this.stepFocus(1);
      else if (e.key === 'ArrowLeft') this.stepFocus(-1);
      else if (e.key === 'ArrowDown') this.laneFocus(1);
      else if (e.key === 'ArrowUp') this.laneFocus(-1);
      else if (e.key === 'Escape') { this.inspect(null); this.live.textContent = 'stopped inspecting'; }
      if (['ArrowRight', 'ArrowLeft', 'ArrowDown', 'ArrowUp', 'Escape'].includes(e.key)) {
        e.preventDefault();
        e.stopPropagation();
        return;
      }
    }
    if (e.key === 'Enter' || e.key === ' ') {
      const items = this.visible();
      if (!items.length) {
        this.live.textContent = 'no ops in this window';
      } else {
        const centre = this.view.start + width / 2;
        const lanes = [...new Set(items.map((it) => it[0]))].sort();
        const lane = lanes.includes(1) ? 1 : lanes[0];
        this.inspect(this.nearestIn(lane, centre));
      }
      e.preventDefault();
      return;
    }
    if (e.key === '+' || e.key === '=') this.zoom(0.5);
    else if (e.key === '-') this.zoom(2);
    else if (e.key === 'ArrowLeft') this.setView(this.view.start - width / 5, this.view.end - width / 5);
    else if (e.key === 'ArrowRight') this.setView(this.view.start + width / 5, this.view.end + width / 5);
    else if (e.key === '0') this.reset();
    else return;
    e.preventDefault();
  }
}
