// The Op Mode tab's Eager hot spots: the lines of the user's own code that issued eager
// ops, ranked by eager time where a line has one (the profile's, joined to a dump's
// executions; or the recording job's clock around each dispatch), else by executions;
// each with its executions, time, shares, op types, the library code that issued the ops
// and advice. Methods of App (views.js). In: the hotspots JSON
// (tab/hotspots.hot_spots). Out: DOM nodes, every string from the run as text.

import {api, failure, fmtInt, fmtNs, fmtPct} from './data.js';
import {breakable, el, message, section} from './dom.js';

/** @typedef {import('./data.js').HotSpots} HotSpots */
/** @typedef {import('./data.js').HotSpot} HotSpot */
/** @typedef {import('./views.js').App} App */
/**
 * What the section keeps on the app: its body (buildHotspots).
 * @typedef {{hotspotsBody: !HTMLElement}} HotspotsFields
 */

/**
 * "file.py:12" of "path/to/file.py:12", the whole path kept for the title.
 * @param {string} where
 * @return {string}
 */
export function shortLocation(where) {
  const cut = Math.max(where.lastIndexOf('/'), where.lastIndexOf('\\'));
  return cut >= 0 ? where.slice(cut + 1) : where;
}

/**
 * A place in code: the file's name and line, the function, the whole path as its title.
 * @param {string} where
 * @param {string} fn
 * @param {string} cls
 * @return {!HTMLElement}
 */
function place(where, fn, cls) {
  return el('span', {class: cls, title: where},
      el('code', {class: 'opm-hot-file'}, ...breakable(shortLocation(where))),
      fn ? el('span', {class: 'opm-muted', text: ` in ${fn}`}) : null);
}

/**
 * The line's cell: the user's line, and the library code between it and the ops.
 * @param {!HotSpot} s
 * @return {!HTMLElement}
 */
function lineCell(s) {
  const cell = el('td', {class: 'opm-hot-line'});
  if (!s.user_location) {
    cell.append(el('span', {class: 'opm-muted', text: 'no line of your code on the stack'}));
  } else {
    cell.append(place(s.user_location, s.user_scope, 'opm-hot-user'));
  }
  if (s.location && s.location !== s.user_location) {
    cell.append(el('div', {class: 'opm-hot-via'}, el('span', {class: 'opm-muted', text: 'ops issued by '}),
        place(s.location, s.location_function, 'opm-hot-site')));
  } else if (s.library_location) {
    cell.append(el('div', {class: 'opm-hot-via'}, el('span', {class: 'opm-muted', text: 'calls '}),
        place(s.library_location, s.library_function, 'opm-hot-lib')));
  }
  return cell;
}

/**
 * The time cell: the profiled time and share, or why there is none.
 * @param {!HotSpot} s
 * @return {!HTMLElement}
 */
function timeCell(s) {
  if (s.time_ns === null) {
    return el('td', {class: 'opm-hot-time'}, el('span', {class: 'opm-muted', text: s.time_note || '–'}));
  }
  return el('td', {class: 'opm-hot-time opm-num'}, el('span', {text: fmtNs(s.time_ns)}),
      el('div', {class: 'opm-muted', text: `${fmtPct(s.time_share)} · ${fmtInt(s.profiled_executions)} ` +
        (s.time_source === 'dispatch' ? 'timed' : 'profiled')}));
}

/**
 * The op types issued on the line, busiest first.
 * @param {!HotSpot} s
 * @return {!HTMLElement}
 */
function opTypesCell(s) {
  const chips = Object.entries(s.op_types).map(([op, n]) =>
    el('span', {class: 'opm-chip opm-hot-op'}, el('code', {text: op}),
        el('span', {class: 'opm-muted', text: `×${fmtInt(n)}`})));
  const more = s.op_types_total - chips.length;
  if (more > 0) chips.push(el('span', {class: 'opm-muted', text: `+${fmtInt(more)} more`}));
  return el('td', {class: 'opm-hot-ops'}, el('span', {class: 'opm-chips'}, chips));
}

/**
 * A line's rows: its figures, then its advice (if any) across the table.
 * @param {!HotSpot} s
 * @param {number} rank
 * @return {!Array<!HTMLElement>}
 */
function siteRows(s, rank) {
  const rows = [el('tr', {class: 'opm-hot-row', 'data-location': s.user_location},
      el('td', {class: 'opm-num', text: String(rank)}),
      lineCell(s),
      el('td', {class: 'opm-num'}, el('span', {text: fmtInt(s.executions)}),
          el('div', {class: 'opm-muted', text: fmtPct(s.share)})),
      timeCell(s),
      opTypesCell(s))];
  if (s.advice.length) {
    rows.push(el('tr', {class: 'opm-hot-advice'}, el('td'),
        el('td', {colspan: 4}, ...s.advice.map((text) => el('p', {text})))));
  }
  return rows;
}

// `this` in each method is the App these methods are mixed into (views.js).
export const HotspotsSection = /** @satisfies {ThisType<App>} */ ({
  buildHotspots() {
    this.hotspotsBody = el('div', {class: 'opm-hotspots'});
    this.root.append(section('Eager hot spots', 'opm-hotspots-card', this.hotspotsBody));
  },

  async loadHotspots() {
    const run = /** @type {string} */ (this.store.state.run);   // selectRun() chose it
    let h;
    try {
      h = await api.hotspots(run);
    } catch (caught) {
      this.hotspotsBody.replaceChildren(message(failure(caught).message, 'error'));
      return;
    }
    if (run !== this.store.state.run) return;
    this.hotspotsBody.replaceChildren(...this.renderHotspots(h));
    this.hotspotsBody.dataset.run = run;   // which run the section shows (for tests and tools)
  },

  /**
   * @param {!HotSpots} h
   * @return {!Array<!HTMLElement>}
   */
  renderHotspots(h) {
    if (!h.sites.length) {
      return [el('p', {class: 'opm-muted', text: 'No eager executions with a Python stack: ' +
        'the run has no tfdbg2 dump, or nothing ran eagerly.'})];
    }
    const shown = h.sites.length < h.total ? `the first ${fmtInt(h.sites.length)} of ` : '';
    // The lines' time shares are of all the profiled eager time: say how much of it no line
    // issued (ops the dump records no execution of), or the shares seem not to add up.
    const unjoined = h.time_ns !== null && h.joined_ns !== null ? h.time_ns - h.joined_ns : 0;
    const dispatched = h.time_source === 'dispatch';
    const head = el('p', {class: 'opm-hot-summary'},
        `${fmtInt(h.executions)} eager executions from ${fmtInt(h.total)} line(s) of your code` +
        (h.time_ns !== null ? `, ${fmtNs(h.time_ns)} of ` +
          (dispatched ? 'eager time as the job timed their dispatches' : 'profiled eager time') : '') +
        (unjoined > 0 ? ` (${fmtNs(unjoined)} of it, ${fmtPct(unjoined / /** @type {number} */ (h.time_ns))}, ` +
          'in eager ops the dump records no execution of, so joined to no line: the overview ' +
          'lists them)' : '') +
        `; ${shown}lines ranked ` +
        (h.time_ns === null ? 'by executions.' :
          dispatched ? 'by that time.' : 'by time where the profile covers them, then by executions.'));
    const table = el('table', {class: 'opm-small-table opm-hot-table', id: 'opm-hotspots'},
        el('thead', {}, el('tr', {},
            el('th', {class: 'opm-num', text: '#'}),
            el('th', {text: 'Line of your code'}),
            el('th', {class: 'opm-num', text: 'Executions'}),
            el('th', {text: 'Eager time'}),
            el('th', {text: 'Op types'}))),
        el('tbody', {}, h.sites.flatMap((s, i) => siteRows(s, i + 1))));
    return [head, el('p', {class: 'opm-hint', text: h.note}), el('div', {class: 'opm-table-scroll'}, table)];
  },
});
