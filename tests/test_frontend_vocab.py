"""The tab's JavaScript holds no copy of the shared words: it names them as served.

In: ``vocab.served()`` (what ``GET /data/plugin/opmode/vocab`` answers) and the source
of every ``frontend/*.js``, comments stripped. Out: a failure for each string literal
that spells one of the served words (a mode, an evidence word, a kernel kind or class,
a oneDNN state, a kernel name or prefix), but the few listed in ``ALLOWED``: display
text that happens to be the same English word, each with why and how many times.
Needs no TensorFlow.
"""
from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

from tensorboard.backend import application
from tensorboard.plugins import base_plugin
from werkzeug import test as wtest
from werkzeug.wrappers import Response

from tb_opmode import vocab
from tb_opmode.plugin.routes import OpModePlugin
from tb_opmode.vocab import served

FRONTEND = Path(__file__).resolve().parent.parent / "frontend"

# (file, word) -> (how many times, why that literal is not a copy of the word).
ALLOWED: dict[tuple[str, str], tuple[int, str]] = {
    ("dom.js", "on"): (1, "el(): props starting with 'on' are event handlers (onclick)"),
    ("dom.js", "stock"): (1, "kindWord(): the label shown for a stock kernel"),
    ("dom.js", "unknown"): (1, "kindWord(): the label shown for an unknown kernel"),
    ("dom.js", "fused"): (1, "the tag's text on a fused kernel's chip"),
    ("overview.js", "stock"): (1, "the matrix's column label"),
    ("overview.js", "unknown"): (2, "shown for a TF version or CPU the run does not record"),
}

_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
# A quoted string, or a template literal without ${...}; what is inside the quotes.
_LITERAL = re.compile(r"'((?:[^'\\\n]|\\.)*)'|\"((?:[^\"\\\n]|\\.)*)\"|`((?:[^`\\$]|\\.)*)`")


def _words() -> set[str]:
    out: set[str] = set()
    for value in served().values():
        out.update([value] if isinstance(value, str) else value)
    return out


def _code(text: str) -> str:
    """``text`` without its comments (a ``//`` inside a string literal, as in a URL,
    would cut the line: the tab's sources have none; the regexes' ``/`` are not ``//``)."""
    return _COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), text)


def test_the_frontend_names_the_served_words_and_copies_none() -> None:
    words = _words()
    found: Counter[tuple[str, str]] = Counter()
    where: dict[tuple[str, str], list[int]] = {}
    for path in sorted(FRONTEND.glob("*.js")):
        code = _code(path.read_text())
        for m in _LITERAL.finditer(code):
            text = next(g for g in m.groups() if g is not None)
            if text in words:
                key = (path.name, text)
                found[key] += 1
                where.setdefault(key, []).append(code.count("\n", 0, m.start()) + 1)
    copies = [f"frontend/{name}:{','.join(map(str, where[(name, word)]))}: {word!r} "
              f"(name it from vocab.js's V)"
              for (name, word), n in sorted(found.items()) if ALLOWED.get((name, word), (0,))[0] != n]
    assert not copies, "\n".join(copies)


def test_the_scan_sees_a_copy() -> None:
    """The scan finds a word where one is spelled, and not in a comment."""
    code = _code("const m = 'eager'; // 'graph'\n/* '(unknown)' */ const k = `_Mkl`;")
    seen = {next(g for g in m.groups() if g is not None) for m in _LITERAL.finditer(code)}
    assert seen & _words() == {"eager", "_Mkl"}


def test_the_tab_loads_the_words_before_it_renders() -> None:
    views = (FRONTEND / "views.js").read_text()
    start = views[views.index("async start()"):]
    assert start.index("await loadVocab()") < start.index("this.buildLayout()")
    assert "getJSON('vocab')" in (FRONTEND / "vocab.js").read_text()


def test_the_words_are_served_by_their_names(tmp_path: Path) -> None:
    """``GET .../vocab`` answers every word under its name in vocab.py."""
    plugin = OpModePlugin(base_plugin.TBContext(logdir=str(tmp_path)))
    try:
        client = wtest.Client(application.TensorBoardWSGI([plugin]), Response)
        response = client.get("/data/plugin/opmode/vocab")
        assert response.status_code == 200 and response.mimetype == "application/json"
        words = json.loads(response.get_data(as_text=True))
    finally:
        plugin.close()
    assert words == served()
    assert words["MODES"] == list(vocab.MODES) and words["REMOVED"] == vocab.REMOVED
    assert words["KIND_REMOVED"] in words["KERNEL_KINDS"]
    assert {words["ONEDNN_ON"], words["ONEDNN_OFF"], words["ONEDNN_UNKNOWN"]} == set(
        vocab.ONEDNN_STATES.values())
    # Every public word of vocab.py is served (functions are not words).
    assert set(words) == {n for n in vocab.__all__ if not callable(getattr(vocab, n))} - {"ONEDNN_STATES"}
