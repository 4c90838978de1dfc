"""TiDB's system variables as the simulated server has them: the server's values that
drivers, ORMs and the mysql client read on connect, and which variables a session may set.

The values are a TiDB of `TIDB_RELEASE` (`pkg/sessionctx/variable/sysvar.go` defaults). The
variables a session's SET changes in effect are variables.py's `SESSION_VARIABLES`; those here in
`KNOWN_VARIABLES` are accepted and answered back without an effect.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ticdc_sim.errors import SQLError

CHARSET_VARIABLES = ("character_set_client", "character_set_connection", "character_set_results")
# accepted without effect here, each session answering what it set (those with an effect
# are in SESSION_VARIABLES); the switches answer 1 or 0, as MySQL does
KNOWN_VARIABLES = {
    "names",
    "collation_connection",
    "foreign_key_checks",
    "unique_checks",
    "sql_notes",
    "tidb_txn_mode",
    "sql_select_limit",
    "net_write_timeout",
    "net_read_timeout",
    "max_execution_time",
    "wait_timeout",
    "interactive_timeout",
}
SWITCH_VARIABLES = frozenset({"foreign_key_checks", "unique_checks", "sql_notes"})


TIDB_RELEASE = "v8.5.0"
# Read-only server variables as a TiDB of that release answers them: what drivers, ORMs and
# the mysql client ask on connect (pkg/sessionctx/variable/sysvar.go defaults)
SERVER_VARIABLES: dict[str, Any] = {
    "version": f"8.0.11-TiDB-{TIDB_RELEASE}",
    "version_comment": "TiDB Server (Apache License 2.0) Community Edition, MySQL 8.0 compatible",
    "tidb_version": (
        f"Release Version: {TIDB_RELEASE}\nEdition: Community\n"
        "Git Commit Hash: ticdc-sim\nStore: tikv (simulated by ticdc-sim)"
    ),
    "version_compile_os": "linux",
    "version_compile_machine": "x86_64",
    "character_set_client": "utf8mb4",
    "character_set_connection": "utf8mb4",
    "character_set_results": "utf8mb4",
    "character_set_server": "utf8mb4",
    "character_set_database": "utf8mb4",
    "collation_connection": "utf8mb4_bin",
    "collation_server": "utf8mb4_bin",
    "collation_database": "utf8mb4_bin",
    "transaction_isolation": "REPEATABLE-READ",
    "tx_isolation": "REPEATABLE-READ",
    "transaction_read_only": 0,
    "tx_read_only": 0,
    "lower_case_table_names": 2,
    "max_allowed_packet": 67108864,
    "net_buffer_length": 16384,
    "net_write_timeout": 60,
    "net_read_timeout": 30,
    "max_execution_time": 0,
    "wait_timeout": 28800,
    "interactive_timeout": 28800,
    "auto_increment_increment": 1,
    "auto_increment_offset": 1,
    "system_time_zone": "UTC",
    "license": "Apache License 2.0",
    "init_connect": "",
    "performance_schema": 0,
    "sql_select_limit": 18446744073709551615,
    "query_cache_size": 1048576,
    "query_cache_type": "OFF",
    "have_ssl": "DISABLED",
    "port": 4000,
    "tidb_txn_mode": "pessimistic",
    # what ORMs and migration tools read (Django's features, SQLAlchemy's dialect)
    "default_storage_engine": "InnoDB",
    "sql_auto_is_null": 0,
    "innodb_lock_wait_timeout": 50,
    "lock_wait_timeout": 31536000,
    "sql_safe_updates": 0,
    "div_precision_increment": 4,
    "default_week_format": 0,
    "explicit_defaults_for_timestamp": 1,
    "group_concat_max_len": 1024,
    # what mysqldump's files save and restore (TiDB's noop sysvars, and foreign_key_checks
    # as TiDB has it since v6.6)
    "foreign_key_checks": 1,
    "unique_checks": 1,
    "sql_notes": 1,
}


# SHOW [GLOBAL|SESSION] STATUS: the status variables a TiDB registers (`defaultStatus` of
# pkg/sessionctx/variable/statusvar.go and pkg/server/stat.go) with their values on a server
# without TLS; `Uptime`, `ddl_schema_version` and `server_id` (pkg/server/stat.go,
# pkg/ddl/stat.go) are the cluster's own, filled in by the SHOW
STATUS_VARIABLES: dict[str, Any] = {
    "Ssl_cipher": "",
    "Ssl_cipher_list": "",
    "Ssl_server_not_after": "",
    "Ssl_server_not_before": "",
    "Ssl_verify_mode": 0,
    "Ssl_version": "",
    "Uptime": 0,
    "ddl_schema_version": 0,
    "server_id": "",
}


_ISOLATIONS = ("READ-UNCOMMITTED", "READ-COMMITTED", "REPEATABLE-READ", "SERIALIZABLE")
# enum variables' values, as TiDB's `TypeEnum` sysvars take them: a name (any case) or its index
ENUM_VARIABLES: dict[str, tuple[str, ...]] = {
    "transaction_isolation": _ISOLATIONS,
    "tx_isolation": _ISOLATIONS,
}
# TiDB refuses these unless tidb_skip_isolation_level_check (sysvar.go `checkIsolationLevel`)
_UNSUPPORTED_ISOLATIONS = frozenset({"READ-UNCOMMITTED", "SERIALIZABLE"})


def known_value(name: str, value: Any) -> Any:
    """A KNOWN_VARIABLES value as TiDB stores it: enums normalized, or 1231 / 8048."""
    choices = ENUM_VARIABLES.get(name)
    if choices is None:
        return value
    text = str(value).upper()
    if text.isdigit() and int(text) < len(choices):
        text = choices[int(text)]
    if text not in choices:
        raise SQLError(f"Variable '{name}' can't be set to the value of '{value}'", code=1231)
    if text in _UNSUPPORTED_ISOLATIONS:
        message = (
            f"The isolation level '{text}' is not supported. "
            "Set tidb_skip_isolation_level_check=1 to skip this error"
        )
        raise SQLError(message, code=8048)
    return text


def isolation_level(words: Sequence[str]) -> str | None:
    """The level of SET [scope] TRANSACTION's `ISOLATION LEVEL x` (validated), or None."""
    for word in words:
        parts = word.upper().split()
        if parts[:2] == ["ISOLATION", "LEVEL"]:
            return str(known_value("transaction_isolation", "-".join(parts[2:])))
    return None
