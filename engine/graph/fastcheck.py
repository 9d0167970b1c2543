"""A compiled yes/no check of a document against the graph schema (issue 21 §4).

``jsonschema`` walks the schema on every call, which was 91% of compiling the shipped
graph. Here the schema is turned once into nested Python closures that answer only "valid
or not"; :func:`engine.graph.loader.validate_structure` trusts a "valid" and asks
``jsonschema`` for everything else, so every refusal and its message are exactly what
``jsonschema`` says. A schema using a keyword this module does not implement compiles to
``None`` (no fast path: ``jsonschema`` decides every document).

Implemented (JSON Schema 2020-12 semantics, as ``jsonschema``'s Draft 2020-12 validator
applies them): ``type``, ``properties``, ``additionalProperties``, ``required``, ``items``
(no ``prefixItems``), ``minItems``, ``minLength``, ``minimum``, ``enum``, ``pattern``
(``re.search``), ``oneOf``, ``propertyNames``, ``uniqueItems`` and local ``$ref``
(``#/$defs/...``), ``maximum`` and ``exclusiveMinimum`` (loopgate.yaml's schema, whose
check uses it too: ``bot.config``); annotations (``title``, ``description``, ``$id``,
``$schema``, ``$defs``, ``$comment``, ``default``, and extension keys named ``x-...``, which
JSON Schema validators ignore) are ignored.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["Check", "compile_check"]

#: A compiled check: the document in, whether it is valid out.
Check = Callable[[Any], bool]

_ANNOTATIONS = frozenset({"title", "description", "$id", "$schema", "$defs", "$comment",
                          "default"})


def _annotation(key: str) -> bool:
    """True for a key no validator checks: a known annotation, or an extension ``x-...``
    (``jsonschema`` ignores every keyword its draft does not define)."""
    return key in _ANNOTATIONS or key.startswith("x-")


class _Unsupported(Exception):
    """The schema uses something this module does not implement."""


def compile_check(schema: Mapping[str, Any]) -> Check | None:
    """The compiled check of ``schema``, or None when it uses an unimplemented keyword.

    Args:
        schema: a JSON Schema (Draft 2020-12) whose ``$ref`` s point into its own ``$defs``.
    """
    try:
        compiler = _Compiler(schema)
        root = compiler.compile(schema)
    except _Unsupported:
        return None
    memos = tuple(compiler.memos)
    if not memos:
        return root

    def check(v: Any) -> bool:
        # Each call starts with empty memos, so they hold what one document repeats (a node
        # id named again by its edges and skip sets; issue 21 §4) and no call profits from
        # an earlier one. (A string's answer does not depend on the document: a memo shared
        # by concurrent calls can lose entries to this clear, never hold a wrong one.)
        for memo in memos:
            memo.clear()
        return root(v)

    return check


#: JSON types no value has two of, by the Python type a parsed document gives for each;
#: each one's check is one isinstance of that class (a bool and None have no subclasses).
_DISJOINT: dict[str, type] = {"string": str, "object": dict, "array": list,
                              "boolean": bool, "null": type(None)}


def _leaf_type(schema: Any) -> str | None:
    """The type name of a schema that is ``{type: <name>}`` and annotations only, or None."""
    if not isinstance(schema, Mapping) or not isinstance(schema.get("type"), str):
        return None
    if any(not _annotation(k) for k in schema if k != "type"):
        return None
    kind: str = schema["type"]
    return kind


#: Types whose check is one isinstance (a bool is not an int here only via _is_type).
_PLAIN: dict[str, type | tuple[type, ...]] = {"string": str, "object": dict, "array": list}


def _is_type(value: Any, name: str) -> bool:
    kind = type(value)
    if name == "string":
        return isinstance(value, str)
    if name == "object":
        return isinstance(value, dict)
    if name == "array":
        return isinstance(value, list)
    if name == "boolean":
        return kind is bool
    if name == "null":
        return value is None
    if name == "integer":
        return kind is int or (kind is float and value.is_integer())
    if name == "number":
        return kind is int or kind is float
    raise _Unsupported(name)


def _one_type(name: str) -> Check:
    """One closure per type name, without a generic dispatch per call (as ``_is_type``)."""
    if name in _PLAIN:
        kind = _PLAIN[name]
        return lambda v: isinstance(v, kind)
    if name == "boolean":
        return lambda v: type(v) is bool
    if name == "integer":
        return lambda v: type(v) is int or (type(v) is float and v.is_integer())
    return lambda v: _is_type(v, name)


def _equal(a: Any, b: Any) -> bool:
    """JSON equality: a boolean equals only a boolean (``True != 1``)."""
    if type(a) is bool or type(b) is bool:
        return type(a) is type(b) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    return bool(a == b)


class _Compiler:
    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root
        self.refs: dict[str, Check] = {}
        #: per-call sets of strings a pattern check accepted (emptied by each top call)
        self.memos: list[set[str]] = []

    def compile(self, schema: Any) -> Check:
        if schema is True:
            return lambda _v: True
        if schema is False:
            return lambda _v: False
        if not isinstance(schema, Mapping):
            raise _Unsupported("schema")
        string = _string_check(schema, self.memos)
        if string is not None:
            return string
        if _is_plain_object(schema):
            return self._object(schema)
        if _is_plain_array(schema):
            return self._array(schema)
        checks: list[Check] = []
        for key, value in schema.items():
            if _annotation(key):
                continue
            build = getattr(self, "_" + key.replace("$", "dollar_"), None)
            if build is None:
                raise _Unsupported(key)
            checks.append(build(value, schema))
        return _all_of(checks)

    def _object(self, schema: Mapping[str, Any]) -> Check:
        """``{type: object, properties?, additionalProperties?, required?}`` in one pass
        over the value's own keys (most nodes set a few of their many properties), the
        same answer as the three keywords checked one by one."""
        # A property whose schema is one plain type (a node's description, its booleans) is
        # checked by its class in the loop below, without a call (issue 21 §4).
        props: dict[str, Check | type] = {
            k: _DISJOINT.get(_leaf_type(s) or "") or self.compile(s)
            for k, s in (schema.get("properties") or {}).items()
        }
        extra = (self.compile(schema["additionalProperties"])
                 if "additionalProperties" in schema else None)
        required = tuple(schema.get("required") or ())
        if not props and extra is None and not required:
            return lambda v: isinstance(v, dict)  # {type: object}: a hook's with:
        closed = schema.get("additionalProperties") is False  # no call to refuse a key
        sub_of = props.get

        def check(v: Any) -> bool:
            if not isinstance(v, dict):
                return False
            for name in required:
                if name not in v:
                    return False
            for key, item in v.items():
                sub = sub_of(key)
                if sub is None:
                    if closed or (extra is not None and not extra(item)):
                        return False
                elif type(sub) is type:
                    if not isinstance(item, sub):
                        return False
                elif not sub(item):
                    return False
            return True

        return check

    def _array(self, schema: Mapping[str, Any]) -> Check:
        """``{type: array, items?, minItems?}`` (a hook chain, an artifact list) in one
        closure, the same answer as the keywords checked one by one."""
        item = self.compile(schema["items"]) if "items" in schema else None
        least = schema.get("minItems", 0)

        def check(v: Any) -> bool:
            if not isinstance(v, list) or len(v) < least:
                return False
            if item is not None:
                for x in v:
                    if not item(x):
                        return False
            return True

        return check

    # -- keywords ------------------------------------------------------------------------
    def _type(self, value: Any, _schema: Mapping[str, Any]) -> Check:
        names = [value] if isinstance(value, str) else list(value)
        for name in names:
            _is_type(None, name)  # unknown names refuse the fast path now, not per call
        if len(names) == 1:
            return _one_type(names[0])
        return lambda v: any(_is_type(v, n) for n in names)

    def _properties(self, value: Mapping[str, Any], _schema: Mapping[str, Any]) -> Check:
        compiled = {k: self.compile(s) for k, s in value.items()}

        pairs = tuple(compiled.items())

        def check(v: Any) -> bool:
            if not isinstance(v, dict):
                return True
            for key, sub in pairs:
                if key in v and not sub(v[key]):
                    return False
            return True

        return check

    def _additionalProperties(self, value: Any, schema: Mapping[str, Any]) -> Check:
        if "patternProperties" in schema:
            raise _Unsupported("patternProperties")
        known = frozenset(schema.get("properties") or ())
        extra = self.compile(value)

        def check(v: Any) -> bool:
            if not isinstance(v, dict):
                return True
            for key, item in v.items():
                if key not in known and not extra(item):
                    return False
            return True

        return check

    def _required(self, value: list[str], _schema: Mapping[str, Any]) -> Check:
        names = tuple(value)
        return lambda v: not isinstance(v, dict) or all(n in v for n in names)

    def _items(self, value: Any, schema: Mapping[str, Any]) -> Check:
        if "prefixItems" in schema:
            raise _Unsupported("prefixItems")
        item = self.compile(value)

        def check(v: Any) -> bool:
            if not isinstance(v, list):
                return True
            for x in v:
                if not item(x):
                    return False
            return True

        return check

    def _minItems(self, value: int, _schema: Mapping[str, Any]) -> Check:
        return lambda v: not isinstance(v, list) or len(v) >= value

    def _minLength(self, value: int, _schema: Mapping[str, Any]) -> Check:
        return lambda v: not isinstance(v, str) or len(v) >= value

    def _minimum(self, value: float, _schema: Mapping[str, Any]) -> Check:
        return lambda v: type(v) is bool or not isinstance(v, int | float) or v >= value

    def _maximum(self, value: float, _schema: Mapping[str, Any]) -> Check:
        return lambda v: type(v) is bool or not isinstance(v, int | float) or v <= value

    def _exclusiveMinimum(self, value: float, _schema: Mapping[str, Any]) -> Check:
        return lambda v: type(v) is bool or not isinstance(v, int | float) or v > value

    def _enum(self, value: list[Any], _schema: Mapping[str, Any]) -> Check:
        choices = list(value)
        if all(type(c) is str for c in choices):
            names = frozenset(choices)
            return lambda v: isinstance(v, str) and v in names
        return lambda v: any(_equal(v, c) for c in choices)

    def _pattern(self, value: str, _schema: Mapping[str, Any]) -> Check:
        search = re.compile(value).search
        return lambda v: not isinstance(v, str) or search(v) is not None

    def _oneOf(self, value: list[Any], _schema: Mapping[str, Any]) -> Check:
        options = tuple(self.compile(s) for s in value)

        def check(v: Any) -> bool:
            passed = 0
            for option in options:
                if option(v):
                    passed += 1
                    if passed > 1:
                        return False
            return passed == 1

        kinds = [_DISJOINT.get(self._type_of(s) or "") for s in value]
        if None in kinds or len(set(kinds)) != len(kinds):
            return check
        # Each option requires a different one of the disjoint types (a graph's hook is a
        # string or an object, its artifacts a string or an array): a value of exactly one
        # of those types can pass only the option of its type, so oneOf is that option.
        # Any other value (a str subclass, say) takes the general loop.
        by_type = dict(zip(kinds, options, strict=True))
        pick = by_type.get

        def dispatch(v: Any) -> bool:
            option = pick(type(v))
            return option(v) if option is not None else check(v)

        return dispatch

    def _type_of(self, schema: Any) -> str | None:
        """The one type name ``schema`` requires (its ``type``, or its local ``$ref``'s),
        or None."""
        for _ in range(8):  # a chain of $refs, bounded
            if not isinstance(schema, Mapping):
                return None
            kind = schema.get("type")
            if isinstance(kind, str):
                return kind
            ref = schema.get("$ref")
            if not isinstance(ref, str) or not ref.startswith("#/$defs/"):
                return None
            schema = (self.root.get("$defs") or {}).get(ref[len("#/$defs/"):])
        return None

    def _propertyNames(self, value: Any, _schema: Mapping[str, Any]) -> Check:
        name = self.compile(value)
        return lambda v: not isinstance(v, dict) or all(name(k) for k in v)

    def _uniqueItems(self, value: bool, _schema: Mapping[str, Any]) -> Check:
        if not value:
            return lambda _v: True

        def check(v: Any) -> bool:
            if not isinstance(v, list):
                return True
            if all(type(x) is str for x in v):  # a skip set's members: == is JSON equality
                return len(set(v)) == len(v)
            return not any(_equal(v[i], v[j]) for i in range(len(v))
                           for j in range(i + 1, len(v)))

        return check

    def _dollar_ref(self, value: str, _schema: Mapping[str, Any]) -> Check:
        if not value.startswith("#/$defs/") or "/" in value[len("#/$defs/"):]:
            raise _Unsupported(value)
        name = value[len("#/$defs/"):]
        defs = self.root.get("$defs") or {}
        if name not in defs:
            raise _Unsupported(value)
        if value not in self.refs:
            slot: list[Check] = []
            self.refs[value] = lambda v: slot[0](v)  # for a recursive use while compiling
            slot.append(self.compile(defs[name]))
            self.refs[value] = slot[0]  # later uses call it directly
        return self.refs[value]


def _string_check(schema: Mapping[str, Any], memos: list[set[str]]) -> Check | None:
    """One closure for the common ``{type: string, minLength?, pattern?}`` (or None).

    With a pattern, the strings it accepted are kept in a set appended to ``memos``
    (the caller empties it per document): a graph names each node id in its edges and
    skip sets again, and a set lookup is a fraction of a regex search (issue 21 §4)."""
    keys = {k for k in schema if not _annotation(k)}
    if schema.get("type") != "string" or not keys <= {"type", "minLength", "pattern"}:
        return None
    least = int(schema.get("minLength", 0))
    if "pattern" not in schema:
        return lambda v: isinstance(v, str) and len(v) >= least
    search = re.compile(schema["pattern"]).search
    accepted: set[str] = set()
    memos.append(accepted)
    seen = accepted.__contains__
    remember = accepted.add

    def check(v: Any) -> bool:
        if type(v) is str:
            if seen(v):
                return True
            if len(v) >= least and search(v) is not None:
                remember(v)
                return True
            return False
        return isinstance(v, str) and len(v) >= least and search(v) is not None

    return check


_OBJECT_KEYS = frozenset({"type", "properties", "additionalProperties", "required"})


def _is_plain_object(schema: Mapping[str, Any]) -> bool:
    """True for a ``type: object`` schema using only the keywords :meth:`_Compiler._object`
    fuses (and annotations)."""
    keys = {k for k in schema if not _annotation(k)}
    return (schema.get("type") == "object" and keys <= _OBJECT_KEYS
            and isinstance(schema.get("properties", {}), Mapping)
            and isinstance(schema.get("required", []), list))


_ARRAY_KEYS = frozenset({"type", "items", "minItems"})


def _is_plain_array(schema: Mapping[str, Any]) -> bool:
    """True for a ``type: array`` schema using only the keywords :meth:`_Compiler._array`
    fuses (and annotations), ``minItems`` an integer."""
    keys = {k for k in schema if not _annotation(k)}
    least = schema.get("minItems", 0)
    return (schema.get("type") == "array" and keys <= _ARRAY_KEYS
            and type(least) is int)


def _all_of(checks: list[Check]) -> Check:
    if len(checks) == 1:
        return checks[0]
    steps = tuple(checks)

    def check(v: Any) -> bool:
        for step in steps:
            if not step(v):
                return False
        return True

    return check
