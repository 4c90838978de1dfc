"""The session's variables: what SET does to a system variable, user variable, character set
or isolation level, and how @@name reads back (`SESSION_VARIABLES`: those with an effect here;
sysvars.py holds the server's values and those only kept). TiDB's `pkg/sessionctx/variable`
(`sysvar.go`) declares the same per variable: its getter, its setter's validation and its
default.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, NamedTuple

from sqlglot import exp

from ticdc_sim.errors import SQLError
from ticdc_sim.generator.sql import dialect as d
from ticdc_sim.generator.sql.evaluate import evaluate_constant
from ticdc_sim.generator.sql.sysvars import (
    CHARSET_VARIABLES,
    KNOWN_VARIABLES,
    SERVER_VARIABLES,
    SWITCH_VARIABLES,
    isolation_level,
    known_value,
)
from ticdc_sim.generator.sql.values import TIDB_DEFAULT_SQL_MODE, as_text, load_zone

if TYPE_CHECKING:  # the engine imports this module; the types are its
    from ticdc_sim.generator.sql.engine import Engine


def read_only() -> SQLError:
    """TiDB's answer to READ ONLY without tidb_enable_noop_functions (executor/simple.go)."""
    return SQLError(
        "function READ ONLY has only noop implementation in tidb now, use"
        " tidb_enable_noop_functions to enable these functions",
        code=1235,
    )


def set_variables(engine: Engine, node: exp.Set, source: str) -> None:
    """SET: of system variables (SESSION_VARIABLES, KNOWN_VARIABLES), user variables, NAMES
    and TRANSACTION ISOLATION LEVEL."""
    for item in node.expressions:
        if item.text("kind").upper() == "NAMES":
            engine.set_charset(CHARSET_VARIABLES, item.this.name)
            continue
        assignment = item.this
        if not isinstance(assignment, exp.EQ | exp.PropertyEQ):
            if any(e.name.upper() == "READ ONLY" for e in item.expressions):
                raise read_only()  # SET TRANSACTION READ ONLY: TiDB's checkReadOnly
            level = isolation_level([e.name for e in item.expressions])
            if level is not None and not item.args.get("global_"):
                if _SESSION_SCOPE.search(source):
                    engine.session.isolation = level
                else:  # SET TRANSACTION ...: the next transaction only (MySQL)
                    engine.session.next_isolation = level
                continue
            engine.warn(
                f"SET {item.sql(dialect=d.TiDB)}",
                f"SET {item.sql(dialect=d.TiDB)} has no effect here; accepted and skipped",
            )
            continue
        target, value_node = assignment.this, assignment.expression
        if isinstance(target, exp.Parameter):  # @x = expr
            engine.set_user_variable(target.name.lower(), evaluate_constant(value_node, engine))
            continue
        name = target.name.lower()
        if item.text("kind").upper() == "GLOBAL" or target.text("kind").upper() == "GLOBAL":
            engine.warn(
                f"SET GLOBAL {name}",
                f"SET GLOBAL {name} changes no session of this script; accepted and skipped",
            )
            continue
        own = SESSION_VARIABLES.get(name)
        if isinstance(value_node, exp.Column | exp.Var) and not value_node.args.get("table"):
            value: Any = value_node.name  # a bare word: ON, OFF, utf8, SYSTEM ...
            if own is not None and value.upper() == "DEFAULT":  # the server's value
                value = own.default(engine)
        else:
            value = evaluate_constant(value_node, engine)
        if own is not None:
            own.set(engine, value)
        elif name in KNOWN_VARIABLES:
            switch = name in SWITCH_VARIABLES
            engine.session.noop_values[name] = (
                int(_switch(name, value)) if switch else known_value(name, value)
            )
        else:
            engine.warn(f"variable {name}", f"variable {name} is accepted and has no effect")


_SESSION_SCOPE = re.compile(r"\bSET\s+(SESSION|LOCAL)\s+TRANSACTION\b", re.IGNORECASE)


def _set_isolation(engine: Engine, value: Any, name: str) -> None:
    engine.session.isolation = known_value(name, as_text(value))  # 1231, 8048 as TiDB


def _switch(name: str, value: Any) -> bool:
    """A boolean system variable's value: 1/0, ON/OFF or TRUE/FALSE (MySQL 1231 else)."""
    text = as_text(value).upper()
    if text not in _SWITCHES:
        message = f"Variable '{name}' can't be set to the value of '{as_text(value)}'"
        raise SQLError(message, code=1231)
    return _SWITCHES[text]


_SWITCHES = {"1": True, "ON": True, "TRUE": True, "0": False, "OFF": False, "FALSE": False}


def _set_autocommit(engine: Engine, value: Any) -> None:
    on = _switch("autocommit", value)
    if on and not engine.session.autocommit:
        engine.commit()  # turning autocommit on commits (MySQL)
    engine.session.autocommit = on


def _set_time_zone(engine: Engine, value: Any) -> None:
    engine.session.zone = load_zone(as_text(value))
    engine.session.zone_name = as_text(value)


def _set_clustered_index(engine: Engine, value: Any) -> None:
    # pkg/sessionctx/vardef: ON (the default, DefTiDBEnableClusteredIndex), OFF, INT_ONLY
    mode = {"1": "ON", "0": "OFF"}.get(as_text(value).upper(), as_text(value).upper())
    if mode not in ("ON", "OFF", "INT_ONLY"):
        raise SQLError(
            f"Variable 'tidb_enable_clustered_index' can't be set to the value of '{value}'",
            code=1231,
        )
    engine.session.clustered_index = mode


def _set_skip_utf8_check(engine: Engine, value: Any) -> None:
    # TiDB's tidb_skip_utf8_check: strings reach character columns unchecked
    skip = _switch("tidb_skip_utf8_check", value)
    engine.use_mode(replace(engine.session.sql_mode, check_utf8=not skip))


class SessionVariable(NamedTuple):
    """A system variable with an effect here: its session value (booleans as bool), how SET
    applies a value to it, and the server's value, which SET ... = DEFAULT restores."""

    get: Callable[[Engine], Any]
    set: Callable[[Engine, Any], None]
    default: Callable[[Engine], Any]


def _charset_variable(name: str) -> SessionVariable:
    """character_set_client, _connection or _results: SET NAMES sets all three."""
    return SessionVariable(
        lambda e: e.session.charsets[name],
        lambda e, value: e.set_charset([name], value),
        lambda e: SERVER_VARIABLES[name],
    )


def _set_read_only(engine: Engine, value: Any) -> None:
    if _switch("transaction_read_only", value):
        raise read_only()  # TiDB's checkReadOnly, without tidb_enable_noop_functions


SESSION_VARIABLES: dict[str, SessionVariable] = {
    "autocommit": SessionVariable(lambda e: e.session.autocommit, _set_autocommit, lambda e: True),
    "sql_mode": SessionVariable(
        lambda e: str(e.session.sql_mode),
        lambda e, value: e.set_sql_mode(as_text(value)),
        lambda e: TIDB_DEFAULT_SQL_MODE,
    ),
    "tidb_skip_utf8_check": SessionVariable(
        lambda e: not e.session.sql_mode.check_utf8, _set_skip_utf8_check, lambda e: False
    ),
    "tidb_enable_clustered_index": SessionVariable(
        lambda e: e.session.clustered_index, _set_clustered_index, lambda e: "ON"
    ),
    "time_zone": SessionVariable(
        lambda e: e.session.zone_name, _set_time_zone, lambda e: e.config.time_zone
    ),
    **{name: _charset_variable(name) for name in CHARSET_VARIABLES},
    **{
        name: SessionVariable(
            lambda e: e.session.isolation,
            functools.partial(lambda n, e, value: _set_isolation(e, value, n), name),
            lambda e: "REPEATABLE-READ",
        )
        for name in ("transaction_isolation", "tx_isolation")
    },
    **{
        name: SessionVariable(lambda e: False, _set_read_only, lambda e: False)
        for name in ("tx_read_only", "transaction_read_only")
    },
}
