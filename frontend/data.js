// Data access for the Op Mode tab: fetches the plugin's JSON routes.
//
// In: route names and parameters. Out: parsed JSON, or an Error whose message
// is the server's text (a 400/404 message). URLs are relative: the tab's
// iframe document has <base href="plugin/opmode/">, so "./runs" is
// /data/plugin/opmode/runs. Nothing here touches the DOM.

/**
 * @param {string} route e.g. "runs"
 * @param {!Object<string, (string|number|boolean|undefined|null)>=} params
 * @return {string}
 */
export function routeUrl(route, params = {}) {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value === undefined || value === null || value === '') continue;
    query.set(key, typeof value === 'boolean' ? (value ? '1' : '0') : String(value));
  }
  const qs = query.toString();
  return `./${route}${qs ? '?' + qs : ''}`;
}

/**
 * @param {string} route
 * @param {!Object=} params
 * @param {?AbortSignal=} signal
 * @return {!Promise<!Object>}
 */
export async function getJSON(route, params = {}, signal = null) {
  const response = await fetch(routeUrl(route, params), {signal: signal || undefined});
  if (!response.ok) {
    const text = await response.text();
    const error = /** @type {!Error & {status: number}} */ (
        new Error(text || `${response.status} ${response.statusText}`));
    error.status = response.status;
    throw error;
  }
  return response.json();
}

/**
 * A caught exception as an Error: getJSON's carry the server's text, an aborted fetch is
 * an AbortError (a DOMException, an Error too); anything else thrown becomes one.
 * @param {unknown} err
 * @return {!Error}
 */
export function failure(err) {
  return err instanceof Error ? err : new Error(String(err));
}

export const api = {
  runs: () => getJSON('runs'),
  progress: () => getJSON('progress'),
  overview: (run) => getJSON('overview', {run}),
  opTypes: (run, {sort, order, filters, q, page, pageSize}, signal) =>
    getJSON('optypes', {
      run, sort, order, filter: (filters || []).join(','), q, page, page_size: pageSize,
    }, signal),
  op: (run, op) => getJSON('op', {run, op, sites: 10}),
  timeline: (run, start, end, maxEvents, debug, signal) =>
    getJSON('timeline', {run, start, end, max_events: maxEvents, debug}, signal),
  compare: (a, b, changedOnly) => getJSON('compare', {a, b, changed_only: changedOnly}),
  exportUrl: (run, format, extra = {}) => routeUrl('export', {run, format, ...extra}),
};

/**
 * A tiny store: state plus listeners called after each change.
 */
export class Store {
  constructor(initial) {
    this.state = initial;
    /** @type {!Array<function(!Object, !Object): void>} */
    this.listeners = [];
  }

  /** @param {function(!Object, !Object): void} listener */
  subscribe(listener) {
    this.listeners.push(listener);
  }

  /** @param {!Object} patch */
  set(patch) {
    const before = this.state;
    this.state = {...before, ...patch};
    for (const listener of this.listeners) listener(this.state, before);
  }
}

// ---------------------------------------------------------------- formatting

/** @param {?number|undefined} n */
export function fmtInt(n) {
  if (n === null || n === undefined) return '–';
  return Math.round(n).toLocaleString('en-US');
}

/**
 * Thousands separators for the counts in a sentence from the server ("for 12345 of
 * 23456 executions"), leaving alone what is not a count: line numbers (":1234"),
 * versions and names ("2.21.0", "x1000", "_3000").
 * @param {string} text
 */
export function fmtNumbersIn(text) {
  return String(text).replace(/(?<![\w.:/#-])\d{4,}(?![\w.:/-])/g,
      (digits) => Number(digits).toLocaleString('en-US'));
}

/** @param {?number|undefined} ns */
export function fmtNs(ns) {
  if (ns === null || ns === undefined) return '–';
  const abs = Math.abs(ns);
  if (abs >= 1e9) return `${(ns / 1e9).toFixed(2)} s`;
  if (abs >= 1e6) return `${(ns / 1e6).toFixed(2)} ms`;
  if (abs >= 1e3) return `${(ns / 1e3).toFixed(1)} µs`;
  return `${Math.round(ns)} ns`;
}

/**
 * A time on an axis whose ticks are ``step`` ns apart, with as many decimals as the step
 * needs: deep in a 6 s profile, ticks 20 µs apart read "5.80124 s", "5.80126 s", never
 * all "5.80 s".
 * @param {number} ns
 * @param {number} step
 */
export function fmtAt(ns, step) {
  const abs = Math.abs(ns);
  const [unit, name] = abs >= 1e9 ? [1e9, 's'] : abs >= 1e6 ? [1e6, 'ms'] : abs >= 1e3 ? [1e3, 'µs'] : [1, 'ns'];
  const decimals = Math.max(0, Math.min(9, Math.ceil(-Math.log10(Math.max(step, 1e-9) / unit) - 1e-9)));
  return `${(ns / unit).toFixed(decimals)} ${name}`;
}

/** @param {?number|undefined} x share in [0, 1] */
export function fmtPct(x) {
  if (x === null || x === undefined || Number.isNaN(x)) return '–';
  if (x > 0 && x < 0.001) return '<0.1%';
  return `${(x * 100).toFixed(1)}%`;
}

/** @param {number} bytes */
export function fmtBytes(bytes) {
  if (bytes >= 1 << 30) return `${(bytes / (1 << 30)).toFixed(1)} GiB`;
  if (bytes >= 1 << 20) return `${(bytes / (1 << 20)).toFixed(1)} MiB`;
  if (bytes >= 1 << 10) return `${(bytes / (1 << 10)).toFixed(1)} KiB`;
  return `${bytes} B`;
}
