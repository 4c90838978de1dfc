"""The workload spec's reference (docs/workload-spec.md), rendered from the models in
`spec.py`: every option with its shape, default, description and a working example, so the
reference cannot drift from what is read (a test compares the file with `render()` and runs
every example). `ticdc-sim workload-spec --output docs/workload-spec.md` writes it."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

import annotated_types as at
import yaml
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from ticdc_sim.generator.workload import spec as s


@dataclass(frozen=True)
class Section:
    """A part of the spec: where it sits, its model, and where its examples go (`home`:
    the top level, a table entry, a table's columns, operations, or a storyline chapter)."""

    where: str
    model: type[BaseModel]
    home: str


SECTIONS = [
    Section("top level", s.Workload, "root"),
    Section("tables[]", s.Table, "table"),
    Section("tables[].columns.NAME", s.Column, "column"),
    Section("tables[].columns.NAME.faker", s.Faker, "column"),
    Section("tables[].columns.NAME.normal", s.Normal, "column"),
    Section("tables[].columns.NAME.zipf", s.Zipf, "column"),
    Section("tables[].initial_from", s.Dataset, "table"),
    Section("tables[].key_updates", s.KeyUpdates, "table"),
    Section("operations", s.Operations, "operations"),
    Section("operations.mix", s.Mix, "operations"),
    Section("operations.transaction_size", s.Sizes, "operations"),
    Section("operations.keys, tables[].keys", s.Keys, "operations"),
    Section("keys.hot", s.Hot, "operations"),
    Section("keys.hotspot", s.Hotspot, "operations"),
    Section("storyline[]", s.Chapter, "chapter"),
]

HEAD = """\
# Workload spec reference

<!-- Generated from src/ticdc_sim/generator/workload/spec.py by
     `ticdc-sim workload-spec --output docs/workload-spec.md`: edit the models, not this file
     (tests/test_workload.py fails when they differ, and runs every example). -->

A workload spec is a YAML file that `ticdc-sim generate --workload SPEC.yaml` reads: the
tables (their DDL, initial rows, how each column is drawn), the operations that follow,
and a storyline of DDL while they run. Every key is checked: a typo, a wrong shape or a
value out of range is an error naming its place (`w.yaml:12:7: tables[1].columns.price.unifrom:
unknown key; did you mean uniform?`). On the command line, `--events N`, `--duration S`,
`--seed N` and `--set PATH=VALUE` (the path as errors print it, the value as YAML) change
the spec without editing it. Top-level keys that start with `x-` are ignored: a place for
YAML anchors (`x-audit: &audit {...}`, then `<<: *audit` where it is needed).

Shapes: `integer`, `number` (integers too), `text`, `true/false`, `[a, b]` a list of two,
`[x, ...]` a list, `{k: v, ...}` a mapping, `{a, b}` a section of its own (below); a
constraint follows the shape.

A whole spec:

```yaml
"""

TAIL = """
A run is a pure function of the spec and seed: the same spec gives the same events and
records, in one process or on Spark.
"""


def render() -> str:
    """The reference, as docs/workload-spec.md holds it."""
    parts = [HEAD, s.EXAMPLE, "```\n"]
    parts.append("\n" + " ·\n".join(f"[{x.where}](#{_anchor(x.where)})" for x in SECTIONS) + "\n")
    for section in SECTIONS:
        parts.append(_section(section))
    parts.append(TAIL)
    return "".join(parts)


def examples() -> list[tuple[Section, str, str]]:
    """Every option's example: (its section, its name, the YAML)."""
    out = []
    for section in SECTIONS:
        for name, field in section.model.model_fields.items():
            out.append((section, name, _extra(field, "example")))
    return out


def _section(section: Section) -> str:
    model = section.model
    lines = [f"\n## {section.where}\n\n{inspect.cleandoc(model.__doc__ or '')}\n"]
    lines.append("\n| option | shape | default | what | example |\n|---|---|---|---|---|\n")
    for name, field in model.model_fields.items():
        cells = [
            f"`{name}`",
            _escape(s.shape_of(field) + _bounds(field)),
            _default(field),
            _escape(field.description or ""),
            f"`{_escape(_extra(field, 'example'))}`",
        ]
        lines.append("| " + " | ".join(cells) + " |\n")
    return "".join(lines)


def _anchor(title: str) -> str:
    return "".join(c for c in title.lower().replace(" ", "-") if c.isalnum() or c in "-_")


def _extra(field: FieldInfo, key: str) -> str:
    extra = field.json_schema_extra
    return str(extra.get(key, "")) if isinstance(extra, dict) else ""


def _bounds(field: FieldInfo) -> str:
    """The constraints pydantic checks, as `> 0`, `<= 1`, `at least 1 item`."""
    out = []
    for meta in field.metadata:
        for kind, sign, bound in _BOUNDS:
            if isinstance(meta, kind):
                out.append(f"{sign} {s.number_text(getattr(meta, bound))}")
        if isinstance(meta, at.MinLen):
            out.append(f"at least {meta.min_length} item{'s' if meta.min_length != 1 else ''}")
    return f", {' and '.join(out)}" if out else ""


_BOUNDS = ((at.Gt, ">", "gt"), (at.Ge, ">=", "ge"), (at.Lt, "<", "lt"), (at.Le, "<=", "le"))


def _default(field: FieldInfo) -> str:
    if field.is_required():
        return "required"
    if field.default_factory is not None:
        value: Any = field.default_factory()  # type: ignore[call-arg]
    else:
        value = field.default
    if value is None or value is PydanticUndefined:
        return "—"
    if isinstance(value, BaseModel):
        dumped = value.model_dump(exclude_none=True, exclude_defaults=False)
        if any(isinstance(v, dict) for v in dumped.values()) or not dumped:
            return "its keys' defaults"
        value = dumped
    text = yaml.safe_dump(_plain(value), default_flow_style=True, width=1000, sort_keys=False)
    return f"`{_escape(text.strip().removesuffix('...').strip())}`"


def _plain(value: Any) -> Any:
    """Numbers as users write them: 1, not 1.0."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _escape(text: str) -> str:
    return text.replace("|", "\\|")
