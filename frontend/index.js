// Entry point of the Op Mode tab. TensorBoard loads this ES module in an
// iframe (/data/plugin_entry.html?name=opmode, base href plugin/opmode/) and
// calls render(). In: nothing. Out: the tab's DOM in document.body, in
// TensorBoard's theme (colors.js watchTheme).

import {App} from './views.js';

export async function render() {
  const link = document.createElement('link');
  link.rel = 'stylesheet';
  link.href = './style.css';
  document.head.appendChild(link);
  const app = new App(document.body);
  await app.start();
}
