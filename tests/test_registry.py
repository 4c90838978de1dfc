"""The schema registry's store: Confluent's id and version rules, and its saved form."""

from __future__ import annotations

import pytest

from ticdc_sim.encoders.registry import (
    SCHEMA_NOT_FOUND,
    SUBJECT_NOT_FOUND,
    VERSION_NOT_FOUND,
    MemoryRegistry,
    RegistryError,
)

A = '{"type": "record", "name": "a", "fields": []}'
B = '{"type":"record","name":"b","fields":[]}'


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
