"""The TiDB statements and clauses sqlglot has no node for.

Each declares its shape as `arg_types`, as sqlglot's own `expressions/` modules do.
"""

from __future__ import annotations

from typing import ClassVar

from sqlglot import exp


class AutoRandomColumnConstraint(exp.Expression, exp.ColumnConstraintKind):
    arg_types = {"this": False, "expression": False}  # shard bits, range bits


class SerialDefaultValueColumnConstraint(exp.Expression, exp.ColumnConstraintKind):
    arg_types: ClassVar[dict[str, bool]] = {}


class UnsignedColumnConstraint(exp.Expression, exp.ColumnConstraintKind):
    """UNSIGNED after a type sqlglot has no unsigned variant of (FLOAT)."""

    arg_types: ClassVar[dict[str, bool]] = {}


class IndexPredicate(exp.Expression):
    """The WHERE of a partial index."""

    arg_types = {"this": True}


class TiDBIndexParameters(exp.IndexParameters):
    """sqlglot's index parameters plus MySQL's trailing index options of CREATE INDEX."""

    arg_types = {**exp.IndexParameters.arg_types, "options": False}


class RenameTables(exp.Expression):
    """RENAME TABLE a TO b[, c TO d]."""

    arg_types = {"expressions": True}


class RenamePair(exp.Expression):
    arg_types = {"this": True, "to": True}


class ReplaceInto(exp.Insert):
    """REPLACE [INTO] ...: an INSERT that deletes conflicting rows first."""


class PartitionBy(exp.Property):
    """PARTITION BY <kind> (...) [PARTITIONS n] [(definitions)].

    kind: RANGE, LIST, HASH, KEY; `columns` for RANGE/LIST COLUMNS; `linear` for LINEAR.
    `this` is the partitioning expression, `expressions` the COLUMNS/KEY column list.
    """

    arg_types = {
        "kind": True,
        "this": False,
        "expressions": False,
        "columns": False,
        "linear": False,
        "partitions": False,
        "definitions": False,
    }


class PartitionDef(exp.Expression):
    """PARTITION name [VALUES LESS THAN (...)|IN (...)] [options]."""

    arg_types = {"this": True, "kind": False, "expressions": False, "options": False}


class PartitionNames(exp.Expression):
    """A partition action: ADD/DROP/TRUNCATE/COALESCE/... PARTITION with its operands."""

    arg_types = {
        "action": True,
        "expressions": False,
        "definitions": False,
        "count": False,
        "all": False,
        "exists": False,
        "table": False,
        "validation": False,
    }


class PartitionOptions(exp.Expression):
    """ALTER TABLE t PARTITION p <options>."""

    arg_types = {"this": True, "options": True}


class RemoveClause(exp.Expression):
    """REMOVE PARTITIONING / REMOVE TTL."""

    arg_types = {"this": True}


class TiFlashReplica(exp.Expression):
    arg_types = {"this": True, "labels": False}


class TTLProperty(exp.Property):
    arg_types = {"this": True}


class Savepoint(exp.Expression):
    """SAVEPOINT name / RELEASE SAVEPOINT name."""

    arg_types = {"this": True, "release": False}


class DefaultOf(exp.Expression):
    """MySQL's DEFAULT(col): the column's default value."""

    arg_types = {"this": True}


class ConvertCharset(exp.Expression):
    """ALTER TABLE ... CONVERT TO CHARACTER SET <this> [COLLATE <collate>]."""

    arg_types = {"this": True, "collate": False}


class AlterDatabase(exp.Expression):
    arg_types = {"this": False, "options": True}


class Do(exp.Expression):
    arg_types = {"expressions": True}


class Admin(exp.Expression):
    """ADMIN <words...> [args]: TiDB's administrative statements (no data change)."""

    arg_types = {"this": True, "expressions": False}


class RecoverTable(exp.Expression):
    arg_types = {"this": False, "job": False}


class Flashback(exp.Expression):
    arg_types = {"this": True, "kind": True, "to": False}


class PolicyStatement(exp.Expression):
    """CREATE/ALTER/DROP PLACEMENT POLICY or RESOURCE GROUP."""

    arg_types = {
        "action": True,
        "kind": True,
        "this": True,
        "exists": False,
        "replace": False,
        "options": False,
    }
