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

A schema Apache Avro's parser (as strict as the Java one Confluent uses) refuses is refused
(42201), such as a record naming a field twice. Compatibility is enforced as Confluent
enforces it: a schema new to a subject that has versions is checked against its latest
version (every version, at a `_TRANSITIVE` level) at the subject's level, or the registry's
(default BACKWARD), and refused with 409 when a reader could not read a writer
(`compatibility.py` holds the levels and Avro's rules).

`Limits` bound what one holds (the service's `TICDC_SIM_MAX_*`; a replay's is unbounded):
a schema's size (Confluent's 42209), subjects, versions of a subject and schemas (42205, an
operation this registry does not permit), each refusal naming the bound and its setting.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Any, Protocol

import avro.schema

from ticdc_sim.encoders import compatibility
from ticdc_sim.encoders.compatibility import DEFAULT_LEVEL, LEVELS
from ticdc_sim.errors import SimError, shown

# Confluent's REST error codes (io.confluent.kafka.schemaregistry.rest.exceptions)
SUBJECT_NOT_FOUND = 40401
VERSION_NOT_FOUND = 40402
SCHEMA_NOT_FOUND = 40403
SUBJECT_LEVEL_NOT_CONFIGURED = 40408
INCOMPATIBLE_SCHEMA = 409
INVALID_SCHEMA = 42201
INVALID_VERSION = 42202
INVALID_COMPATIBILITY_LEVEL = 42203
OPERATION_NOT_PERMITTED = 42205
INVALID_SUBJECT = 42208
SCHEMA_TOO_LARGE = 42209


class RegistryError(SimError):
    """A registry request that cannot be answered; `code` is Confluent's error code. A
    changefeed it fails reports TiCDC's code of a registry's refusal."""

    error_code = "CDC:ErrAvroSchemaAPIError"

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


class RegistryAPIError(RegistryError):
    """TiCDC's ErrAvroSchemaAPIError: a registry that could not be reached, or refused a
    request; what fails an avro changefeed (tiflow `confluent_schema_registry.go`)."""

    error_code = "CDC:ErrAvroSchemaAPIError"


def refused(subject: str, error: RegistryError) -> RegistryAPIError:
    """A registration this process's registry refused, as TiCDC says one its registry
    refused (ErrAvroSchemaAPIError, "schema manager API error, ..."), with the registry's
    own words (a 409's details) whole."""
    if isinstance(error, RegistryAPIError):  # an HTTP registry's: it names its URL already
        return error
    return RegistryAPIError(
        error.code,
        f"schema manager API error, registering subject {subject!r}: error {error.code}:"
        f" {error} (TiCDC: ErrAvroSchemaAPIError)",
    )


class SchemaRegistry(Protocol):
    """What the avro encoder and decoder need of a registry (TiCDC's
    `pkg/sink/codec/avro/confluent_schema_registry.go`: Register, Lookup)."""

    def register(self, subject: str, schema: str) -> int: ...
    def schema(self, schema_id: int) -> str: ...


def close_registry(registry: SchemaRegistry | None) -> None:
    """Close a registry that holds a connection (HTTP); the in-memory one has nothing to."""
    close = getattr(registry, "close", None)
    if close is not None:
        close()


def compact(schema: str) -> str:
    """A schema's text as the registry compares and stores it: compact JSON."""
    try:
        parsed = json.loads(schema)
    except ValueError as e:
        raise RegistryError(INVALID_SCHEMA, f"the schema is not JSON: {e}") from None
    return json.dumps(parsed, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class Limits:
    """What one registry may hold (None: no bound); `setting`: the name a bound is set by,
    `{}` the field's in capitals (`TICDC_SIM_MAX_{}`), said with a refusal."""

    schema_bytes: int | None = None  # a schema's compact JSON text, in UTF-8
    subjects: int | None = None
    subject_versions: int | None = None  # of one subject
    schemas: int | None = None  # ids, which are never given back
    setting: str = ""

    def said(self, field: str) -> str:
        return f" ({self.setting.format(field.upper())})" if self.setting else ""


class MemoryRegistry:
    """A Confluent registry's subjects, versions and ids in memory; thread-safe (the service's
    REST API and its changefeeds share one)."""

    def __init__(self, limits: Limits | None = None) -> None:
        self.limits = limits or Limits()
        self._lock = threading.Lock()
        self._schemas: list[str] = []  # id - 1 -> compact schema text
        self._ids: dict[str, int] = {}  # compact schema text -> id
        self._subjects: dict[str, list[int]] = {}  # subject -> schema id of each version
        self._level = DEFAULT_LEVEL
        self._levels: dict[str, str] = {}  # subject -> its own compatibility level
        self._parsed: dict[int, avro.schema.Schema] = {}  # id -> schema, as checked

    def register(self, subject: str, schema: str) -> int:
        """The id of `schema` under `subject`, registering it as the subject's next version
        unless it is already one of its versions; 409 when the subject's compatibility level
        refuses it."""
        text = compact(schema)
        self.sized(text)
        with self._lock:
            schema_id = self._ids.get(text)
            versions = self._subjects.get(subject, [])
            if schema_id is not None and schema_id in versions:
                return schema_id
            self._room(subject, versions, schema_id is None)
            said = self._refusals(subject, text, versions)
            if said:
                raise RegistryError(
                    INCOMPATIBLE_SCHEMA,
                    "Schema being registered is incompatible with an earlier schema for"
                    f' subject "{subject}", details: [{", ".join(said)}]',
                )
            if schema_id is None:
                parsed = _parsed(text)  # what Java's Avro refuses, Confluent refuses (42201)
                self._schemas.append(text)
                schema_id = self._ids[text] = len(self._schemas)
                self._parsed[schema_id] = parsed
            self._subjects[subject] = [*versions, schema_id]
            return schema_id

    def sized(self, schema: str) -> None:
        """42209 for a schema over `limits.schema_bytes` (checked before it is parsed)."""
        limit = self.limits.schema_bytes
        size = len(schema.encode("utf-8", "surrogatepass"))
        if limit is not None and size > limit:
            raise RegistryError(
                SCHEMA_TOO_LARGE,
                f"Schema too large: {size} bytes, over the {limit} a schema may have here"
                + self.limits.said("schema_bytes"),
            )

    def _room(self, subject: str, versions: list[int], new_id: bool) -> None:
        """42205 when a new version of `subject` would pass a bound; the lock is held."""
        limits, said = self.limits, ""
        if not versions and _over(limits.subjects, len(self._subjects)):
            said = (
                f"this registry holds {len(self._subjects)} subjects, the most it may"
                f"{limits.said('subjects')}; delete one first"
            )
        elif _over(limits.subject_versions, len(versions)):
            said = (
                f"subject {subject!r} has {len(versions)} versions, the most one may"
                f"{limits.said('subject_versions')}; delete the subject first"
            )
        elif new_id and _over(limits.schemas, len(self._schemas)):
            said = (
                f"this registry has given {len(self._schemas)} schema ids, the most it may"
                f"{limits.said('schemas')} (an id is never given back)"
            )
        if said:
            raise RegistryError(OPERATION_NOT_PERMITTED, said)

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
            self._levels.pop(subject, None)
            return list(range(1, len(self._subjects.pop(subject)) + 1))

    def level(self, subject: str | None = None, *, default_to_global: bool = False) -> str:
        """The registry's compatibility level, or `subject`'s own: 40408 if it has none,
        unless `default_to_global` (Confluent's `?defaultToGlobal=true`)."""
        with self._lock:
            level = self._level if subject is None else self._levels.get(subject)
            if level is None and default_to_global:
                level = self._level
        if level is None:
            raise _not_configured(subject)
        return level

    def set_level(self, level: object, subject: str | None = None) -> str:
        """Set the registry's level, or `subject`'s; 42203 for what is not a level."""
        if not isinstance(level, str) or level.upper() not in LEVELS:
            raise RegistryError(
                INVALID_COMPATIBILITY_LEVEL,
                f"Invalid compatibility level {shown(level)}. Valid values are"
                f" {', '.join(sorted(LEVELS))}",
            )
        with self._lock:
            if subject is None:
                self._level = level.upper()
            else:
                self._levels[subject] = level.upper()
        return level.upper()

    def delete_level(self, subject: str) -> str:
        """Forget `subject`'s own level (it follows the registry's again); the level it had."""
        with self._lock:
            level = self._levels.pop(subject, None)
        if level is None:
            raise _not_configured(subject)
        return level

    def compatibility(
        self, subject: str, schema: str, version: int | str | None = None
    ) -> list[str]:
        """Why `schema` could not be registered under `subject` at its level (Confluent's
        verbose messages; empty: it could), checked against one `version`, or as `register`
        checks it when None."""
        text = compact(schema)
        if version is None:
            with self._lock:
                return self._refusals(subject, text, self._subjects.get(subject, []))
        schema_id, number, _ = self.version(subject, version)
        with self._lock:
            return self._refusals(subject, text, [schema_id], number)

    def _refusals(
        self, subject: str, text: str, versions: list[int], number: int | None = None
    ) -> list[str]:
        """Confluent's words for why `text` cannot follow `versions` (the last first, as
        Confluent checks; only it unless the level is transitive); the lock is held."""
        level = self._levels.get(subject, self._level)
        directions, transitive = LEVELS[level]
        if not versions or not directions:
            return []
        new = _parsed(text)
        numbered = list(enumerate(versions, number or 1))
        for version, schema_id in reversed(numbered if transitive else numbered[-1:]):
            old = self._parsed.get(schema_id)
            if old is None:
                old = self._parsed[schema_id] = _parsed(self._schemas[schema_id - 1])
            said = [
                difference.said(direction)
                for direction in directions
                for difference in compatibility.differences(new, old, direction)
            ]
            if said:
                old_text = self._schemas[schema_id - 1]
                return [
                    *said,
                    f"{{oldSchemaVersion: {version}}}",
                    f"{{oldSchema: '{old_text}'}}",
                    f"{{compatibility: '{level}'}}",
                ]
        return []

    def to_json(self) -> dict[str, Any]:
        with self._lock:
            return {
                "schemas": list(self._schemas),
                "subjects": dict(self._subjects),
                "compatibility": {"global": self._level, "subjects": dict(self._levels)},
            }

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
            # files saved before levels were kept have none: Confluent's default
            levels = data.get("compatibility", {"global": DEFAULT_LEVEL, "subjects": {}})
            registry.set_level(levels["global"])
            for subject, level in levels["subjects"].items():
                registry.set_level(level, subject)
        except (KeyError, TypeError, AttributeError, RegistryError):
            raise RegistryError(
                INVALID_SCHEMA,
                f"{where} is not a schema registry ticdc-sim saved"
                ' ({"schemas": [...], "subjects": {...}, "compatibility": {...}})',
            ) from None
        return registry

    def _versions(self, subject: str) -> list[int]:
        ids = self._subjects.get(subject)
        if ids is None:
            raise RegistryError(SUBJECT_NOT_FOUND, f"subject {subject!r} not found")
        return ids


def _over(limit: int | None, count: int) -> bool:
    return limit is not None and count >= limit


def _not_configured(subject: str | None) -> RegistryError:
    return RegistryError(
        SUBJECT_LEVEL_NOT_CONFIGURED,
        f"Subject '{subject}' does not have subject-level compatibility configured",
    )


def _parsed(text: str) -> avro.schema.Schema:
    try:
        return compatibility.parse(text)
    except ValueError as e:
        raise RegistryError(INVALID_SCHEMA, f"Invalid schema: {e}") from None


def _version_number(version: int | str) -> int:
    if isinstance(version, int):
        return version
    if version.isdigit():
        return int(version)
    raise RegistryError(
        INVALID_VERSION,
        f"the version {version[:40]!r} is not a positive number or 'latest'",
    )
