// The words the server and the tab share (tb_opmode/vocab.py): modes, evidence, kernel
// kinds and classes, the names of no kernel, the oneDNN states and prefix.
//
// In: the route "vocab" (vocab.served(): each word under its Python name). Out: V,
// filled once by loadVocab() before any view renders. The JavaScript names the words
// (V.EAGER, V.KIND_REMOVED) and holds no copy of them (tests/test_frontend_vocab.py).

import {getJSON} from './data.js';

/**
 * @typedef {{
 *   EAGER: string, GRAPH: string, MODES: !Array<string>,
 *   LOG: string, PROFILE: string, INFERRED: string, EVIDENCE: !Array<string>,
 *   REMOVED: string, UNKNOWN: string, NOT_RECORDED: string,
 *   KIND_ONEDNN: string, KIND_FUSED: string, KIND_STOCK: string, KIND_REMOVED: string,
 *   KIND_UNKNOWN: string, KERNEL_CLASSES: !Array<string>, KERNEL_KINDS: !Array<string>,
 *   ONEDNN_ON: string, ONEDNN_OFF: string, ONEDNN_UNKNOWN: string,
 *   PLUMBING_KERNELS: !Array<string>, FUNCTION_PREFIXES: !Array<string>,
 *   DEBUG_PREFIX: string, ONEDNN_PREFIX: string,
 * }} Vocab
 */

/** @type {Vocab} */
export const V = /** @type {Vocab} */ ({});

/** Fetch the words once; the views read them from V. */
export async function loadVocab() {
  Object.assign(V, await getJSON('vocab'));
}
