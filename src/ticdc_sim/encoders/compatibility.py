"""Avro schema compatibility as a Confluent Schema Registry judges it: its levels (`LEVELS`:
which way a reader must read a writer, against the latest version or all of them) and its
words for each difference. Pure. Avro's schema resolution rules themselves are the Apache
`avro` package's (`avro.compatibility`, the Python port of the Java `SchemaCompatibility`
Confluent's `AvroSchema.isBackwardCompatible` calls); this module only walks a record's
fields so that each difference keeps its own path, and words them as Confluent does
(io.confluent.kafka.schemaregistry.avro.AvroSchema, `Difference` descriptions)."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from dataclasses import dataclass

import avro.schema
from avro.compatibility import (
    ReaderWriterCompatibilityChecker,
    SchemaCompatibilityType,
    SchemaIncompatibilityType,
    lookup_writer_field,
)

BACKWARD = "backward"  # the new schema reads what the old one wrote
FORWARD = "forward"  # the old schema reads what the new one writes
DEFAULT_LEVEL = "BACKWARD"  # Confluent's
# level -> (the directions checked, against every version rather than the latest)
LEVELS: dict[str, tuple[tuple[str, ...], bool]] = {
    "NONE": ((), False),
    "BACKWARD": ((BACKWARD,), False),
    "BACKWARD_TRANSITIVE": ((BACKWARD,), True),
    "FORWARD": ((FORWARD,), False),
    "FORWARD_TRANSITIVE": ((FORWARD,), True),
    "FULL": ((BACKWARD, FORWARD), False),
    "FULL_TRANSITIVE": ((BACKWARD, FORWARD), True),
}

_I = SchemaIncompatibilityType
# Confluent's description of each difference; {reader}/{writer}: "new"/"old" by direction
DESCRIPTIONS: dict[SchemaIncompatibilityType, str] = {
    _I.name_mismatch: "The name of the schema has changed (path '{path}')",
    _I.fixed_size_mismatch: (
        "The size of FIXED type field at path '{path}' in the {reader} schema does not"
        " match with the {writer} schema"
    ),
    _I.missing_enum_symbols: (
        "The {reader} schema is missing enum symbols '{info}' at path '{path}' in the"
        " {writer} schema"
    ),
    _I.reader_field_missing_default_value: (
        "The field '{info}' at path '{path}' in the {reader} schema has no default value and"
        " is missing in the {writer} schema"
    ),
    _I.type_mismatch: (
        "The type (path '{path}') of a field in the {reader} schema does not match with the"
        " {writer} schema"
    ),
    _I.missing_union_branch: (
        "The {reader} schema is missing a type inside a union field at path '{path}' in the"
        " {writer} schema"
    ),
}


@dataclass(frozen=True)
class Difference:
    """One reason a reader cannot read a writer."""

    kind: SchemaIncompatibilityType
    path: str
    info: str

    def said(self, direction: str) -> str:
        """The difference in Confluent's words (`{errorType:'...', ...}`)."""
        reader, writer = ("new", "old") if direction == BACKWARD else ("old", "new")
        text = DESCRIPTIONS[self.kind].format(
            path=self.path, info=self.info, reader=reader, writer=writer
        )
        return (
            f"{{errorType:'{self.kind.name.upper()}', description:'{text}',"
            f" additionalInfo:'{self.info}'}}"
        )


def parse(text: str) -> avro.schema.Schema:
    """An Avro schema as the checker takes it; ValueError (its text cut at 300 characters)
    for what is not one: stricter than fastavro, as Java Avro (Confluent's parser) is, on a
    name with a `-`, a field named twice, a union with a type twice. Avro's
    warnings (a logical type it ignores) are not errors here: Confluent keeps such a schema."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return avro.schema.parse(text)
    except RecursionError:
        raise ValueError("nested too deeply") from None
    except Exception as e:  # whatever avro refuses is not a schema it can check
        said = str(e) or type(e).__name__
        raise ValueError(said if len(said) <= 300 else said[:297] + "...") from None


def differences(
    new: avro.schema.Schema, old: avro.schema.Schema, direction: str
) -> list[Difference]:
    """Why the schemas cannot be read one by the other in `direction` (empty: they can)."""
    reader, writer = (new, old) if direction == BACKWARD else (old, new)
    checker = ReaderWriterCompatibilityChecker()  # type: ignore[no-untyped-call]  # untyped __init__
    return list(_walk(checker, reader, writer, ["/"]))


def _walk(
    checker: ReaderWriterCompatibilityChecker,
    reader: avro.schema.Schema,
    writer: avro.schema.Schema,
    location: list[str],
) -> Iterator[Difference]:
    """The checker's differences, a record's field by field (its result keeps their paths
    and texts as unordered sets, which pair up only when there is one)."""
    result = checker.calculate_compatibility(reader, writer, location)
    if result.compatibility is not SchemaCompatibilityType.incompatible:
        return
    # a compatible part leaves its root path "/" among an incompatible result's paths
    paths = sorted(result.locations - {"/"}) or ["/"]
    if len(result.incompatibilities) == len(paths) == len(result.messages) == 1:
        yield Difference(result.incompatibilities[0], paths[0], *result.messages)
        return
    if not (
        isinstance(reader, avro.schema.RecordSchema)
        and isinstance(writer, avro.schema.RecordSchema)
    ):  # several differences inside one union or collection: said together
        info = "; ".join(sorted(result.messages))
        yield Difference(result.incompatibilities[0], ", ".join(paths), info)
        return
    if reader.name != writer.name:
        yield Difference(
            _I.name_mismatch, _path([*location, "name"]), f"expected: {writer.fullname}"
        )
    for i, field in enumerate(reader.fields):
        at = [*location, "fields", str(i)]
        found = lookup_writer_field(writer_schema=writer, reader_field=field)
        if found is not None:
            yield from _walk(checker, field.type, found.type, [*at, "type"])
        elif not field.has_default:
            yield Difference(_I.reader_field_missing_default_value, _path(at), field.name)


def _path(location: list[str]) -> str:
    return "/" + "/".join(location[1:])
