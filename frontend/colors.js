// The one colour legend of the tab: mode x kernel class, colour-blind safe.
//
// Colours are from the Okabe-Ito palette (distinguishable with the common
// colour-vision deficiencies); every use also carries a text label, so no
// meaning rests on colour alone. The timeline puts eager and graph ops in
// separate, labelled lanes as well.

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
  fused: {color: '#CC79A7', label: 'fused', text: '#000000',
    description: 'folded into a fused kernel (e.g. _MklNativeFusedMatMul)'},
  unknown: {color: '#999999', label: 'kernel unknown', text: '#000000',
    description: 'executed, but no log line or profiler event names the kernel'},
  function: {color: '#009E73', label: 'tf.function call', text: '#ffffff',
    description: 'an eager call of a tf.function (its ops are in the graph lane)'},
  debug: {color: '#F0E442', label: 'tfdbg instrumentation', text: '#000000',
    description: 'ops the debugger added to dump tensors (hidden unless asked for)'},
};

/** Legend order. */
export const LEGEND_ORDER = ['eager_onednn', 'eager_stock', 'graph_onednn', 'graph_stock',
  'fused', 'unknown', 'function', 'debug'];

/**
 * Class key of a kernel in a mode.
 * @param {string} mode "eager" | "graph"
 * @param {?{class: string, onednn: boolean}} kernel
 * @return {string}
 */
export function classKey(mode, kernel) {
  if (!kernel || kernel.class === 'unknown') return 'unknown';
  if (kernel.class === 'fused') return 'fused';
  return `${mode}_${kernel.onednn ? 'onednn' : 'stock'}`;
}

/**
 * Class key of a matrix cell.
 * @param {string} mode
 * @param {string} cls "onednn" | "stock" | "fused" | "unknown"
 */
export function matrixKey(mode, cls) {
  if (cls === 'fused' || cls === 'unknown') return cls;
  return `${mode}_${cls}`;
}

/** Timeline class (server index name) -> legend key. */
export function timelineKey(name) {
  if (name === 'eager_unknown') return 'unknown';
  return name;
}
