// Entry point of the Op Mode tab. TensorBoard loads this ES module in an
// iframe (/data/plugin_entry.html?name=opmode, base href plugin/opmode/) and
// calls render(). In: nothing. Out: the tab's DOM in document.body, in
// TensorBoard's theme (colors.js watchTheme).

import {App} from './views.js';

export async function render() {
  // TensorBoard's plugin_entry.html has neither: screen readers name the frame by its
  // title and pick a voice by its language.
  document.documentElement.lang = 'en';
  document.title = 'Op Mode: which ops ran eagerly, in graphs, with oneDNN';
  const link = document.createElement('link');
  link.rel = 'stylesheet';
  link.href = './style.css';
  document.head.appendChild(link);
  const app = new App(document.body);
  await app.start();
}
