// The timeline: a canvas with one lane per mode (tf.function calls, eager
// ops, graph ops), each op a box coloured by mode x oneDNN (colors.js).
//
// In: a function that fetches a window of the run's profile
// (GET timeline?start&end&max_events: single events, or bins when zoomed
// out). Out: drawing, zoom (wheel, buttons), pan (drag), hover details in a
// tooltip (text only). Only the visible window is ever fetched; while a fetch
// is pending the last data is redrawn at the new scale, so zoom and pan stay
// smooth.

import {CLASSES, FUSED, timelineKey} from './colors.js';
import {fmtInt, fmtNs, fmtPct} from './data.js';

const GUTTER = 112;
const AXIS = 24;
const LANE_HEIGHT = {function: 22, eager: 44, graph: 44};
const LANE_LABEL = {function: 'tf.function calls', eager: 'eager ops', graph: 'graph ops'};
const LANE_GAP = 6;
const MIN_SPAN = 1000; // ns

function cssVar(name, fallback) {
  const value = getComputedStyle(document.body).getPropertyValue(name).trim();
  return value || fallback;
}

export class Timeline {
  /**
   * @param {!HTMLElement} host element to draw into
   * @param {function(number, number, number, boolean, !AbortSignal): !Promise<!Object>} fetchWindow
   */
  constructor(host, fetchWindow) {
    this.fetchWindow = fetchWindow;
    // null: the run's span is not known yet (its overview is loading); 0: no profile.
    this.span = null;
    this.view = {start: 0, end: 1};
    this.data = null;
    this.debug = false;
    this.pending = null;
    this.timer = 0;
    this.drag = null;
    this.hover = null;
    this.status = '';

    this.root = document.createElement('div');
    this.root.className = 'opm-timeline';
    this.canvas = document.createElement('canvas');
    this.canvas.className = 'opm-timeline-canvas';
    this.canvas.setAttribute('role', 'img');
    this.canvas.setAttribute('aria-label',
        'Timeline of op executions: eager and graph lanes, coloured by mode and oneDNN use');
    this.canvas.tabIndex = 0;
    this.tooltip = document.createElement('div');
    this.tooltip.className = 'opm-tooltip';
    this.tooltip.hidden = true;
    this.root.append(this.canvas, this.tooltip);
    host.appendChild(this.root);

    this.canvas.addEventListener('wheel', (e) => this.onWheel(e), {passive: false});
    this.canvas.addEventListener('mousedown', (e) => this.onDown(e));
    window.addEventListener('mousemove', (e) => this.onMove(e));
    window.addEventListener('mouseup', () => this.onUp());
    this.canvas.addEventListener('mouseleave', () => this.hideTooltip());
    this.canvas.addEventListener('dblclick', () => this.reset());
    this.canvas.addEventListener('keydown', (e) => this.onKey(e));
    // The theme (colors.js watchTheme) calls draw() when it changes.
    new ResizeObserver(() => this.draw()).observe(this.root);
  }

  /** The run is loading: say so (not "no profile") until setSpan. */
  setLoading() {
    clearTimeout(this.timer);
    if (this.pending) this.pending.abort();
    this.span = null;
    this.data = null;
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
    this.draw();
    this.schedule(0);
  }

  setDebug(debug) {
    this.debug = debug;
    this.data = null;
    this.schedule(0);
  }

  reset() {
    if (!this.span) return;
    this.view = {start: 0, end: this.span};
    this.changed();
  }

  zoom(factor, centerFrac = 0.5) {
    if (!this.span) return;
    const width = this.view.end - this.view.start;
    const center = this.view.start + width * centerFrac;
    let newWidth = Math.min(this.span, Math.max(MIN_SPAN, width * factor));
    let start = center - newWidth * centerFrac;
    this.setView(start, start + newWidth);
  }

  setView(start, end) {
    const width = end - start;
    if (start < 0) { start = 0; end = width; }
    if (end > this.span) { end = this.span; start = Math.max(0, end - width); }
    this.view = {start, end};
    this.changed();
  }

  changed() {
    this.draw();
    this.schedule(150);
    if (this.onChange) this.onChange();
  }

  lanes() {
    return ['function', 'eager', 'graph'];
  }

  height() {
    return AXIS + this.lanes().reduce((h, lane) => h + LANE_HEIGHT[lane] + LANE_GAP, 0) + 4;
  }

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
    return d && d.level === 'events' && d.start <= this.view.start && d.end >= this.view.end &&
      d.debug === this.debug;
  }

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
      const data = await this.fetchWindow(start, end, maxEvents, this.debug, controller.signal);
      if (controller.signal.aborted) return;
      data.debug = this.debug;
      this.data = data;
      this.status = '';
    } catch (err) {
      if (err.name === 'AbortError') return;
      this.status = `cannot load the timeline: ${err.message}`;
    } finally {
      if (this.pending === controller) this.pending = null;
    }
    this.draw();
    if (this.onChange) this.onChange();
  }

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
    const ctx = this.canvas.getContext('2d');
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    const fg = cssVar('--opm-fg', '#212121');
    const muted = cssVar('--opm-muted', '#616161');
    const laneBg = cssVar('--opm-lane-bg', '#f5f5f5');
    const border = cssVar('--opm-border', '#e0e0e0');
    ctx.clearRect(0, 0, width, height);
    ctx.font = '12px Roboto, "Helvetica Neue", sans-serif';
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

    let message = this.status || (d && !d.total ? 'no profiled ops in this window' : '');
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

  drawAxis(ctx, fg, muted, border) {
    const width = this.view.end - this.view.start;
    const target = width / Math.max(2, this.plotWidth() / 110);
    const pow = Math.pow(10, Math.floor(Math.log10(Math.max(target, 1))));
    let step = pow;
    for (const m of [1, 2, 5, 10]) {
      if (pow * m >= target) { step = pow * m; break; }
    }
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
      ctx.fillText(fmtNs(t), x, AXIS / 2 - 2);
    }
  }

  boxGeometry(lane) {
    const top = this.laneTop(lane) + 2;
    return [top, LANE_HEIGHT[lane] - 4];
  }

  drawEvents(ctx, d) {
    const scale = this.plotWidth() / (this.view.end - this.view.start);
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
      const label = laneName === 'graph' && kernel ? kernel : d.names[nameId].split('/').pop();
      ctx.save();
      ctx.beginPath();
      ctx.rect(x, top, visible + 3, h);
      ctx.clip();
      ctx.fillText(label, x + 3, top + h / 2);
      ctx.restore();
    }
  }

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

  /** Event or bin under the pointer, or null. */
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

  tooltipLines(hit) {
    const d = this.data;
    const cls = timelineKey(d.classes[hit.item[hit.kind === 'event' ? 5 : 5]]);
    const legend = CLASSES[cls];
    if (hit.kind === 'event') {
      const [lane, start, dur, nameId, kernelId] = hit.item;
      const lines = [d.names[nameId]];
      lines.push(`${legend ? legend.label : cls} (${d.lanes[lane]} lane)`);
      const kernel = d.names[kernelId];
      if (d.lanes[lane] !== 'function') {
        lines.push(`kernel: ${kernel || 'unknown (no evidence names it)'}` +
          ((d.fused || []).includes(kernelId) ? ' (fused kernel)' : ''));
      }
      if (d.lanes[lane] === 'eager') lines.push('EagerExecute time, including dispatch');
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

  onDown(e) {
    if (e.button !== 0) return;
    this.drag = {x: e.clientX, start: this.view.start, end: this.view.end};
    this.canvas.classList.add('dragging');
  }

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

  onKey(e) {
    const width = this.view.end - this.view.start;
    if (e.key === '+' || e.key === '=') this.zoom(0.5);
    else if (e.key === '-') this.zoom(2);
    else if (e.key === 'ArrowLeft') this.setView(this.view.start - width / 5, this.view.end - width / 5);
    else if (e.key === 'ArrowRight') this.setView(this.view.start + width / 5, this.view.end + width / 5);
    else if (e.key === '0') this.reset();
    else return;
    e.preventDefault();
  }
}
