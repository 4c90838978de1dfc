"""Reading a workload spec: YAML read strictly (binary data, bad UTF-8, duplicate keys, alias
bombs and runaway nesting are errors), every value's place remembered (file:line:col by spec
path), pydantic's errors said in the spec's words (the option's shape and an example, what
was given, "did you mean"), and the command line's changes to the spec (`--set PATH=VALUE`,
`--events`, `--duration`, `--seed`) applied before it is read. What a spec can say is
`spec.py`'s."""

from __future__ import annotations

import codecs
import difflib
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, get_args, get_origin

import yaml
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from ticdc_sim.generator.workload.spec import (
    Chapter,
    Column,
    Dataset,
    Faker,
    Hot,
    Hotspot,
    Keys,
    KeyUpdates,
    Mix,
    Normal,
    Operations,
    Sizes,
    SpecError,
    SpecPath,
    Table,
    Workload,
    Zipf,
    annotation,
    bare,
    branches,
    dotted,
    number_text,
    shape,
    shape_of,
    tag,
)

_MAX_NODES = 1_000_000  # YAML values after aliases are expanded: beyond any real spec
_MAX_DEPTH = 64  # nested collections: a spec needs 6
_KEY = "<key>"  # in a path of marks: where a mapping's key (not its value) was written
_FLOAT_12 = re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$")


def load(path: Path, seed: int | None = None, overrides: Iterable[Override] = ()) -> Workload:
    """The spec in `path` (YAML), with `overrides` (--set and friends) applied; `seed`
    replaces its own. Files named in the spec are relative to it."""
    source = str(path)
    try:
        data = path.read_bytes()
    except IsADirectoryError:
        raise SpecError("is a directory, not a workload spec (YAML)", where=source) from None
    except OSError as e:
        raise SpecError(str(e.strerror), where=source) from None
    raw, marks = read_yaml(data, source)
    return build(raw, source, marks, path.parent, seed, overrides)


def build(
    raw: Any,
    source: str,
    marks: dict[SpecPath, str],
    base: Path,
    seed: int | None = None,
    overrides: Iterable[Override] = (),
) -> Workload:
    """The spec from YAML's data (a file's, or a mapping given in process), `overrides` and
    `seed` applied; files it names are relative to `base`."""
    given = list(overrides)
    if seed is not None:
        given.append(Override(("seed",), seed, "--seed"))
    for override in given:
        raw = override.apply(raw, marks)
    spec = parse(raw, source, marks)
    tables = []
    for t in spec.tables:
        if t.ddl_file:
            t = t.model_copy(update={"ddl_file": base / t.ddl_file})
        if t.initial_from:
            dataset = t.initial_from.model_copy(update={"path": base / t.initial_from.path})
            t = t.model_copy(update={"initial_from": dataset})
        tables.append(t)
    return spec.model_copy(update={"tables": tables})


def read_yaml(data: bytes, source: str) -> tuple[Any, dict[SpecPath, str]]:
    """A YAML document and where each of its values was written (file:line:col by path).
    Binary data, bad UTF-8, duplicate keys, alias bombs and runaway nesting are errors."""
    for bom, name in _WIDE:
        if data.startswith(bom):
            raise SpecError(
                f"{name} text: a workload spec is UTF-8 (save it as UTF-8)", where=source
            )
    if b"\0" in data[: 1 << 16]:
        raise SpecError(
            f"not a workload spec: binary data (a NUL byte at offset {data.index(0)})",
            where=source,
        )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line, col = _line_col(data[: e.start].decode("utf-8", "replace"), len(data[: e.start]))
        raise SpecError(
            f"not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start})",
            where=f"{source}:{line}:{col}",
        ) from None
    loader = None
    try:
        loader = _Loader(text)  # PyYAML's reader checks every character here
        loader.source = source
        try:
            node = loader.get_single_node()
        except RecursionError:
            mark = loader.get_mark()
            raise SpecError(
                "nested too deeply to read", where=f"{source}:{mark.line + 1}:{mark.column + 1}"
            ) from None  # a stack smaller than _MAX_DEPTH needs: said all the same
        if node is None:
            return None, {}
        _check_size(node, source)
        raw = loader.construct_document(node)
        marks: dict[SpecPath, str] = {}
        _collect_marks(loader, node, source, marks)
        return raw, marks
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark else source
        problem = e.problem or e.context or "not YAML"
        if problem.startswith("but ") and e.context:  # PyYAML's two halves of one sentence
            problem = f"{e.context} {problem}"
        raise SpecError(f"not YAML: {problem}", where=where) from None
    except yaml.reader.ReaderError as e:
        line, col = _line_col(text, e.position)
        raise SpecError(
            f"not YAML: character U+{e.character:04X} is not allowed",
            where=f"{source}:{line}:{col}",
        ) from None
    except yaml.YAMLError as e:
        raise SpecError(f"not YAML: {e}", where=source) from None
    finally:
        if loader is not None:
            loader.dispose()


_WIDE = (
    (codecs.BOM_UTF32_LE, "UTF-32"),
    (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF16_LE, "UTF-16"),
    (codecs.BOM_UTF16_BE, "UTF-16"),
)


def _line_col(text: str, offset: int) -> tuple[int, int]:
    before = text[:offset]
    return before.count("\n") + 1, offset - (before.rfind("\n") + 1) + 1


class _Loader(yaml.SafeLoader):  # type: ignore[misc]
    """PyYAML's safe loader, refusing a key given twice in one mapping (the last would
    win, silently) and collections nested deeper than `_MAX_DEPTH`; `1e6` is a number, as
    in YAML 1.2 (1.1 wants `1.0e+6`)."""

    depth = 0
    source = "spec"

    def compose_node(self, parent: Any, index: Any) -> Any:
        self.depth += 1
        try:
            if self.depth > _MAX_DEPTH:
                at = self.peek_event().start_mark
                raise SpecError(
                    f"nested deeper than {_MAX_DEPTH} levels (a spec needs a few)",
                    where=f"{self.source}:{at.line + 1}:{at.column + 1}",
                )
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        first: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                line = first.get(key)
            except TypeError:
                continue  # an unhashable key: the constructor says so
            if line is not None:
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"key {key!r} given twice (first on line {line})",
                    key_node.start_mark,
                )
            first[key] = key_node.start_mark.line + 1
        mapping: dict[Any, Any] = super().construct_mapping(node, deep=deep)
        return mapping


_Loader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT_12, list("-+0123456789"))


def _check_size(root: yaml.Node, source: str) -> None:
    """Refuse a document whose aliases expand beyond `_MAX_NODES` values (a billion
    laughs), or contain themselves: counted over the node graph, each node once."""
    size: dict[int, int] = {}
    open_: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        children = _children(node)
        if done:
            open_.discard(id(node))
            size[id(node)] = 1 + sum(size[id(c)] for c in children)
            if size[id(node)] > _MAX_NODES:
                mark = node.start_mark
                raise SpecError(
                    f"aliases expand to more than {_MAX_NODES:,} values (an alias bomb?)",
                    where=f"{source}:{mark.line + 1}:{mark.column + 1}",
                )
            continue
        if id(node) in size:
            continue
        if id(node) in open_:
            mark = node.start_mark
            raise SpecError(
                "an alias that contains itself", where=f"{source}:{mark.line + 1}:{mark.column + 1}"
            )
        open_.add(id(node))
        stack.append((node, True))
        stack.extend((c, False) for c in children if id(c) not in size)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def _collect_marks(
    loader: _Loader, root: yaml.Node, source: str, marks: dict[SpecPath, str]
) -> None:
    """file:line:col of each value by its path (a node reached again by an alias: once)."""
    seen: set[int] = set()
    stack: list[tuple[yaml.Node, SpecPath]] = [(root, ())]
    while stack:
        node, path = stack.pop()
        mark = node.start_mark
        marks[path] = f"{source}:{mark.line + 1}:{mark.column + 1}"
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            stack.extend((child, (*path, i)) for i, child in enumerate(node.value))
        elif isinstance(node, yaml.MappingNode):
            for key_node, value in node.value:
                if isinstance(key_node, yaml.ScalarNode):
                    key = loader.construct_object(key_node, deep=True)
                    if isinstance(key, str | int):
                        stack.append((value, (*path, key)))
                        at = key_node.start_mark
                        marks[(*path, key, _KEY)] = f"{source}:{at.line + 1}:{at.column + 1}"


def parse(raw: Any, source: str = "spec", marks: dict[SpecPath, str] | None = None) -> Workload:
    """The spec from YAML's data; errors say where (`marks`: file:line:col by path)."""
    marks = marks or {}
    if raw is None:
        raise SpecError("empty: a workload spec needs at least `tables`", where=source)
    if isinstance(raw, dict):  # x-...: a place for YAML anchors, as in compose files
        raw = {k: v for k, v in raw.items() if not (isinstance(k, str) and k.startswith("x-"))}
    try:
        spec = Workload.model_validate(raw)
    except ValidationError as e:
        problems = list(dict.fromkeys(_problem(p) for p in e.errors()))  # once each
        located = [
            SpecError(message, path, _locate(marks, path) or source) for path, message in problems
        ]
        raise SpecError(
            located[0].message, located[0].path, located[0].where, located[1:]
        ) from None
    except SpecError as e:  # a check across options, raised with its path
        raise SpecError(e.message, e.path, _locate(marks, e.path) or source) from None
    spec._source, spec._marks = source, marks
    return spec


def _locate(marks: dict[SpecPath, str], path: SpecPath) -> str | None:
    for cut in range(len(path), -1, -1):
        if path[:cut] in marks:
            return marks[path[:cut]]
    return None


# -- errors in the spec's words ----------------------------------------------------------------


def _problem(error: Any) -> tuple[SpecPath, str]:
    """A pydantic error as (spec path, what is wrong): the option's shape, what was given;
    a mapping's bad key at the mapping, named."""
    path, message = _problem_at(error)
    if "[key]" in path:
        cut = path.index("[key]")
        return path[: cut - 1], f"key {_show(path[cut - 1])}: {message}"
    return path, message


def _problem_at(error: Any) -> tuple[SpecPath, str]:
    loc = tuple(error["loc"])
    path = tuple(p for p in loc if not (isinstance(p, str) and p.startswith("<")))
    kind, ctx, given = error["type"], error.get("ctx") or {}, error.get("input")
    tp, field, owner = _walk(loc)
    at_field = field is not None and bool(path) and path[-1] == _field_name(owner, field)
    pair = field is not None and get_origin(bare(annotation(field))) is tuple
    if field and pair and kind in ("missing", "too_long", "too_short") and isinstance(given, list):
        at = path[:-1] if kind == "missing" else path  # [low, high] whole, not an item of it
        return at, f"expected {shape_of(field)}, not {_show(given)}" + _example(field)
    if kind == "extra_forbidden":
        name = str(path[-1]) if path else ""
        known = list(owner.model_fields) if owner else []
        close = difflib.get_close_matches(name, known, n=1)
        hint = f"did you mean {close[0]}? " if close else ""
        where = _SECTION.get(owner, "here") if owner else "here"
        return (*path, _KEY), f"unknown key; {hint}{where} takes {', '.join(known)}"
    if kind == "missing":
        return path, "required" + _example(field)
    if kind in ("value_error", "assertion_error"):
        text = str(ctx.get("error", error["msg"]))
        name, colon, rest = text.partition(": ")
        if colon and isinstance(tp, type) and issubclass(tp, BaseModel) and name in tp.model_fields:
            return (*path, name), rest  # a check of one option: at that option
        return path, text
    bounds = {"greater_than": "above", "greater_than_equal": "at least", "less_than": "below",
              "less_than_equal": "at most"}  # fmt: skip
    if kind in bounds:
        limit = next(iter(ctx.values()))
        return path, f"must be {bounds[kind]} {number_text(limit)}, not {_show(given)}"
    if kind == "finite_number":
        return path, f"must be a finite number, not {_show(given)}"
    if kind in ("too_short", "too_long"):
        count = ctx.get("min_length" if kind == "too_short" else "max_length")
        most = "at least" if kind == "too_short" else "at most"
        return path, f"needs {most} {count} item{'s' if count != 1 else ''}" + _example(field)
    if kind in ("string_too_short", "string_too_long"):
        count = ctx.get("min_length" if kind == "string_too_short" else "max_length")
        most = "at least" if kind == "string_too_short" else "at most"
        return (
            path,
            f"needs {most} {count} character{'s' if count != 1 else ''}, not {_show(given)}",
        )
    if kind == "string_pattern_mismatch":
        return path, f"expected {shape_of(field) if field else 'text'}, not {_show(given)}"
    if kind == "literal_error":
        return path, f"expected {ctx.get('expected')}, not {_show(given)}"
    if kind.endswith(("_type", "_parsing")) or kind in ("int_from_float", "union_tag_invalid"):
        wanted = shape_of(field) if at_field and field else shape(tp)
        return path, f"expected {wanted}, not {_show(given)}" + (
            _example(field) if at_field else ""
        )
    return path, str(error["msg"])


_SECTION: dict[Any, str] = {  # how errors name a model's place
    Workload: "the top level",
    Table: "a table",
    Column: "a column",
    Operations: "operations",
    Chapter: "a storyline chapter",
    Mix: "mix",
    Sizes: "transaction_size",
    Keys: "keys",
    Hot: "hot",
    Hotspot: "hotspot",
    Normal: "normal",
    Zipf: "zipf",
    Faker: "faker",
    KeyUpdates: "key_updates",
    Dataset: "initial_from",
}


def _field_name(owner: type[BaseModel] | None, field: FieldInfo) -> str | None:
    if owner is None:
        return None
    return next((name for name, f in owner.model_fields.items() if f is field), None)


def _walk(loc: tuple[Any, ...]) -> tuple[Any, FieldInfo | None, type[BaseModel] | None]:
    """The type at `loc` in the spec, the field it is in, and that field's model."""
    tp: Any = Workload
    field: FieldInfo | None = None
    owner: type[BaseModel] | None = None
    for part in loc:
        tp = bare(tp)
        if isinstance(part, str) and part.startswith("<"):
            tp = next((a for a in branches(tp) if tag(a) == part), tp)
            continue
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            found = tp.model_fields.get(str(part))
            if found is None:
                return None, field, tp
            owner, field, tp = tp, found, annotation(found)
            continue
        args = get_args(tp)
        origin = get_origin(tp)
        if origin is list and args:
            tp = args[0]
        elif origin is dict and args:
            tp = args[0] if part == "[key]" else args[1]
        elif origin is tuple and args and isinstance(part, int) and part < len(args):
            tp = args[part]
    return bare(tp), field, owner


def _example(field: FieldInfo | None) -> str:
    extra = field.json_schema_extra if field else None
    example = extra.get("example") if isinstance(extra, dict) else None
    return f" (e.g. `{example}`)" if example else ""


def _show(value: Any) -> str:
    """A given value, short: what YAML read, in its own notation."""
    if isinstance(value, dict):
        text = "a mapping" if value else "an empty mapping"
    elif isinstance(value, list):
        text = f"a list of {len(value)}" if value else "an empty list"
    elif isinstance(value, bool):
        text = "true" if value else "false"
    elif value is None:
        text = "nothing (null)"
    else:
        text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 40 else text[:37] + "..."


# -- overrides (--set path=value) --------------------------------------------------------------

_DELETE = object()
_PART = re.compile(r"([A-Za-z0-9_$]+)|\[(\d+)\]")
_PATH = re.compile(r"[A-Za-z0-9_$]+(\[\d+\])*(\.[A-Za-z0-9_$]+(\[\d+\])*)*")


class Override:
    """One change to the spec's YAML data before it is read: `path` set to `value` (or the
    key removed), named in errors and locations by `label` (`--set operations.events=5`)."""

    def __init__(self, path: SpecPath, value: Any, label: str) -> None:
        self.path, self.value, self.label = path, value, label

    @classmethod
    def parse(cls, text: str) -> Override:
        """`--set path=value`: the path as the spec's errors print it, the value as YAML."""
        name, equals, value = text.partition("=")
        label = f"--set {text}"
        if not equals or not name.strip():
            raise SpecError("expected PATH=VALUE (e.g. operations.events=5000)", where=label)
        path = split_path(name.strip(), label)
        try:  # read as the spec's file is (1e6 a number, no key twice, no alias bomb)
            parsed = read_yaml(value.encode(), label)[0] if value.strip() else ""
        except SpecError as e:
            head = "the value is" if e.message.startswith("not ") else "the value:"
            raise SpecError(f"{head} {e.message}", where=label) from None
        return cls(path, parsed, f"--set {name.strip()}")

    @classmethod
    def remove(cls, path: SpecPath, label: str) -> Override:
        return cls(path, _DELETE, label)

    def apply(self, raw: Any, marks: dict[SpecPath, str]) -> Any:
        """`raw` with the change made (mappings on the way are made as needed); marks
        under the path now name this override."""
        if not self.path:
            raise SpecError("the path is empty", where=self.label)
        root = raw if raw is not None else {}
        node = root
        for depth, part in enumerate(self.path[:-1]):
            made = isinstance(node, dict) and node.get(part) is None
            node = self._step(node, part, self.path[: depth + 1], self.path[depth + 1])
            if made and self.value is not _DELETE:  # a mapping this override made: its own
                marks[self.path[: depth + 1]] = self.label
        last = self.path[-1]
        if self.value is _DELETE:
            if isinstance(node, dict):
                node.pop(last, None)
        elif isinstance(last, int):
            if not isinstance(node, list) or not -len(node) <= last < len(node):
                raise self._no_item(node, self.path)
            node[last] = self.value
        else:
            if not isinstance(node, dict):
                raise self._not_mapping(self.path[:-1])
            node[last] = self.value
        for key in [k for k in marks if k[: len(self.path)] == self.path]:
            del marks[key]
        if self.value is not _DELETE:
            marks[self.path] = self.label
        return root

    def _step(self, node: Any, part: str | int, path: SpecPath, following: str | int) -> Any:
        if isinstance(part, int):
            if not isinstance(node, list) or not -len(node) <= part < len(node):
                raise self._no_item(node, path)
            return node[part]
        if not isinstance(node, dict):
            raise self._not_mapping(path[:-1])
        if node.get(part) is None and self.value is not _DELETE:
            if isinstance(following, int):
                raise self._no_item(None, (*path, following))
            node[part] = {}
        return node.get(part, {})

    def _no_item(self, node: Any, path: SpecPath) -> SpecError:
        count = len(node) if isinstance(node, list) else 0
        items = f"{count} item{'s' if count != 1 else ''}"
        return SpecError(f"no such item: {dotted(path[:-1])} has {items}", path, self.label)

    def _not_mapping(self, path: SpecPath) -> SpecError:
        return SpecError("is not a mapping, so it has no keys to set", path, where=self.label)


def split_path(text: str, label: str) -> SpecPath:
    """`tables[0].columns.amount` as ("tables", 0, "columns", "amount")."""
    if not _PATH.fullmatch(text):
        raise SpecError(f"{text!r} is not a spec path (e.g. tables[0].columns.amount)", where=label)
    return tuple(
        int(m.group(2)) if m.group(2) is not None else m.group(1) for m in _PART.finditer(text)
    )
