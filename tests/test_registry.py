"""The schema registry's store: Confluent's id and version rules, its compatibility levels
(each judged on TiCDC-shaped schemas as the DDL that makes them changes them), and its saved
form."""

from __future__ import annotations

import json
from typing import Any

import pytest
from avro.compatibility import SchemaIncompatibilityType

from ticdc_sim.encoders import compatibility
from ticdc_sim.encoders.compatibility import BACKWARD, parse
from ticdc_sim.encoders.registry import (
    INCOMPATIBLE_SCHEMA,
    INVALID_COMPATIBILITY_LEVEL,
    INVALID_SCHEMA,
    SCHEMA_NOT_FOUND,
    SUBJECT_LEVEL_NOT_CONFIGURED,
    SUBJECT_NOT_FOUND,
    VERSION_NOT_FOUND,
    MemoryRegistry,
    RegistryError,
)

A = '{"type": "record", "name": "a", "fields": []}'
B = '{"type":"record","name":"a","fields":[{"name":"x","type":"int","default":0}]}'


def test_ids_are_global_and_versions_count_per_subject() -> None:
    registry = MemoryRegistry()
    assert registry.register("t-value", A) == 1
    assert registry.register("t-value", A.replace(" ", "")) == 1  # the same schema
    assert registry.register("t-value", B) == 2
    assert registry.register("u-value", A) == 1  # another subject keeps the id
    assert registry.versions("t-value") == [1, 2]
    assert registry.version("t-value", "latest") == (2, 2, B)
    assert registry.version("t-value", "1")[0] == 1
    assert registry.lookup("u-value", A) == (1, 1)
    assert registry.schema(2) == B
    assert registry.subjects() == ["t-value", "u-value"]


def test_unknown_ids_subjects_and_versions_carry_confluent_codes() -> None:
    registry = MemoryRegistry()
    registry.register("t-key", A)
    cases = [
        (lambda: registry.schema(9), SCHEMA_NOT_FOUND, "schema 9 not found"),
        (lambda: registry.versions("x"), SUBJECT_NOT_FOUND, "subject 'x' not found"),
        (lambda: registry.version("t-key", 2), VERSION_NOT_FOUND, "version 2 of subject"),
        (lambda: registry.lookup("t-key", B), SCHEMA_NOT_FOUND, "schema not found under"),
    ]
    for call, code, text in cases:
        with pytest.raises(RegistryError, match=text) as caught:
            call()
        assert caught.value.code == code


def test_a_deleted_subject_keeps_its_ids() -> None:
    registry = MemoryRegistry()
    registry.register("t-value", A)
    assert registry.delete_subject("t-value") == [1]
    assert registry.register("u-value", B) == 2
    assert registry.schema(1) == '{"type":"record","name":"a","fields":[]}'


def test_the_saved_registry_reads_back_and_junk_is_refused() -> None:
    registry = MemoryRegistry()
    registry.register("t-value", A)
    registry.register("t-key", B)
    again = MemoryRegistry.from_json(registry.to_json())
    assert again.to_json() == registry.to_json()
    assert again.register("t-value", B) == 2
    for junk in ({}, {"schemas": ["{"], "subjects": {}}, {"schemas": [A], "subjects": {"s": [2]}}):
        with pytest.raises(RegistryError, match="out.registry.json is not a schema registry"):
            MemoryRegistry.from_json(junk, "out.registry.json")


def column(name: str, avro: str, tidb: str, *, null: bool = False, **extra: Any) -> dict[str, Any]:
    """A column's field as TiCDC's avro encoder writes it (avro.go columns2AvroSchema): a
    nullable column is a union with null first and a null default."""
    kind = {"type": avro, "connect.parameters": {"tidb_type": tidb}, **extra}
    if null:
        return {"default": None, "name": name, "type": ["null", kind]}
    return {"name": name, "type": kind}


ID = column("id", "long", "BIGINT")
PRICE = column("price", "bytes", "DECIMAL", logicalType="decimal", precision=10, scale=2)


def table(*columns: dict[str, Any]) -> str:
    fields = [ID, PRICE, *columns]
    return json.dumps(
        {"type": "record", "name": "t", "namespace": "default.test", "fields": fields}
    )


# DDL -> (the schema after it, given the schema before is `table()` or `table(C_INT)`)
C_INT = column("c", "int", "INT")
DDL: dict[str, tuple[str, str]] = {
    "ADD COLUMN c INT NULL": (table(), table(column("c", "int", "INT", null=True))),
    "ADD COLUMN c INT NOT NULL": (table(), table(C_INT)),
    "ADD COLUMN c INT NOT NULL DEFAULT 7": (table(), table({**C_INT, "default": 7})),
    "DROP COLUMN c (NOT NULL)": (table(C_INT), table()),
    "MODIFY c BIGINT NOT NULL": (table(C_INT), table(column("c", "long", "BIGINT"))),
    "MODIFY c VARCHAR(8) NOT NULL": (table(C_INT), table(column("c", "string", "TEXT"))),
    "MODIFY c INT NULL": (table(C_INT), table(column("c", "int", "INT", null=True))),
    "MODIFY c INT NOT NULL (from NULL)": (
        table(column("c", "int", "INT", null=True)),
        table(C_INT),
    ),
    # TiCDC writes no default for a logical type (goavro's limit): as if it had none
    "ADD COLUMN c DECIMAL(10,2) NOT NULL DEFAULT 0": (
        table(),
        table(column("c", "bytes", "DECIMAL", logicalType="decimal", precision=10, scale=2)),
    ),
    "MODIFY price DECIMAL(12,4)": (
        table(),
        table().replace('"precision": 10', '"precision": 12').replace('"scale": 2', '"scale": 4'),
    ),
}
# whether each level lets the DDL's schema follow the one before
# (NONE, BACKWARD, FORWARD, FULL; a _TRANSITIVE level judges two versions as its base does)
ALLOWED: dict[str, tuple[bool, bool, bool, bool]] = {
    "ADD COLUMN c INT NULL": (True, True, True, True),
    "ADD COLUMN c INT NOT NULL": (True, False, True, False),
    "ADD COLUMN c INT NOT NULL DEFAULT 7": (True, True, True, True),
    "DROP COLUMN c (NOT NULL)": (True, True, False, False),
    "MODIFY c BIGINT NOT NULL": (True, True, False, False),  # long reads int, not back
    "MODIFY c VARCHAR(8) NOT NULL": (True, False, False, False),
    "MODIFY c INT NULL": (True, True, False, False),
    "MODIFY c INT NOT NULL (from NULL)": (True, False, True, False),  # int cannot read null
    "ADD COLUMN c DECIMAL(10,2) NOT NULL DEFAULT 0": (True, False, True, False),
    # Avro's rules (and Confluent's) do not look at logical types
    "MODIFY price DECIMAL(12,4)": (True, True, True, True),
}


@pytest.mark.parametrize("ddl", list(DDL))
@pytest.mark.parametrize(
    ("level", "index"),
    [
        ("NONE", 0),
        ("BACKWARD", 1),
        ("BACKWARD_TRANSITIVE", 1),
        ("FORWARD", 2),
        ("FORWARD_TRANSITIVE", 2),
        ("FULL", 3),
        ("FULL_TRANSITIVE", 3),
    ],
)
def test_each_level_judges_ticdc_schemas_after_a_ddl(ddl: str, level: str, index: int) -> None:
    before, after = DDL[ddl]
    registry = MemoryRegistry()
    registry.set_level(level)
    registry.register("t-value", before)
    allowed = ALLOWED[ddl][index]
    assert (registry.compatibility("t-value", after) == []) is allowed
    if allowed:
        assert registry.register("t-value", after) == 2
        assert registry.versions("t-value") == [1, 2]
    else:
        with pytest.raises(RegistryError) as caught:
            registry.register("t-value", after)
        assert caught.value.code == INCOMPATIBLE_SCHEMA
        assert registry.versions("t-value") == [1]  # nothing half-written


def test_a_refusal_is_worded_as_confluent_words_it() -> None:
    registry = MemoryRegistry()
    before, after = DDL["ADD COLUMN c INT NOT NULL"]
    registry.register("t-value", before)
    with pytest.raises(RegistryError) as caught:
        registry.register("t-value", after)
    old = json.dumps(json.loads(before), separators=(",", ":"))
    assert str(caught.value) == (
        'Schema being registered is incompatible with an earlier schema for subject "t-value",'
        " details: [{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE', description:'The field"
        " 'c' at path '/fields/2' in the new schema has no default value and is missing in"
        " the old schema', additionalInfo:'c'}, {oldSchemaVersion: 1},"
        f" {{oldSchema: '{old}'}}, {{compatibility: 'BACKWARD'}}]"
    )
    with pytest.raises(RegistryError, match="schema 2 not found"):
        registry.schema(2)  # a refused schema gets no id


def test_full_names_each_difference_both_ways_and_each_field_on_its_own() -> None:
    registry = MemoryRegistry()
    registry.set_level("FULL", "t-value")
    before = table(C_INT, column("d", "int", "INT"))
    registry.register("t-value", before)
    # c becomes a string, d is dropped, e is added NOT NULL
    after = table(column("c", "string", "TEXT"), column("e", "int", "INT"))
    said = registry.compatibility("t-value", after)
    assert said[:-2] == [
        "{errorType:'TYPE_MISMATCH', description:'The type (path '/fields/2/type') of a field"
        " in the new schema does not match with the old schema', additionalInfo:'reader type:"
        " string not compatible with writer type: int'}",
        "{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE', description:'The field 'e' at path"
        " '/fields/3' in the new schema has no default value and is missing in the old"
        " schema', additionalInfo:'e'}",
        "{errorType:'TYPE_MISMATCH', description:'The type (path '/fields/2/type') of a field"
        " in the old schema does not match with the new schema', additionalInfo:'reader type:"
        " int not compatible with writer type: string'}",
        "{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE', description:'The field 'd' at path"
        " '/fields/3' in the old schema has no default value and is missing in the new"
        " schema', additionalInfo:'d'}",
        "{oldSchemaVersion: 1}",
    ]
    assert said[-1] == "{compatibility: 'FULL'}"


def test_a_transitive_level_checks_every_version_the_latest_first() -> None:
    v1 = table(C_INT)
    v2 = table()  # DROP COLUMN c
    # ADD COLUMN c VARCHAR(8) NOT NULL DEFAULT ''
    v3 = table({**column("c", "string", "TEXT"), "default": ""})
    registry = MemoryRegistry()
    registry.register("t-value", v1)
    registry.register("t-value", v2)
    assert registry.compatibility("t-value", v3) == []  # BACKWARD: v2 only
    registry.set_level("BACKWARD_TRANSITIVE", "t-value")
    said = registry.compatibility("t-value", v3)
    assert said[0].startswith("{errorType:'TYPE_MISMATCH', description:'The type (path")
    assert said[1] == "{oldSchemaVersion: 1}"
    # one version asked for: that one alone, whatever the level
    assert registry.compatibility("t-value", v3, 2) == []
    assert registry.compatibility("t-value", v3, "1")[1] == "{oldSchemaVersion: 1}"
    registry.set_level("NONE", "t-value")
    assert registry.register("t-value", v3) == 3


def test_levels_global_and_per_subject() -> None:
    registry = MemoryRegistry()
    assert registry.level() == "BACKWARD"
    assert registry.level("t-value", default_to_global=True) == "BACKWARD"
    assert registry.set_level("forward_transitive", "t-value") == "FORWARD_TRANSITIVE"
    assert registry.set_level("Full") == "FULL"
    assert (registry.level(), registry.level("t-value")) == ("FULL", "FORWARD_TRANSITIVE")
    assert registry.delete_level("t-value") == "FORWARD_TRANSITIVE"
    cases = [
        (
            lambda: registry.delete_level("t-value"),
            SUBJECT_LEVEL_NOT_CONFIGURED,
            "Subject 't-value' does not have subject-level compatibility configured",
        ),
        (
            lambda: registry.level("t-value"),
            SUBJECT_LEVEL_NOT_CONFIGURED,
            "Subject 't-value' does not have subject-level compatibility configured",
        ),
        (
            lambda: registry.set_level("SIDEWAYS"),
            INVALID_COMPATIBILITY_LEVEL,
            "Invalid compatibility level 'SIDEWAYS'. Valid values are BACKWARD,"
            " BACKWARD_TRANSITIVE, FORWARD, FORWARD_TRANSITIVE, FULL, FULL_TRANSITIVE, NONE",
        ),
        (
            lambda: registry.set_level(None, "t-value"),
            INVALID_COMPATIBILITY_LEVEL,
            "Invalid compatibility level null. Valid values are BACKWARD,"
            " BACKWARD_TRANSITIVE, FORWARD, FORWARD_TRANSITIVE, FULL, FULL_TRANSITIVE, NONE",
        ),
    ]
    for call, code, text in cases:
        with pytest.raises(RegistryError) as caught:
            call()
        assert (caught.value.code, str(caught.value)) == (code, text)
    # a deleted subject forgets its level, as it forgets its versions
    registry.register("t-value", A)
    registry.set_level("NONE", "t-value")
    registry.delete_subject("t-value")
    assert registry.to_json()["compatibility"]["subjects"] == {}


def test_a_schema_avro_cannot_read_is_refused_when_it_must_be_checked() -> None:
    registry = MemoryRegistry()
    registry.register("t-value", A)
    bad = '{"type": "record", "name": "a", "fields": [{"name": "x", "type": "nope"}]}'
    with pytest.raises(RegistryError) as caught:
        registry.register("t-value", bad)
    assert caught.value.code == INVALID_SCHEMA
    assert str(caught.value).startswith("Invalid schema: ")
    assert "nope" in str(caught.value)


def test_levels_are_saved_and_an_older_file_reads_with_the_default() -> None:
    registry = MemoryRegistry()
    registry.register("t-value", A)
    registry.set_level("NONE")
    registry.set_level("FULL", "t-value")
    saved = registry.to_json()
    assert saved["compatibility"] == {"global": "NONE", "subjects": {"t-value": "FULL"}}
    again = MemoryRegistry.from_json(json.loads(json.dumps(saved)))
    assert (again.level(), again.level("t-value")) == ("NONE", "FULL")
    older = MemoryRegistry.from_json({"schemas": saved["schemas"], "subjects": saved["subjects"]})
    assert older.to_json()["compatibility"] == {"global": "BACKWARD", "subjects": {}}
    for levels in ({"global": "SIDEWAYS", "subjects": {}}, {"global": "NONE"}, []):
        with pytest.raises(RegistryError, match="r.json is not a schema registry ticdc-sim"):
            MemoryRegistry.from_json({**saved, "compatibility": levels}, "r.json")


# the Avro specification's Schema Resolution: what a reader of each primitive type reads
PRIMITIVES = ["null", "boolean", "int", "long", "float", "double", "bytes", "string"]
PROMOTED = {  # writer -> the other reader types it may be read as
    "int": {"long", "float", "double"},
    "long": {"float", "double"},
    "float": {"double"},
    "string": {"bytes"},
    "bytes": {"string"},
}


@pytest.mark.parametrize("writer", PRIMITIVES)
def test_primitives_resolve_as_the_avro_specification_says(writer: str) -> None:
    for reader in PRIMITIVES:
        found = compatibility.differences(parse(f'"{reader}"'), parse(f'"{writer}"'), BACKWARD)
        readable = reader == writer or reader in PROMOTED.get(writer, set())
        assert (found == []) is readable, (reader, writer)
        if not readable:
            assert found == [
                compatibility.Difference(
                    SchemaIncompatibilityType.type_mismatch,
                    "/",
                    f"reader type: {reader} not compatible with writer type: {writer}",
                )
            ]


ENUM = '{"type": "enum", "name": "e", "symbols": %s%s}'
# (reader, writer, what keeps the reader from reading the writer; "" : nothing)
SPEC_CASES = [
    ('["null", "long"]', '"int"', ""),  # the first union branch that reads it
    ('"long"', '["null", "long"]', "TYPE_MISMATCH"),  # each writer branch must be read
    ('["null", "string"]', '["null", "long"]', "MISSING_UNION_BRANCH"),
    (ENUM % ('["a", "b"]', ""), ENUM % ('["a"]', ""), ""),
    (ENUM % ('["a"]', ""), ENUM % ('["a", "b"]', ""), "MISSING_ENUM_SYMBOLS"),
    (ENUM % ('["a"]', ', "default": "a"'), ENUM % ('["a", "b"]', ""), ""),
    (
        '{"type": "fixed", "name": "f", "size": 4}',
        '{"type": "fixed", "name": "f", "size": 8}',
        "FIXED_SIZE_MISMATCH",
    ),
    (
        '{"type": "fixed", "name": "g", "size": 4}',
        '{"type": "fixed", "name": "f", "size": 4}',
        "NAME_MISMATCH",
    ),
    ('{"type": "array", "items": "long"}', '{"type": "array", "items": "int"}', ""),
    ('{"type": "map", "values": "int"}', '{"type": "map", "values": "long"}', "TYPE_MISMATCH"),
]


@pytest.mark.parametrize(("reader", "writer", "kind"), SPEC_CASES)
def test_complex_types_resolve_as_the_avro_specification_says(
    reader: str, writer: str, kind: str
) -> None:
    found = compatibility.differences(parse(reader), parse(writer), BACKWARD)
    assert [d.kind.name.upper() for d in found] == ([kind] if kind else [])
