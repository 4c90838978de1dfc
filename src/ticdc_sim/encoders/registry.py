"""The schema registry's state: Avro schemas by global id and by subject version, as a
Confluent Schema Registry keeps them. Pure (no I/O): the avro encoder registers through the
`SchemaRegistry` protocol, which this store implements in process; the service serves it over
Confluent's REST API and a CLI replay saves it beside its output (`to_json`/`from_json`); an
HTTP client in `sinks` implements the same protocol against a real registry.

Confluent's rules kept here: ids are global and start at 1; a schema already registered,
under any subject, keeps its id; a subject's versions count from 1; registering a subject's
latest schema again returns its existing version. Schemas are compared by their compact JSON
text (whitespace outside strings does not make a new schema), as Confluent compares parsed
schemas.
"""

from __future__ import annotations

import json
import threading
from typing import Any, Protocol

from ticdc_sim.errors import SimError

# Confluent's REST error codes (io.confluent.kafka.schemaregistry.rest.exceptions)
SUBJECT_NOT_FOUND = 40401
VERSION_NOT_FOUND = 40402
SCHEMA_NOT_FOUND = 40403
INVALID_SCHEMA = 42201
INVALID_VERSION = 42202


class RegistryError(SimError):
    """A registry request that cannot be answered; `code` is Confluent's error code."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


class SchemaRegistry(Protocol):
    """What the avro encoder and decoder need of a registry (TiCDC's
    `pkg/sink/codec/avro/confluent_schema_registry.go`: Register, Lookup)."""

    def register(self, subject: str, schema: str) -> int: ...
    def schema(self, schema_id: int) -> str: ...


def compact(schema: str) -> str:
    """A schema's text as the registry compares and stores it: compact JSON."""
    try:
        parsed = json.loads(schema)
    except ValueError as e:
        raise RegistryError(INVALID_SCHEMA, f"the schema is not JSON: {e}") from None
    return json.dumps(parsed, separators=(",", ":"), ensure_ascii=False)


class MemoryRegistry:
    """A Confluent registry's subjects, versions and ids in memory; thread-safe (the service's
    REST API and its changefeeds share one)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._schemas: list[str] = []  # id - 1 -> compact schema text
        self._ids: dict[str, int] = {}  # compact schema text -> id
        self._subjects: dict[str, list[int]] = {}  # subject -> schema id of each version

    def register(self, subject: str, schema: str) -> int:
        """The id of `schema` under `subject`, registering it as the subject's next version
        unless it is already one of its versions."""
        text = compact(schema)
        with self._lock:
            schema_id = self._ids.get(text)
            if schema_id is None:
                self._schemas.append(text)
                schema_id = self._ids[text] = len(self._schemas)
            versions = self._subjects.setdefault(subject, [])
            if schema_id not in versions:
                versions.append(schema_id)
            return schema_id

    def schema(self, schema_id: int) -> str:
        with self._lock:
            if 1 <= schema_id <= len(self._schemas):
                return self._schemas[schema_id - 1]
        raise RegistryError(SCHEMA_NOT_FOUND, f"schema {schema_id} not found")

    def subjects(self) -> list[str]:
        with self._lock:
            return sorted(self._subjects)

    def versions(self, subject: str) -> list[int]:
        with self._lock:
            return list(range(1, len(self._versions(subject)) + 1))

    def version(self, subject: str, version: int | str) -> tuple[int, int, str]:
        """(id, version, schema) of a subject's version; `"latest"` or -1 is the last one."""
        with self._lock:
            ids = self._versions(subject)
            number = len(ids) if version in ("latest", -1) else _version_number(version)
            if not 1 <= number <= len(ids):
                raise RegistryError(
                    VERSION_NOT_FOUND, f"version {version} of subject {subject!r} not found"
                )
            schema_id = ids[number - 1]
            return schema_id, number, self._schemas[schema_id - 1]

    def lookup(self, subject: str, schema: str) -> tuple[int, int]:
        """(id, version) of `schema` among `subject`'s versions."""
        text = compact(schema)
        with self._lock:
            ids = self._versions(subject)
            schema_id = self._ids.get(text)
            if schema_id is None or schema_id not in ids:
                raise RegistryError(SCHEMA_NOT_FOUND, f"schema not found under {subject!r}")
            return schema_id, ids.index(schema_id) + 1

    def delete_subject(self, subject: str) -> list[int]:
        """Forget a subject; its versions are returned. Ids stay (Confluent never reuses one)."""
        with self._lock:
            self._versions(subject)
            return list(range(1, len(self._subjects.pop(subject)) + 1))

    def to_json(self) -> dict[str, Any]:
        with self._lock:
            return {"schemas": list(self._schemas), "subjects": dict(self._subjects)}

    @classmethod
    def from_json(cls, data: Any, where: str = "the registry file") -> MemoryRegistry:
        """The registry `to_json` saved; a clear error naming `where` for anything else."""
        registry = cls()
        try:
            schemas, subjects = data["schemas"], data["subjects"]
            for text in schemas:
                registry._ids[compact(text)] = len(registry._schemas) + 1
                registry._schemas.append(compact(text))
            for subject, ids in subjects.items():
                if not isinstance(subject, str) or not all(
                    isinstance(i, int) and 1 <= i <= len(schemas) for i in ids
                ):
                    raise TypeError(subject)
                registry._subjects[subject] = list(ids)
        except (KeyError, TypeError, AttributeError, RegistryError):
            raise RegistryError(
                INVALID_SCHEMA,
                f"{where} is not a schema registry ticdc-sim saved"
                ' ({"schemas": [...], "subjects": {...}})',
            ) from None
        return registry

    def _versions(self, subject: str) -> list[int]:
        ids = self._subjects.get(subject)
        if ids is None:
            raise RegistryError(SUBJECT_NOT_FOUND, f"subject {subject!r} not found")
        return ids


def _version_number(version: int | str) -> int:
    if isinstance(version, int):
        return version
    if version.isdigit():
        return int(version)
    raise RegistryError(
        INVALID_VERSION,
        f"the version {version[:40]!r} is not a positive number or 'latest'",
    )
