"""The TiDB dialect: sqlglot's MySQL dialect plus what TiDB accepts on top of it.

Added here, each as a parser rule producing a structured node (never `exp.Command`):
- TiDB executable comments `/*T![feature] ... */` and MySQL's `/*!NNNNN ... */`, whose text is
  SQL to TiDB; they are lexed as code by the tokenizer (TiDB `pkg/parser/lexer.go` does the same).
- `PRIMARY KEY [CLUSTERED|NONCLUSTERED]`, `AUTO_RANDOM[(shard[, range])]`, column `KEY`,
  `SERIAL DEFAULT VALUE`, `FLOAT ... UNSIGNED`, partial indexes (`KEY k(c) WHERE ...`).
- `PARTITION BY RANGE|LIST [COLUMNS]|[LINEAR] HASH|KEY (...) [PARTITIONS n] (definitions)` and
  the partition management actions of ALTER TABLE.
- TiDB table options (SHARD_ROW_ID_BITS, AUTO_ID_CACHE, TTL, PLACEMENT POLICY, ...).
- `RENAME TABLE a TO b[, c TO d]`, `REPLACE [INTO]`, `ALTER DATABASE`, `DO`, `ADMIN ...`,
  `RECOVER TABLE`, `FLASHBACK TABLE|DATABASE`, resource groups, placement policies, sequences.

Laid out as sqlglot lays out a dialect: `tokens`, `parser`, `generator` and the node classes
(`expressions`), bound together by the `TiDB` class here; behaviour is held in class-level tables.
"""

from __future__ import annotations

from sqlglot import tokens
from sqlglot.dialects.mysql import MySQL

if tokens.SQLGLOTC_INSTALLED:  # pragma: no cover - depends on the environment
    raise ImportError(
        "ticdc-sim needs the pure-Python sqlglot: the compiled build (sqlglotc) forbids the "
        "Parser/Generator/Expression subclasses the TiDB dialect is made of. "
        "Run `pip uninstall sqlglotc`."
    )

from ticdc_sim.generator.sql.dialect.expressions import (  # noqa: E402
    Admin,
    AlterDatabase,
    AutoRandomColumnConstraint,
    ConvertCharset,
    DefaultOf,
    Do,
    Flashback,
    IndexPredicate,
    PartitionBy,
    PartitionDef,
    PartitionNames,
    PartitionOptions,
    PolicyStatement,
    RecoverTable,
    RemoveClause,
    RenamePair,
    RenameTables,
    ReplaceInto,
    Savepoint,
    SerialDefaultValueColumnConstraint,
    TiDBIndexParameters,
    TiFlashReplica,
    TTLProperty,
    UnsignedColumnConstraint,
)
from ticdc_sim.generator.sql.dialect.generator import TiDBGenerator  # noqa: E402
from ticdc_sim.generator.sql.dialect.parser import TiDBParser  # noqa: E402
from ticdc_sim.generator.sql.dialect.tokens import TIDB_FEATURE_IDS, TiDBTokenizer  # noqa: E402

__all__ = [
    "AutoRandomColumnConstraint",
    "SerialDefaultValueColumnConstraint",
    "UnsignedColumnConstraint",
    "IndexPredicate",
    "TiDBIndexParameters",
    "RenameTables",
    "RenamePair",
    "ReplaceInto",
    "PartitionBy",
    "PartitionDef",
    "PartitionNames",
    "PartitionOptions",
    "RemoveClause",
    "TiFlashReplica",
    "TTLProperty",
    "Savepoint",
    "DefaultOf",
    "ConvertCharset",
    "AlterDatabase",
    "Do",
    "Admin",
    "RecoverTable",
    "Flashback",
    "PolicyStatement",
    "TIDB_FEATURE_IDS",
    "TiDB",
    "TiDBGenerator",
    "TiDBParser",
    "TiDBTokenizer",
]


class TiDB(MySQL):
    """TiDB's SQL dialect (`read="tidb"` after importing this module)."""

    Tokenizer = TiDBTokenizer
    Parser = TiDBParser
    Generator = TiDBGenerator
    # DEFAULT in VALUES goes through the expression parser, which also knows DEFAULT(col)
    SUPPORTS_VALUES_DEFAULT = False
    # a JSON path sqlglot cannot read stays a string, which the evaluator checks (error
    # 3143); sqlglot would log a warning of its own for it first
    STRICT_JSON_PATH_SYNTAX = False
