"""The JSON the routes serve is typed twice, and both say the same: ``present/payloads.py``'s
``TypedDict``s and ``frontend/data.js``'s ``@typedef``s.

In: the source of ``frontend/data.js`` (its ``@typedef`` comments, parsed here as the
JSDoc/TypeScript type expressions they are) and ``tb_opmode.present.payloads`` (each
``TypedDict``'s fields and which are optional, through ``typing``). Out: a failure for a
field one side has and the other lacks, a field optional on one side only, or a field
whose shape differs (an object, a list, a map, a string, a number...), walking nested
objects and lists; a failure for a typedef or ``TypedDict`` of a payload with no
counterpart, but those listed below with why. Then the payloads the tab's functions
build from two committed runs are checked against their ``TypedDict``s, so that the
Python types say what the code really serves. Needs no TensorFlow.
"""
from __future__ import annotations

import re
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Optional, TypedDict, Union

from tb_opmode.analyze.assemble import RunModel
from tb_opmode.present import payloads, timeline
from tb_opmode.present.contract import summary_doc
from tb_opmode.present.tab import (
    build_view,
    compare,
    export_json,
    hot_spots,
    op_detail,
    op_page,
    overview,
)

from .conftest import Fixture

DATA_JS = Path(__file__).resolve().parents[2] / "frontend" / "data.js"

# Python name -> the typedef of the same payload in data.js, where the two differ.
JS_NAMES = {
    "RowMode": "ModeStats",              # Python's model.ModeStats is what it is built from
    "TimelineWindow": "TimelineAnswer",  # data.js's TimelineWindow is the tab's copy of it
}
# Typedefs with no TypedDict, each with why.
JS_ONLY = {
    "RunEntry": "the runs route's entries: built by plugin/loader, outside present/",
    "Progress": "the loader's progress: built by plugin/loader, outside present/",
    "RunsAnswer": "the runs route: built by plugin/loader, outside present/",
    "TableQuery": "the tab's own state (the op table's query), never served",
    "TimelineWindow": "a TimelineAnswer as the tab keeps it, noting what it asked for",
}
# TypedDicts with no typedef of their own (the tab does not read them, or reads them
# only as a part of another, checked there), each with why.
PY_ONLY = {
    "SummaryDoc": "the summary JSON: the CLI's, and a download of the tab",
    "RunDoc": "a run of the summary JSON",
    "OpTypeDoc": "a row of the summary JSON",
    "ModeDoc": "a mode of a row of the summary JSON",
    "KernelDoc": "a kernel of the summary JSON (Kernel, its form in the tab, is checked)",
    "OnednnVerbose": "the summary JSON's ONEDNN_VERBOSE counts (the overview's are capped)",
    "TimeShare": "the summary JSON's time share",
    "TimeShareCell": "a cell of the summary JSON's time share",
    "ExportDoc": "the JSON export: a download, not read by the tab",
    "ExportRun": "a run of the JSON export",
    "RowOptional": "Row's optional fields: checked as part of Row",
    "OpDetailOptional": "OpDetail's optional fields: checked as part of OpDetail",
}


# ---------------------------------------------------------------- a type, either side

@dataclass(frozen=True)
class Obj:
    """An object type: field -> (optional, type)."""

    fields: dict[str, tuple[bool, Any]]
    name: str = ""


@dataclass(frozen=True)
class Arr:
    item: Any


@dataclass(frozen=True)
class Map:
    value: Any


@dataclass(frozen=True)
class Union_:
    members: tuple[Any, ...]


@dataclass(frozen=True)
class Inter:
    members: tuple[Any, ...]


@dataclass(frozen=True)
class Ref:
    name: str


# Primitive kinds (as strings) and literals (as Lit) are the leaves.
@dataclass(frozen=True)
class Lit:
    value: str


_NOTHING = ("null", "undefined")


# ---------------------------------------------------------------- data.js

_TOKEN = re.compile(r"\s*(?:(?P<name>[A-Za-z_$][\w$]*)|(?P<str>'[^']*')|(?P<punct>[{}()<>,:?!|&]))")


def _tokens(text: str) -> list[str]:
    out, at = [], 0
    text = text.strip()
    while at < len(text):
        m = _TOKEN.match(text, at)
        assert m and m.end() > at, f"cannot read the type at {text[at:at + 40]!r}"
        out.append(m.group(m.lastgroup or ""))
        at = m.end()
    return out


class _JsType:
    """A JSDoc / TypeScript type expression, as far as data.js's typedefs write them."""

    def __init__(self, text: str) -> None:
        self.tokens = _tokens(text)
        self.at = 0

    def parse(self) -> Any:
        found = self.union()
        assert self.at == len(self.tokens), f"left over: {self.tokens[self.at:]}"
        return found

    def peek(self) -> str:
        return self.tokens[self.at] if self.at < len(self.tokens) else ""

    def take(self, expected: str = "") -> str:
        token = self.peek()
        assert not expected or token == expected, f"expected {expected!r}, got {token!r}"
        self.at += 1
        return token

    def union(self) -> Any:
        members = [self.inter()]
        while self.peek() == "|":
            self.take()
            members.append(self.inter())
        return members[0] if len(members) == 1 else Union_(tuple(members))

    def inter(self) -> Any:
        members = [self.unary()]
        while self.peek() == "&":
            self.take()
            members.append(self.unary())
        return members[0] if len(members) == 1 else Inter(tuple(members))

    def unary(self) -> Any:
        if self.peek() == "?":  # nullable
            self.take()
            return Union_((self.unary(), "null"))
        if self.peek() == "!":  # non-null: what a type is anyway here
            self.take()
        return self.primary()

    def primary(self) -> Any:
        token = self.take()
        if token == "{":
            return self.fields()
        if token == "(":
            inner = self.union()
            self.take(")")
            return inner
        if token.startswith("'"):
            return Lit(token[1:-1])
        args = self.generic_args() if self.peek() == "<" else []
        if token == "Array":
            return Arr(args[0])
        if token == "Object":
            return Map(args[1])
        if token in ("string", "number", "boolean", "null", "undefined", "unknown"):
            return token
        return Ref(token)

    def generic_args(self) -> list[Any]:
        self.take("<")
        args = [self.union()]
        while self.peek() == ",":
            self.take()
            args.append(self.union())
        self.take(">")
        return args

    def fields(self) -> Obj:
        out: dict[str, tuple[bool, Any]] = {}
        while self.peek() != "}":
            name = self.take()
            optional = self.peek() == "?"
            if optional:
                self.take()
            self.take(":")
            out[name] = (optional, self.union())
            if self.peek() == ",":
                self.take()
        self.take("}")
        return Obj(out)


def _typedef_texts(source: str) -> dict[str, str]:
    """Each ``@typedef {TYPE} Name`` of the source's JSDoc comments: name -> TYPE."""
    out = {}
    for comment in re.findall(r"/\*\*(.*?)\*/", source, re.S):
        text = " ".join(line.strip().lstrip("*") for line in comment.splitlines())
        for m in re.finditer(r"@typedef\s*\{", text):
            depth, at = 1, m.end()
            while depth:
                depth += {"{": 1, "}": -1}.get(text[at], 0)
                at += 1
            name = re.match(r"\s*(\w+)", text[at:])
            assert name, f"a typedef without a name: {text[m.start():at]}"
            out[name.group(1)] = text[m.end():at - 1]
    return out


def js_typedefs(source: str) -> dict[str, Any]:
    return {name: _JsType(text).parse() for name, text in _typedef_texts(source).items()}


# ---------------------------------------------------------------- payloads.py

def _is_typeddict(hint: Any) -> bool:
    return isinstance(hint, type) and typing.is_typeddict(hint)


def py_type(hint: Any) -> Any:
    """A ``typing`` hint as the same kind of type the JS side parses to."""
    if _is_typeddict(hint):
        hints = typing.get_type_hints(hint)
        return Obj({k: (k in hint.__optional_keys__, py_type(h)) for k, h in hints.items()},
                   hint.__name__)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is list:
        return Arr(py_type(args[0]))
    if origin is dict:
        return Map(py_type(args[1]))
    if origin is Union:
        return Union_(tuple(py_type(a) for a in args))
    if origin is Literal:
        return Union_(tuple(Lit(a) for a in args)) if len(args) > 1 else Lit(args[0])
    simple = {int: "number", float: "number", str: "string", bool: "boolean",
              type(None): "null", Any: "unknown"}
    assert hint in simple, f"no JS counterpart known for {hint!r}"
    return simple[hint]


# ---------------------------------------------------------------- comparing them

class _Comparison:
    def __init__(self, js_defs: dict[str, Any], paired: dict[str, str]) -> None:
        self.js_defs = js_defs
        self.paired = paired             # typedef -> the TypedDict compared with it
        self.errors: list[str] = []
        self.reached: set[str] = set()   # TypedDicts compared, at any depth

    def named(self, js: Any, py: Any, where: str) -> bool:
        """A typedef named inside another is compared on its own: here only its name."""
        if not (isinstance(js, Ref) and js.name in self.paired):
            return False
        if not (isinstance(py, Obj) and py.name == self.paired[js.name]):
            self.errors.append(f"{where}: {js.name} in data.js, {_show(py)} in payloads.py")
        return True

    def resolve(self, t: Any) -> Any:
        """A JS type with its typedef names replaced, null and undefined dropped from
        unions, intersections of objects merged (a union inside one spread over it)."""
        if isinstance(t, Ref) and t.name in self.js_defs:
            return self.resolve(self.js_defs[t.name])
        if isinstance(t, Union_):
            members = [self.resolve(m) for m in t.members if m not in _NOTHING]
            flat = [x for m in members for x in (m.members if isinstance(m, Union_) else (m,))]
            return flat[0] if len(flat) == 1 else Union_(tuple(flat))
        if isinstance(t, Inter):
            variants: list[dict[str, tuple[bool, Any]]] = [{}]
            for member in map(self.resolve, t.members):
                options = member.members if isinstance(member, Union_) else (member,)
                assert all(isinstance(o, Obj) for o in options), f"cannot merge {member}"
                variants = [{**v, **o.fields} for v in variants for o in options]
            objs = tuple(Obj(v) for v in variants)
            return objs[0] if len(objs) == 1 else Union_(objs)
        return t

    def compare(self, js: Any, py: Any, where: str) -> None:
        if isinstance(py, Union_):
            members = tuple(m for m in py.members if m not in _NOTHING)
            py = members[0] if len(members) == 1 else Union_(members)
        if isinstance(js, Union_):
            members = tuple(m for m in js.members if m not in _NOTHING)
            js = members[0] if len(members) == 1 else Union_(members)
        if self.named(js, py, where):
            return
        js = self.resolve(js)
        if isinstance(py, Obj) and py.name:
            self.reached.add(py.name)
        if isinstance(js, Union_) and isinstance(py, Union_):
            self.compare_variants(js, py, where)
        elif isinstance(js, Obj) and isinstance(py, Obj):
            self.compare_fields(js, py, where)
        elif isinstance(js, Arr) and isinstance(py, Arr):
            self.compare(js.item, py.item, f"{where}[]")
        elif isinstance(js, Map) and isinstance(py, Map):
            self.compare(js.value, py.value, f"{where}{{}}")
        elif js != py and "unknown" not in (js, py):
            self.errors.append(f"{where}: {_show(js)} in data.js, {_show(py)} in payloads.py")

    def compare_fields(self, js: Obj, py: Obj, where: str) -> None:
        for name in sorted(js.fields.keys() | py.fields.keys()):
            if name not in py.fields:
                self.errors.append(f"{where}.{name}: in data.js only")
            elif name not in js.fields:
                self.errors.append(f"{where}.{name}: in payloads.py only")
            else:
                (js_opt, js_type), (py_opt, py_t) = js.fields[name], py.fields[name]
                if js_opt != py_opt:
                    self.errors.append(f"{where}.{name}: optional in "
                                       f"{'data.js' if js_opt else 'payloads.py'} only")
                self.compare(js_type, py_t, f"{where}.{name}")

    def compare_variants(self, js: Union_, py: Union_, where: str) -> None:
        """Unions of objects (a payload of several forms): each form of one side with the
        form of the other that has the same fields, or the same literal ``level``."""
        def key(t: Any) -> Any:
            if isinstance(t, Obj):
                return frozenset(n for n, (_o, v) in t.fields.items() if not isinstance(v, Lit)) | \
                    {f"{n}={v.value}" for n, (_o, v) in t.fields.items() if isinstance(v, Lit)}
            return t
        js_by = {key(m): m for m in js.members}
        py_by = {key(m): m for m in py.members}
        if js_by.keys() != py_by.keys():
            self.errors.append(f"{where}: forms {sorted(map(_show, js.members))} in data.js, "
                               f"{sorted(map(_show, py.members))} in payloads.py")
            return
        for k, member in js_by.items():
            self.compare(member, py_by[k], where)


def _show(t: Any) -> str:
    if isinstance(t, Obj):
        return t.name or "{" + ", ".join(sorted(t.fields)) + "}"
    if isinstance(t, Arr):
        return f"Array<{_show(t.item)}>"
    if isinstance(t, Map):
        return f"Object<string, {_show(t.value)}>"
    if isinstance(t, Union_):
        return "|".join(map(_show, t.members))
    if isinstance(t, Lit):
        return repr(t.value)
    return str(t)


def _payload_types() -> dict[str, Any]:
    """Each TypedDict of payloads.py (and each union of them) by its name."""
    out = {}
    for name in payloads.__all__:
        value = getattr(payloads, name)
        members = typing.get_args(value) if typing.get_origin(value) is Union else (value,)
        if all(_is_typeddict(m) for m in members):
            out[name] = value
    return out


def check(js_source: str, types: dict[str, Any], names: dict[str, str]
          ) -> tuple[list[str], set[str], set[str]]:
    """(the disagreements, the TypedDicts reached, the typedefs compared) of the
    TypedDicts ``types`` and the typedefs of ``js_source``, paired by name."""
    js_defs = js_typedefs(js_source)
    paired = {names.get(name, name): name for name in types if names.get(name, name) in js_defs}
    comparison = _Comparison(js_defs, paired)
    for js_name, name in sorted(paired.items()):
        comparison.reached.add(name)
        comparison.compare(js_defs[js_name], py_type(types[name]), js_name)
    return comparison.errors, comparison.reached, set(paired)


def test_data_js_and_payloads_agree() -> None:
    errors, reached, compared = check(DATA_JS.read_text(), _payload_types(), JS_NAMES)
    assert not errors, "frontend/data.js and present/payloads.py disagree:\n" + "\n".join(errors)
    js_names = set(js_typedefs(DATA_JS.read_text()))
    unpaired_js = sorted(js_names - compared - JS_ONLY.keys())
    assert not unpaired_js, f"typedefs of data.js with no TypedDict (or list them in JS_ONLY): {unpaired_js}"
    unpaired_py = sorted(_payload_types().keys() - reached - PY_ONLY.keys())
    assert not unpaired_py, f"TypedDicts with no typedef (or list them in PY_ONLY): {unpaired_py}"
    stale = sorted((JS_ONLY.keys() & compared) | (JS_ONLY.keys() - js_names)
                   | (PY_ONLY.keys() & reached) | (PY_ONLY.keys() - _payload_types().keys()))
    assert not stale, f"listed as one-sided but paired, or no longer there: {stale}"


class _Small(TypedDict):
    a: int
    b: list[str]


class _SmallOptional(TypedDict, total=False):
    c: str


class _Sample(_SmallOptional):
    small: _Small
    d: Optional[float]
    level: Literal["x"]


def test_a_disagreement_is_found() -> None:
    """The check sees a missing field, an extra one, optional on one side only, another
    kind of value, nested in an object and a list, through typedef names."""
    js = """/** @typedef {{a: number, b: !Array<number>, e?: string}} Small */
            /** @typedef {{small: !Small, c: string, d: ?number, level: 'y'}} Sample */"""
    errors, reached, compared = check(js, {"_Sample": _Sample}, {"_Sample": "Sample"})
    assert sorted(errors) == [
        "Sample.c: optional in payloads.py only",
        "Sample.level: 'y' in data.js, 'x' in payloads.py",
        "Sample.small.b[]: number in data.js, string in payloads.py",
        "Sample.small.e: in data.js only",
    ]
    assert reached == {"_Sample", "_Small"} and compared == {"Sample"}
    agreeing = "/** @typedef {{small: {a: number, b: !Array<string>}, c?: string, d: ?number, level: 'x'}} Sample */"
    assert check(agreeing, {"_Sample": _Sample}, {"_Sample": "Sample"})[0] == []


def test_the_typedef_reader_reads_what_data_js_writes() -> None:
    defs = js_typedefs("""/**
     * Two forms.
     * @typedef {{start: number, nearest?: {before: ?number}}
     *   & ({level: 'events', events: !Array<!Array<number>>}
     *      | {level: 'bins', bin_ns: number})} Window
     * @typedef {Window & {debug?: boolean}} Kept
     */""")
    assert set(defs) == {"Window", "Kept"}
    comparison = _Comparison(defs, {})
    forms = comparison.resolve(Ref("Kept"))
    assert isinstance(forms, Union_) and len(forms.members) == 2
    assert all({"start", "nearest", "level", "debug"} <= set(f.fields) for f in forms.members)


# ---------------------------------------------------------------- what the code serves

def conforms(value: Any, hint: Any, where: str = "$") -> list[str]:
    """Where ``value`` (JSON-ready) is not of the type ``hint`` says: a TypedDict's
    required fields are there and it has no other, recursively."""
    if _is_typeddict(hint):
        if not isinstance(value, dict):
            return [f"{where}: not an object"]
        hints = typing.get_type_hints(hint)
        out = [f"{where}.{k}: missing" for k in hint.__required_keys__ if k not in value]
        out += [f"{where}.{k}: not in {hint.__name__}" for k in value if k not in hints]
        for k in value.keys() & hints.keys():
            out += conforms(value[k], hints[k], f"{where}.{k}")
        return out
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Union:
        tries = [conforms(value, a, where) for a in args]
        return [] if any(not t for t in tries) else min(tries, key=len)
    if origin is list:
        if not isinstance(value, list):
            return [f"{where}: not a list"]
        return [e for i, item in enumerate(value) for e in conforms(item, args[0], f"{where}[{i}]")]
    if origin is dict:
        if not isinstance(value, dict):
            return [f"{where}: not an object"]
        return [e for k, item in value.items() for e in conforms(item, args[1], f"{where}.{k}")]
    if origin is Literal:
        return [] if value in args else [f"{where}: {value!r} is not one of {args}"]
    accepted = {int: (int,), float: (int, float), str: (str,), bool: (bool,), type(None): (type(None),)}
    if hint is Any:
        return []
    ok = isinstance(value, accepted[hint]) and (hint is bool or not isinstance(value, bool))
    return [] if ok else [f"{where}: {value!r} is not {hint.__name__}"]


def test_the_payloads_built_are_of_their_types(full_model: RunModel, full_health: Fixture,
                                               no_tensor_model: RunModel, no_tensor: Fixture) -> None:
    views = [build_view(full_model, str(full_health.directory)),
             build_view(no_tensor_model, str(no_tensor.directory))]
    built: list[tuple[str, Any, Any]] = []
    for view in views:
        name = view.model.run
        built += [(f"{name} overview", overview(view), payloads.Overview),
                  (f"{name} page", op_page(view, page_size=200), payloads.OpPage),
                  (f"{name} export", export_json(view), payloads.ExportDoc),
                  (f"{name} summary", summary_doc([view.model], view.logdir), payloads.SummaryDoc),
                  (f"{name} compare", compare(view, views[0], changed_only=False), payloads.Comparison),
                  (f"{name} hot spots", hot_spots(view), payloads.HotSpots)]
        built += [(f"{name} op {op}", op_detail(view, op, 50), payloads.OpDetail) for op in view.rows]
        for max_events in (1, timeline.MAX_EVENTS):
            built.append((f"{name} timeline", timeline.timeline_window(view.timeline, max_events=max_events),
                          payloads.TimelineWindow))
        calls = view.timeline.lanes.get("function")
        for graph in sorted(set(calls.names if calls else ())):   # filtered to one function's calls
            built.append((f"{name} {graph} timeline",
                          timeline.timeline_window(view.timeline, graph=graph), payloads.TimelineWindow))
    wrong = [f"{what}: {e}" for what, value, hint in built for e in conforms(value, hint)[:5]]
    assert not wrong, "\n".join(wrong)
    # Both forms of the timeline window and the optional fields were seen.
    levels = {value["level"] for what, value, _h in built if what.endswith("timeline")}
    assert levels == {"events", "bins"}
    assert any("graph" in value for what, value, _h in built if what.endswith("timeline"))


def test_the_conformance_check_can_fail() -> None:
    assert conforms({"a": 1, "b": ["x"]}, _Small) == []
    assert sorted(conforms({"a": True, "b": [1], "z": 0}, _Small)) == [
        "$.a: True is not int", "$.b[0]: 1 is not str", "$.z: not in _Small"]
    assert conforms({"b": []}, _Small) == ["$.a: missing"]
