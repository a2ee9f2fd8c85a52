// The one colour legend of the tab: mode x oneDNN, colour-blind safe.
//
// Colours are from the Okabe-Ito palette (distinguishable with the common
// colour-vision deficiencies); every use also carries a text label, so no
// meaning rests on colour alone. The timeline puts eager and graph ops in
// separate, labelled lanes as well. A kernel is coloured by its mode and by
// whether it is oneDNN (_Mkl*), always: a fused kernel (_MklNativeFused*) is
// oneDNN-coloured and carries a separate mark (FUSED: an outline and a
// "fused" tag), never a colour of its own. The table and the timeline use the
// same keys.

/** Legend entries: key -> {color, label, description}. */
export const CLASSES = {
  eager_onednn: {color: '#0072B2', label: 'eager · oneDNN', text: '#ffffff',
    description: 'ran eagerly, a oneDNN kernel (_Mkl*)'},
  eager_stock: {color: '#E69F00', label: 'eager · stock', text: '#000000',
    description: 'ran eagerly, a stock TensorFlow kernel'},
  graph_onednn: {color: '#56B4E9', label: 'graph · oneDNN', text: '#000000',
    description: 'ran inside a graph (tf.function), a oneDNN kernel'},
  graph_stock: {color: '#D55E00', label: 'graph · stock', text: '#ffffff',
    description: 'ran inside a graph (tf.function), a stock kernel'},
  removed: {color: 'transparent', label: 'no kernel (removed by grappler)', text: '#000000',
    hollow: true,
    description: 'grappler took the op out of the graph (e.g. an identity transpose): no kernel ran'},
  unknown: {color: '#999999', label: 'unknown kernel', text: '#000000',
    description: 'executed, but the evidence does not name the kernel (hover it for why)'},
  function: {color: '#009E73', label: 'tf.function call', text: '#ffffff',
    description: 'an eager call of a tf.function (its ops are in the graph lane)'},
  debug: {color: '#F0E442', label: 'tfdbg instrumentation', text: '#000000',
    description: 'ops the debugger added to dump tensors (hidden unless asked for)'},
};

/** The mark of a fused kernel (grappler's remapper made it from several ops). */
export const FUSED = {color: '#CC79A7', label: 'fused kernel (outlined)',
  description: 'a kernel grappler fused from several ops (e.g. _MklNativeFusedMatMul); ' +
    'its colour still says mode and oneDNN'};

/** Legend order. */
export const LEGEND_ORDER = ['eager_onednn', 'eager_stock', 'graph_onednn', 'graph_stock',
  'removed', 'unknown', 'function', 'debug'];

/**
 * Kind of a kernel: "onednn" | "stock" | "removed" | "unknown" (the server's "kind";
 * from its older "class" field when absent).
 * @param {?{kind: (string|undefined), class: string, onednn: boolean, name: string}} kernel
 * @return {string}
 */
export function kernelKind(kernel) {
  if (!kernel) return 'unknown';
  if (kernel.kind) return kernel.kind;
  if (kernel.name === '(optimized away)') return 'removed';
  if (kernel.class === 'unknown') return 'unknown';
  return kernel.onednn ? 'onednn' : 'stock';
}

/**
 * Class key of a kernel in a mode: mode x oneDNN, or removed / unknown.
 * @param {string} mode "eager" | "graph"
 * @param {?Object} kernel
 * @return {string}
 */
export function classKey(mode, kernel) {
  return kindKey(mode, kernelKind(kernel));
}

/**
 * Class key of a mode and a kind.
 * @param {string} mode
 * @param {string} kind "onednn" | "stock" | "removed" | "unknown"
 */
export function kindKey(mode, kind) {
  if (kind === 'removed' || kind === 'unknown') return kind;
  return `${mode}_${kind}`;
}

/** Timeline class (server index name) -> legend key. */
export function timelineKey(name) {
  if (name === 'eager_unknown') return 'unknown';
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
 * @param {function()} onChange
 * @return {function()} stops watching
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
