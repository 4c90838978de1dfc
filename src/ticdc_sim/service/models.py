"""The JSON the service reads and writes. Requests reject unknown fields; the open API's
shapes are TiCDC's (tiflow `cdc/api/v2/model.go`), field names included."""

from __future__ import annotations

import base64
import re
from decimal import Decimal
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ticdc_sim.cluster import NAME, NAME_MAX, Committed, Execution, Outcome
from ticdc_sim.generator.sql.values import format_decimal

TSO_MAX = (1 << 64) - 1  # a TSO is a uint64
# a cluster is a changefeed's namespace: TiCDC's namespaceRe (tiflow cdc/model/changefeed.go);
# no `.`, which MySQL users `<cluster>.<user>` split on
CONFIG_DEPTH = 32


class Strict(BaseModel):
    """A request body: unknown fields and loosely typed values (`true` for a number, "1"
    for an int) are refused."""

    model_config = ConfigDict(extra="forbid", strict=True)


class Error(BaseModel):
    """Every error answer, in TiCDC's open API shape."""

    error_msg: str
    error_code: str


# -- clusters and SQL ------------------------------------------------------------------------


class ClusterCreate(Strict):
    id: str | None = Field(
        None, pattern=NAME, max_length=NAME_MAX, description="default: cluster-<n>"
    )
    seed: int = Field(0, description="seeds RAND(), UUID(), AUTO_RANDOM and the clock")


class ClusterInfo(BaseModel):
    id: str
    seed: int
    created: float
    changefeeds: list[str]
    statements: int
    transactions: int


class SQLRequest(Strict):
    sql: str = Field(description="a script: statements separated by `;`")


class SQLError(BaseModel):
    message: str
    code: int = Field(description="MySQL's error number")
    sqlstate: str
    line: int
    column: int


class StatementResult(BaseModel):
    statement: str
    line: int
    column: int
    affected_rows: int
    last_insert_id: int = Field(
        0,
        description="the insert id MySQL's OK packet carries: the statement's first generated"
        " AUTO_INCREMENT id, else the last one given (0: none)",
    )
    commit_ts: int | None = Field(None, description="the transaction it committed, if any")
    columns: list[str] | None = Field(None, description="a result set's column names")
    rows: list[list[Any]] | None = Field(
        None, description='a result set; DECIMAL as strings, binary as {"$binary": base64}'
    )
    error: SQLError | None = None


class Transaction(BaseModel):
    commit_ts: int
    rows: int
    ddl: list[str]


class ExecutionResult(BaseModel):
    ok: bool = Field(description="every statement ran (a failed one stops the script)")
    statements: list[StatementResult]
    transactions: list[Transaction]
    messages: dict[str, int] = Field(description="records each changefeed sent for it")
    warnings: list[str]

    @classmethod
    def of(cls, run: Execution) -> ExecutionResult:
        """The answer to a script. Built with `model_construct`, unvalidated: every field is
        made here, of its type, and validating a 100-row script's answer cost 2% of its
        request (bench/service.py)."""
        return cls.model_construct(
            ok=not run.failed,
            statements=[_statement(o) for o in run.outcomes],
            transactions=[_transaction(c) for c in run.committed],
            messages=run.messages,
            warnings=[printable(w) for w in run.warnings],
        )


def _statement(outcome: Outcome) -> StatementResult:
    error = None
    if outcome.error is not None:
        e = outcome.error
        location = e.location
        error = SQLError.model_construct(
            message=printable(e.message),
            code=e.code or 1105,
            sqlstate=e.sqlstate,
            line=location.line if location else outcome.line,
            column=location.col if location else outcome.column,
        )
    rows = None if outcome.rows is None else [[cell(v) for v in r] for r in outcome.rows]
    return StatementResult.model_construct(
        statement=printable(outcome.statement),
        line=outcome.line,
        column=outcome.column,
        affected_rows=outcome.affected_rows,
        last_insert_id=outcome.insert_id,
        commit_ts=outcome.commit_ts,
        columns=None if outcome.columns is None else [printable(c) for c in outcome.columns],
        rows=rows,
        error=error,
    )


def _transaction(committed: Committed) -> Transaction:
    ddl = [printable(q) for q in committed.ddl]
    return Transaction.model_construct(commit_ts=committed.commit_ts, rows=committed.rows, ddl=ddl)


def printable(value: str) -> str:
    """Text of a script (a statement, a message quoting it) as JSON can carry it: bytes that
    are not UTF-8 (kept as lone surrogates, Python's surrogateescape) as MySQL's messages
    print them, `\\xE9`."""
    if value.isascii():
        return value
    return _SURROGATE.sub(_escaped_byte, value)


def _escaped_byte(found: re.Match[str]) -> str:
    code = ord(found.group())
    return f"\\x{code - 0xDC00:02X}" if 0xDC80 <= code <= 0xDCFF else "\ufffd"


_SURROGATE = re.compile("[\ud800-\udfff]")


def cell(value: Any) -> Any:
    if isinstance(value, Decimal):
        return format_decimal(value)
    if isinstance(value, bytes):
        return _binary(value)
    if isinstance(value, str) and not value.isascii():
        return text(value)
    return value


def _binary(data: bytes) -> dict[str, str]:
    return {"$binary": base64.b64encode(data).decode()}


def text(value: str) -> str | dict[str, str]:
    """A string as JSON can carry it. One that holds bytes which are not UTF-8 (kept as
    lone surrogates, Python's surrogateescape) goes as its bytes, as a binary value does:
    JSON cannot hold them, and a 500 is no answer."""
    try:
        value.encode()
        return value
    except UnicodeEncodeError:
        errors = "surrogateescape" if _ESCAPED.fullmatch(value) else "surrogatepass"
        return _binary(value.encode("utf-8", errors))


_ESCAPED = re.compile(r"(?:[^\ud800-\udfff]|[\udc80-\udcff])*")


def jsonable(value: Any) -> Any:
    """`value` (decoded events: dicts, lists, scalars) with every string JSON can carry."""
    if isinstance(value, str):
        return value if value.isascii() else text(value)
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}  # keys: names from the catalog
    if isinstance(value, list):
        return [jsonable(v) for v in value]
    return value


# -- messages, faults --------------------------------------------------------------------------


class Message(BaseModel):
    topic: str
    partition: int
    offset: int
    key: str | None = Field(description="base64")
    value: str | None = Field(description="base64")
    headers: dict[str, str] = Field(description="values base64")
    decoded: list[dict[str, Any]] | None = Field(
        None, description="the events the record carries, as `ticdc-sim decode` prints them"
    )


class MessagePage(BaseModel):
    messages: list[Message]
    counts: dict[str, dict[str, int]] = Field(
        description="records sent per topic and partition (each partition's next offset)"
    )
    retained: dict[str, dict[str, int]] = Field(
        description="where each partition's kept window starts: its first kept offset (its"
        " next offset, where it keeps none); a from_offset before it reads from there"
    )
    dropped: int = Field(
        description="records the changefeed no longer keeps (TICDC_SIM_RETAIN_BYTES and"
        " TICDC_SIM_RETAIN_RECORDS bound what it keeps, newest first), in all partitions"
    )


class FaultRequest(Strict):
    kind: Literal["restart", "duplicate", "ddl-replay", "unavailable"] = Field(
        description="restart: every partition again from its last checkpoint; duplicate: each"
        " partition's last row record again; ddl-replay: the last DDL record again;"
        " unavailable: every send fails (CDC:ErrKafkaAsyncSendMessage) until the changefeed's"
        " retry rebuilds its sink"
    )


class FaultResult(BaseModel):
    injected: int


class CheckpointResult(BaseModel):
    checkpoint_ts: int


# -- TiCDC's open API v2 -----------------------------------------------------------------------


class ChangefeedConfig(Strict):
    """PUT /api/v2/changefeeds/{id}: only sink_uri, replica_config and target_ts change
    (and POST, where sink_uri is required)."""

    namespace: str = Field("default", description="the upstream cluster's id")
    changefeed_id: str = Field("", description="default: a random UUID, as TiCDC's")
    start_ts: int = Field(0, ge=0, le=TSO_MAX, description="0: now")
    target_ts: int = Field(0, ge=0, le=TSO_MAX, description="0: no end")
    sink_uri: str = ""
    replica_config: dict[str, Any] | None = None
    # PDConfig: accepted, no effect
    pd_addrs: list[str] | None = None
    ca_path: str | None = None
    cert_path: str | None = None
    key_path: str | None = None
    cert_allowed_cn: list[str] | None = None

    @field_validator("replica_config")
    @classmethod
    def _shallow(cls, config: dict[str, Any] | None) -> dict[str, Any] | None:
        """TiCDC's replica config is a few levels deep; one nested past `CONFIG_DEPTH` is
        refused before anything is built (it is echoed back, and JSON has a depth limit)."""
        level, values = 1, list((config or {}).values())
        while values:
            if level > CONFIG_DEPTH:
                raise ValueError(f"nested deeper than {CONFIG_DEPTH} levels")
            level += 1
            inner: list[Any] = []
            for value in values:
                if isinstance(value, dict):
                    inner += value.values()
                elif isinstance(value, list):
                    inner += value
            values = inner
        return config


class ChangefeedCreate(ChangefeedConfig):
    sink_uri: str = Field(min_length=1, description="where the changefeed writes")


class RunningError(BaseModel):
    time: str  # when it failed (tiflow cdc/api/v2/model.go: `time,omitempty`)
    addr: str
    code: str
    message: str


class ChangefeedCommonInfo(BaseModel):
    upstream_id: int
    namespace: str
    id: str
    state: str
    checkpoint_tso: int
    checkpoint_time: str
    error: RunningError | None


class ChangeFeedInfo(BaseModel):
    upstream_id: int
    namespace: str
    id: str
    sink_uri: str
    create_time: str
    start_ts: int
    target_ts: int
    config: dict[str, Any]
    state: str
    error: RunningError | None = None
    creator_version: str
    resolved_ts: int
    checkpoint_ts: int
    checkpoint_time: str


class ChangefeedStatus(BaseModel):
    state: str
    resolved_ts: int
    checkpoint_ts: int
    last_error: RunningError | None = None
    last_warning: RunningError | None = Field(
        None, description="the last sink error it retried (TiCDC's), kept once it is normal"
    )
    messages: dict[str, dict[str, int]] = Field(
        description="ours: records sent per topic and partition"
    )
    warnings: list[str] = Field(
        default_factory=list,
        description="ours: what TiCDC would log of this changefeed (its config, its routing),"
        " one line per kind, with how often it came",
    )


class ChangefeedList(BaseModel):
    total: int
    items: list[ChangefeedCommonInfo]


class ServerStatus(BaseModel):
    version: str
    git_hash: str
    id: str
    cluster_id: str
    pid: int
    is_owner: bool
    liveness: int


class Empty(BaseModel):
    pass
