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
 * @param {!Object<string, (string|number|boolean|undefined|null)>=} params
 * @param {?AbortSignal=} signal
 * @return {!Promise<unknown>} the answer, as the route's typedef below says (api casts it)
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
  /**
   * @param {?string=} want a run the tab waits for: the loader reads it next
   * @return {!Promise<!RunsAnswer>}
   */
  runs: (want = null) => /** @type {!Promise<!RunsAnswer>} */ (getJSON('runs', {want})),
  /** @return {!Promise<!Progress>} */
  progress: () => /** @type {!Promise<!Progress>} */ (getJSON('progress')),
  /**
   * @param {string} run
   * @return {!Promise<!Overview>}
   */
  overview: (run) => /** @type {!Promise<!Overview>} */ (getJSON('overview', {run})),
  /**
   * @param {string} run
   * @return {!Promise<!FunctionsPayload>}
   */
  functions: (run) => /** @type {!Promise<!FunctionsPayload>} */ (getJSON('functions', {run})),
  /**
   * @param {string} run
   * @param {!TableQuery} query
   * @param {!AbortSignal} signal
   * @return {!Promise<!OpPage>}
   */
  opTypes: (run, {sort, order, filters, q, page, pageSize, graph}, signal) =>
    /** @type {!Promise<!OpPage>} */ (getJSON('optypes', {
      run, sort, order, filter: (filters || []).join(','), q, page, page_size: pageSize, graph,
    }, signal)),
  /**
   * @param {string} run
   * @param {string} op
   * @return {!Promise<!OpDetail>}
   */
  op: (run, op) => /** @type {!Promise<!OpDetail>} */ (getJSON('op', {run, op, sites: 10})),
  /**
   * @param {string} run
   * @param {number} start
   * @param {number} end
   * @param {number} maxEvents
   * @param {boolean} debug
   * @param {string} graph a trace's concrete function: its calls alone ('' for all)
   * @param {!AbortSignal} signal
   * @return {!Promise<!TimelineWindow>}
   */
  timeline: (run, start, end, maxEvents, debug, graph, signal) =>
    /** @type {!Promise<!TimelineWindow>} */ (
        getJSON('timeline', {run, start, end, max_events: maxEvents, debug, graph}, signal)),
  /**
   * @param {string} run
   * @return {!Promise<!HotSpots>}
   */
  hotspots: (run) => /** @type {!Promise<!HotSpots>} */ (getJSON('hotspots', {run})),
  /**
   * @param {string} a
   * @param {string} b
   * @param {boolean} changedOnly
   * @return {!Promise<!Comparison>}
   */
  compare: (a, b, changedOnly) =>
    /** @type {!Promise<!Comparison>} */ (getJSON('compare', {a, b, changed_only: changedOnly})),
  /**
   * @param {string} run
   * @param {string} format csv, json or trace
   * @param {!Object<string, (string|number|boolean)>=} extra
   * @return {string}
   */
  exportUrl: (run, format, extra = {}) => routeUrl('export', {run, format, ...extra}),
};

/**
 * A tiny store: state plus listeners called after each change.
 * @template S
 */
export class Store {
  /** @param {S} initial */
  constructor(initial) {
    this.state = initial;
    /** @type {!Array<function(S, S): void>} */
    this.listeners = [];
  }

  /** @param {function(S, S): void} listener */
  subscribe(listener) {
    this.listeners.push(listener);
  }

  /** @param {!Partial<S>} patch */
  set(patch) {
    const before = this.state;
    this.state = {...before, ...patch};
    for (const listener of this.listeners) listener(this.state, before);
  }
}

// ---------------------------------------------------------------- the routes' JSON
// The shapes the routes serve (tb_opmode/plugin/routes.py over the present/tab package,
// whose rows and modes are present/contract.py's plus what the table shows), as the
// TypedDicts of tb_opmode/present/payloads.py say them, under the same names (but
// payloads' RowMode, here ModeStats; its TimelineWindow, here TimelineAnswer).
// tests/unit/test_payload_types.py fails when the two disagree: change them together.
// A "?" field is absent from some answers. Mode keys (eager, graph) are the served words
// of V.MODES: an object keyed by them is an Object<string, ...>, a row is read with ofMode().

/**
 * A run of the runs route (plugin/run_store: RunStore.runs): its fields beyond run and status only
 * once it is loaded ("ready"), error only when it failed.
 * @typedef {{run: string, status: string, reloading?: boolean,
 *   tensorflow_version?: ?string, onednn_enabled?: ?boolean, onednn_state?: string,
 *   counts_from?: string, op_types?: number, executions?: number, has_profile?: boolean,
 *   command?: string, warnings?: number, loaded_at?: number, error?: string}} RunEntry
 */

/**
 * The loader's progress (plugin/run_store: RunStore._progress_locked).
 * @typedef {{scans: number, runs_total: number, runs_done: number, files_total: number,
 *   files_done: number, bytes_total: number, bytes_done: number, loading: ?string,
 *   scanning: boolean, pending: !Array<string>, error: ?string, logdir_set: boolean}} Progress
 */

/** @typedef {{runs: !Array<RunEntry>, progress: !Progress}} RunsAnswer */

/**
 * A kernel of an op type in one mode: the contract's, with the tab's class, kind, fused
 * and folded marks (tab/rows).
 * @typedef {{name: string, executions: number, onednn: boolean, evidence: string,
 *   notes?: !Array<string>, fused_into?: !Array<string>,
 *   time?: {events: number, total_ms: number, mean_us: number},
 *   class: string, kind: string, fused: boolean, folded: boolean}} Kernel
 */

/**
 * Executions of one dtype in a mode, with the kernels they ran (tab/dump.dtype_splits).
 * @typedef {{dtype: string, label: string, executions: number, low_precision: boolean,
 *   kernels: !Array<{name: string, executions: number, kind: string}>}} DtypeSplit
 */

/**
 * Graph executions the dump did not count though the profile or the log saw them
 * (tab/dump.uncounted).
 * @typedef {{profile_events: number, profile_time_ns: number, log_executions: number,
 *   kernels: !Array<{name: string, events: number, onednn: boolean, kind: string}>,
 *   note: string}} Uncounted
 */

/**
 * A kernel grappler fused the op type into (the op route's fused_into).
 * @typedef {{kernel: string, executions: number, evidence: string, onednn: boolean,
 *   nodes: !Array<string>}} FusedInto
 */

/**
 * An op type in one mode: the contract's plus the tab's time, dtype split, devices,
 * lower bound and uncounted mark (tab/rows).
 * @typedef {{executions: number, kernels: !Array<Kernel>, explanation?: string,
 *   time?: {events: number, total_ms: number, mean_us: number}, time_ns?: number,
 *   dtypes?: !Array<DtypeSplit>, devices?: !Object<string, number>, lower_bound?: boolean,
 *   uncounted?: Uncounted}} ModeStats
 */

/**
 * A row of the op table (tab/rows.table_row).
 * @typedef {{op_type: string, eager: !ModeStats, graph: !ModeStats, total: number,
 *   onednn: boolean, kernel_differs: boolean, kernel_differs_why: string, fused: boolean,
 *   dtypes_differ: boolean, low_precision: boolean, uncounted?: boolean}} Row
 */

/**
 * A page of the op table (the optypes route, tab/table.op_page).
 * @typedef {{run: string, total: number, all_total: number, page: number,
 *   page_size: number, sort: string, order: string, filters: !Array<string>, q: string,
 *   graph: string, lower_bound: !Array<string>, devices: !Array<string>, rows: !Array<Row>}} OpPage
 */

/** @typedef {{file: string, line: number, function: string}} Frame */

/**
 * A call site of an op type (analyze/explain.call_sites): a frame with its count, in a
 * graph the ops traced there, the user's own frame, the library frames between, the source.
 * @typedef {{file: string, line: number, function: string, count: number, ops?: number,
 *   user_code?: Frame, via?: !Array<Frame>,
 *   snippet?: {first_line: number, line: number, lines: !Array<string>}}} Site
 */

/**
 * A graph that holds the op type (analyze/explain.function_graphs, named by
 * tab/detail.op_detail).
 * @typedef {{graph_id: string, graph: string, function: string, function_graph_id: string,
 *   function_calls: number, executions: number, ops: number, op_names: !Array<string>,
 *   name: string, outer: string}} GraphEntry
 */

/**
 * The answer for an op type in plain words, first: a sentence per mode, one on the
 * kernels of both (present/lead.lead).
 * @typedef {{eager: string, graph: string, kernel: string}} Lead
 */

/**
 * One op type, all of it (the op route, tab/detail.op_detail): its row plus evidence, the
 * explanation and its short why per mode, fusions, call sites and graphs.
 * @typedef {Row & {lead: Lead, evidence: !Array<string>, explanation?: !Object<string, string>,
 *   why?: !Object<string, string>, fused_into?: !Array<FusedInto>,
 *   call_sites: !Object<string, !Array<Site>>, call_sites_total: !Object<string, number>,
 *   graphs: !Array<GraphEntry>, graphs_total: number}} OpDetail
 */

/**
 * A mode's totals in the overview (tab/overview's modes).
 * @typedef {{executions: number, op_types: number, onednn_executions: number,
 *   kernel_known_executions: number, onednn_share_of_known: ?number, time_ns: ?number,
 *   removed_executions: number, unknown_executions: number,
 *   time_unattributed_ns: ?number, time_outside_table_ns: ?number,
 *   outside_table: !Array<string>, share_of_executions: ?number,
 *   share_of_time: ?number}} ModeTotals
 */

/**
 * Unknown kernels grouped by the reason, with how to find out (tab/overview.unknowns).
 * @typedef {{what: string, why: string, how: string, executions: number,
 *   ops: !Array<{op_type: string, mode: string, executions: number}>}} UnknownGroup
 * @typedef {{groups: !Array<UnknownGroup>, groups_total: number, executions: number,
 *   without_reason: number, without_reason_how: string}} Unknowns
 */

/**
 * What the dump counts, and the graph op types it did not (tab/overview).
 * @typedef {{modes: !Array<string>, records: string, gap: string,
 *   uncounted_op_types: !Array<string>, uncounted_total: number,
 *   uncounted_profile_events: number, uncounted_log_executions: number,
 *   uncounted_time_ns: number, outside_table: !Array<string>}} DumpCoverage
 */

/**
 * How `tb-opmode record` made a run, and whether its kernels are the job's
 * (present/recording.recording_doc).
 * @typedef {{evidence: string, dump_mode: ?string, command: !Array<string>,
 *   exit_status: ?number, signal: ?string, ended: string, note: string,
 *   compared_with: string, fused_kernels: !Array<string>}} RecordingDoc
 */

/**
 * The overview's tf.functions as the Functions card counts them (tab/overview._tf_functions):
 * the ledger's Python functions, their traces and calls, and the graphs called that are
 * no trace of it (TF's own).
 * @typedef {{name: string, traces: number, calls: number, nested: boolean}} FunctionBrief
 * @typedef {{python_functions: number, traces: number, calls: number,
 *   functions: !Array<FunctionBrief>, other_graphs: !Array<{name: string, calls: number}>}} FunctionsBrief
 */

/**
 * The run at a glance and in full (the overview route, tab/overview.overview).
 * @typedef {{run: string, tensorflow_version: ?string, hosts: !Array<string>,
 *   onednn_enabled: ?boolean, onednn_source: string, onednn_state: string,
 *   onednn_reason: string, counts_from: string, count_basis: !Object<string, string>,
 *   recording: ?RecordingDoc, sources: !Object<string, !Array<string>>,
 *   warnings: !Array<string>, warnings_total: number,
 *   functions: !Array<{name: string, calls: number}>, functions_total: number,
 *   tf_functions: FunctionsBrief, op_types_total: number,
 *   onednn_verbose: ?{primitives: !Array<{kind: string, implementation: string,
 *     prop_kind: string, count: number, time_ms: number}>, primitives_total: number,
 *     note: string},
 *   modes: !Object<string, ModeTotals>,
 *   matrix: !Array<{mode: string, class: string, executions: number, time_ns: ?number}>,
 *   kinds: !Array<{mode: string, kind: string, executions: number,
 *     fused_executions: number, time_ns: ?number}>,
 *   glance: {basis: string, total: number, rows: !Array<Row>, names: !Array<string>,
 *     differs_total: number,
 *     premises: !Array<string>},
 *   dump: ?DumpCoverage,
 *   cpu: {features: ?Array<string>, source: string, note: string},
 *   xla_functions: !Array<{name: string, launches: number, calls_in_dump: number,
 *     note: string}>,
 *   lower_bound: !Object<string, {records: number, how: string, fix: string, kind: string}>,
 *   dtypes: {modes: !Object<string, !Array<{label: string, executions: number}>>,
 *     low_precision: !Array<string>, low_precision_op_types: number, recorded: boolean},
 *   devices: !Array<{device: string, eager: number, graph: number}>,
 *   devices_none: !Object<string, number>,
 *   unknowns: Unknowns,
 *   profile: {events: number, span_ns: number, debug_instrumentation_time_ns: number,
 *     time_source: !Array<string>}}} Overview
 */

/**
 * A line of the user's code and the eager work it issued (analyze/eager_sites, the summary
 * contract's runs[].eager_sites); time_ns null where no profile covered it (time_note);
 * time_source "profile" (joined events), "dispatch" (the recording job's clock) or "".
 * @typedef {{location: string, user_location: string, executions: number, time_ns: ?number,
 *   op_types: !Object<string, number>, user_function: string, user_scope: string,
 *   location_function: string,
 *   library_location: string, library_function: string, share: number, time_share: ?number,
 *   profiled_executions: number, time_note: string, time_source: string, calls: ?number,
 *   advice: !Array<string>}} EagerSiteDoc
 * @typedef {EagerSiteDoc & {op_types_total: number}} HotSpot
 */

/**
 * The eager hot spots (the hotspots route, tab/hotspots.hot_spots): the first lines, ranked.
 * @typedef {{run: string, sites: !Array<HotSpot>, total: number, executions: number,
 *   time_ns: ?number, joined_ns: ?number, time_source: string, note: string}} HotSpots
 */

/**
 * A window of the run's timeline (the timeline route, present/timeline.timeline_window):
 * single events [lane, start, dur, name id, kernel id, class] when few, else bins [lane,
 * start, end, count, busy ns, class, name id, oneDNN count]; names, lanes and classes
 * index them; labels: a tf.function's graph name -> its Python function's (present/lead);
 * graph: the concrete function whose calls (and the graph ops inside them) alone it holds.
 * @typedef {{start: number, end: number, span_ns: number, t0_ns: number,
 *   lanes: !Array<string>, classes: !Array<string>, total: number, names: !Array<string>,
 *   fused: !Array<number>, nearest?: {before: ?number, after: ?number},
 *   labels?: !Object<string, string>, graph?: string}
 *   & ({level: 'events', events: !Array<!Array<number>>}
 *      | {level: 'bins', bins: !Array<!Array<number>>, bin_ns: number})} TimelineAnswer
 */

/**
 * A window as the tab keeps it: the answer, with ``debug``, the tab's own note of whether
 * it asked for tfdbg's instrumentation too.
 * @typedef {TimelineAnswer & {debug?: boolean}} TimelineWindow
 */

/**
 * A run as the comparison names it (tab/compare).
 * @typedef {{run: string, tensorflow_version: ?string, onednn_enabled: ?boolean,
 *   onednn_source: string, onednn_state: string, onednn_reason: string, evidence: string,
 *   command: !Array<string>, ended: string}} RunBrief
 */

/**
 * One run's side of an op type in a mode (tab/compare).
 * @typedef {{executions: number, kernels: !Array<string>, classes: !Array<string>,
 *   seen: !Array<boolean>, time_ns: ?number}} CompareSide
 * @typedef {{a: !CompareSide, b: !CompareSide, time_delta_ns: ?number}} CompareMode
 * @typedef {{op_type: string, eager: !CompareMode, graph: !CompareMode,
 *   changes: !Array<string>, kernel_changed: boolean}} CompareRow
 */

/**
 * Two runs compared (the compare route, tab/compare.compare).
 * @typedef {{a: !RunBrief, b: !RunBrief, evidence_note: string, total: number,
 *   kernel_changes: number, evidence_changes: number, page: number, page_size: number, rows: !Array<CompareRow>}} Comparison
 */

/**
 * One trace of a tf.function (tab/functions; the contract's runs[].tf_functions[].trace_list).
 * @typedef {{graph: string, graph_id: string, calls: number, call_sites: !Array<string>,
 *   args: !Array<!Object<string, unknown>>, changed: !Array<!Object<string, unknown>>, note: string,
 *   tracing_s: ?number, tracing_from: string}} TraceDoc
 */

/**
 * One Python function run as a tf.function: the trace ledger (runs[].tf_functions).
 * @typedef {{python_name: string, name: string, location: string, kind: string,
 *   nested: boolean, objects: number, traces: number, calls: number, tracing_s: ?number,
 *   tracing_from: string, causes: !Object<string, number>, advice: !Array<string>,
 *   trace_list: !Array<TraceDoc>}} TfFunction
 */

/**
 * The Functions section (the functions route, tab/functions.functions).
 * @typedef {{run: string, total: number, functions: !Array<TfFunction>, empty: string}} FunctionsPayload
 */

/**
 * The op table's query: sort column and order, filters, search text, page, and the
 * graph id of one trace whose op types alone it shows ('' for all), with its name.
 * @typedef {{sort: string, order: string, filters: !Array<string>, q: string,
 *   page: number, pageSize: number, graph: string, graphName: string}} TableQuery
 */

/**
 * The stats of one mode (one of V.MODES) of a row, an op detail or a comparison row. The
 * modes are the served words (vocab.js), not names the types know: read through this.
 * @template T
 * @param {{eager: T, graph: T}} byMode
 * @param {string} mode
 * @return {T}
 */
export function ofMode(byMode, mode) {
  return /** @type {!Object<string, T>} */ (byMode)[mode];
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
