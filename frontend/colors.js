// The one colour legend of the tab: mode x oneDNN, colour-blind safe.
//
// Colours are from the Okabe-Ito palette (distinguishable with the common
// colour-vision deficiencies); every use also carries a text label, so no
// meaning rests on colour alone. The timeline puts eager and graph ops in
// separate, labelled lanes as well. A kernel is coloured by its mode and by
// whether it is oneDNN (_Mkl*), always: a fused kernel (_MklNativeFused*) is
// oneDNN-coloured and carries a separate mark (FUSED: an outline and a
// "fused" tag), never a colour of its own. The table and the timeline use the
// same keys. The words (modes, kinds) are the server's (vocab.js).

import {V} from './vocab.js';

/**
 * @typedef {{color: string, label: string, text: string, description: string,
 *            hollow?: boolean}} LegendEntry
 */

/**
 * Legend entries: key -> {color, label, description}, keyed as kindKey() keys a mode and
 * a kernel kind, plus the timeline's "function" and "debug". Filled by buildLegend(),
 * once the words (vocab.js) are loaded.
 * @type {!Object<string, LegendEntry>}
 */
export const CLASSES = {};

/** The mark of a fused kernel (grappler's remapper made it from several ops). */
export const FUSED = {color: '#CC79A7', label: 'fused kernel (outlined)',
  description: 'a kernel grappler fused from several ops (e.g. _MklNativeFusedMatMul); ' +
    'its colour still says mode and oneDNN'};

/** Legend order (filled by buildLegend()). @type {!Array<string>} */
export const LEGEND_ORDER = [];

/** Fill CLASSES and LEGEND_ORDER, in legend order, from the served words. */
export function buildLegend() {
  /** @type {!Array<[string, LegendEntry]>} */
  const entries = [
    [kindKey(V.EAGER, V.KIND_ONEDNN), {color: '#0072B2', label: 'eager · oneDNN', text: '#ffffff',
      description: `ran eagerly, a oneDNN kernel (${V.ONEDNN_PREFIX}*)`}],
    [kindKey(V.EAGER, V.KIND_STOCK), {color: '#E69F00', label: 'eager · stock', text: '#000000',
      description: 'ran eagerly, a stock TensorFlow kernel'}],
    [kindKey(V.GRAPH, V.KIND_ONEDNN), {color: '#56B4E9', label: 'graph · oneDNN', text: '#000000',
      description: 'ran inside a graph (tf.function), a oneDNN kernel'}],
    [kindKey(V.GRAPH, V.KIND_STOCK), {color: '#D55E00', label: 'graph · stock', text: '#ffffff',
      description: 'ran inside a graph (tf.function), a stock kernel'}],
    [V.KIND_REMOVED, {color: 'transparent', label: 'no kernel (removed by grappler)',
      text: '#000000', hollow: true,
      description: 'grappler took the op out of the graph (e.g. an identity transpose): no kernel ran'}],
    [V.KIND_UNKNOWN, {color: '#999999', label: 'unknown kernel', text: '#000000',
      description: 'executed, but the evidence does not name the kernel (hover it for why)'}],
    ['function', {color: '#009E73', label: 'tf.function call', text: '#ffffff',
      description: 'an eager call of a tf.function (its ops are in the graph lane)'}],
    ['debug', {color: '#F0E442', label: 'tfdbg instrumentation', text: '#000000',
      description: 'ops the debugger added to dump tensors (hidden unless asked for)'}],
  ];
  LEGEND_ORDER.length = 0;
  for (const [key, entry] of entries) {
    CLASSES[key] = entry;
    LEGEND_ORDER.push(key);
  }
}

/**
 * Kind of a kernel: one of V.KERNEL_KINDS (the server's "kind"; from its "class" field
 * when absent).
 * @param {?{kind?: string, class?: string, onednn: boolean, name: string}} kernel
 * @return {string}
 */
export function kernelKind(kernel) {
  if (!kernel) return V.KIND_UNKNOWN;
  if (kernel.kind) return kernel.kind;
  if (kernel.name === V.REMOVED) return V.KIND_REMOVED;
  if (kernel.class === V.KIND_UNKNOWN) return V.KIND_UNKNOWN;
  return kernel.onednn ? V.KIND_ONEDNN : V.KIND_STOCK;
}

/**
 * Class key of a kernel in a mode: mode x oneDNN, or removed / unknown.
 * @param {string} mode one of V.MODES
 * @param {?{kind?: string, class?: string, onednn: boolean, name: string}} kernel
 * @return {string}
 */
export function classKey(mode, kernel) {
  return kindKey(mode, kernelKind(kernel));
}

/**
 * Class key of a mode and a kind.
 * @param {string} mode
 * @param {string} kind one of V.KERNEL_KINDS
 * @return {string}
 */
export function kindKey(mode, kind) {
  if (kind === V.KIND_REMOVED || kind === V.KIND_UNKNOWN) return kind;
  return `${mode}_${kind}`;
}

/**
 * Timeline class (server index name) -> legend key.
 * @param {string} name
 * @return {string}
 */
export function timelineKey(name) {
  if (name === `${V.EAGER}_${V.KIND_UNKNOWN}`) return V.KIND_UNKNOWN;
  return name;
}

// ---------------------------------------------------------------- theme

/** TensorBoard's own <body>, when the tab's iframe may read it (same origin). */
function tensorBoardBody() {
  try {
    if (window.parent && window.parent !== window && window.parent.document) {
      return window.parent.document.body || null;
    }
  } catch (err) {
    // Another origin: fall back to the system's scheme.
  }
  return null;
}

/**
 * Follow TensorBoard's theme: its menu (browser default / light / dark) sets the
 * class "dark-mode" on its own <body>; the tab, in an iframe, reads that class and
 * watches it. Outside TensorBoard, the system's prefers-color-scheme decides.
 * Sets "opm-dark" or "opm-light" on ``root`` and calls ``onChange`` after a change.
 * @param {!HTMLElement} root
 * @param {function(): void} onChange
 * @return {function(): void} stops watching
 */
export function watchTheme(root, onChange) {
  const scheme = window.matchMedia('(prefers-color-scheme: dark)');
  const host = tensorBoardBody();
  const apply = () => {
    const dark = host ? host.classList.contains('dark-mode') : scheme.matches;
    const changed = root.classList.contains('opm-dark') !== dark ||
      !root.classList.contains(dark ? 'opm-dark' : 'opm-light');
    root.classList.toggle('opm-dark', dark);
    root.classList.toggle('opm-light', !dark);
    root.dataset.theme = dark ? 'dark' : 'light';
    document.documentElement.style.colorScheme = dark ? 'dark' : 'light';
    if (changed) onChange();
  };
  apply();
  let observer = null;
  if (host) {
    observer = new MutationObserver(apply);
    observer.observe(host, {attributes: true, attributeFilter: ['class']});
  }
  // TensorBoard's "browser default" follows the system too, and re-sets its class.
  if (scheme.addEventListener) scheme.addEventListener('change', apply);
  return () => {
    if (observer) observer.disconnect();
    if (scheme.removeEventListener) scheme.removeEventListener('change', apply);
  };
}
