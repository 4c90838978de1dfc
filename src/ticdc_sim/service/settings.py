"""The service's settings, in one place: `TICDC_SIM_*` environment variables (or a `.env`
file), each with a safe default: loopback only, no request to a host the operator did not
allow, files only under the data directory."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="TICDC_SIM_", env_file=".env", extra="ignore")

    host: str = Field("127.0.0.1", description="address both ports bind")
    port: int = Field(8300, ge=0, le=65535, description="HTTP: TiCDC's open API, ours, the page")
    mysql_port: int = Field(4000, ge=0, le=65535, description="the MySQL protocol; 0: off")
    data_dir: Path = Field(Path("ticdc-sim-data"), description="where file sinks may write")
    token: str | None = Field(None, description="bearer token every API request must carry")
    mysql_password: str | None = Field(None, description="the MySQL port's password (any user)")
    kafka_allow: list[str] = Field(
        default_factory=list,
        description="Kafka bootstrap host:port a sink URI may name (none: no kafka:// sinks)",
    )
    s3_allow: list[str] = Field(
        default_factory=list,
        description="S3 endpoints (as a sink URI's endpoint= gives them; `aws`: AWS's own) an"
        " s3:// sink may name (none: no s3:// sinks)",
    )
    schema_registry_allow: list[str] = Field(
        default_factory=list,
        description="Confluent schema registry URLs (and what is under them) an avro changefeed's"
        " schema-registry may name; the service's own registry is always allowed",
    )
    default_cluster: bool = Field(True, description="start with cluster and changefeed `default`")
    default_sink_uri: str = Field(
        "jsonl://default?protocol=canal-json&enable-tidb-extension=true",
        description="the default changefeed's sink (paths are under data_dir)",
    )
    default_config: Path | None = Field(
        None,
        description="the default changefeed's changefeed TOML (a file; TiCDC's changefeed.toml)",
    )
    max_body_bytes: int = Field(16 << 20, gt=0, description="largest request body")
    max_statements: int = Field(100_000, gt=0, description="statements in one request")
    max_txn_rows: int = Field(1_000_000, gt=0, description="rows one transaction may write")
    max_clusters: int = Field(64, gt=0, description="clusters the service holds at once")
    max_changefeeds: int = Field(64, gt=0, description="changefeeds one cluster holds at once")
    max_partitions: int = Field(
        1024, gt=0, description="partition-num a changefeed may ask for (each gets checkpoints)"
    )
    max_schema_bytes: int = Field(
        1 << 20, gt=0, description="a schema's size in a cluster's schema registry (compact JSON)"
    )
    max_subjects: int = Field(
        10_000, gt=0, description="subjects a cluster's schema registry holds"
    )
    max_subject_versions: int = Field(
        1_000, gt=0, description="versions of one subject in a cluster's schema registry"
    )
    max_schemas: int = Field(
        10_000, gt=0, description="schema ids a cluster's schema registry gives (never given back)"
    )
    request_time_s: float = Field(300.0, gt=0, description="a request's statements stop after")
    lock_wait_s: float = Field(50.0, gt=0, description="innodb_lock_wait_timeout of sessions")
    history_events: int = Field(
        1_000_000,
        gt=0,
        description="committed events a cluster keeps for changefeeds with a past start_ts",
    )
    history_bytes: int = Field(
        64 << 20,
        gt=0,
        description="bytes of committed events a cluster keeps for changefeeds with a past"
        " start_ts, or resuming from their checkpoint (older ones: TiCDC's GC safepoint)",
    )
    retain_records: int = Field(
        1_000_000,
        gt=0,
        description="records a changefeed keeps for reading, in all its partitions",
    )
    retain_bytes: int = Field(
        128 << 20,
        gt=0,
        description="bytes of records a changefeed keeps for reading, in all its partitions"
        " (the oldest go first; the read API says where the kept window starts)",
    )
    file_retain_bytes: int = Field(
        1 << 30,
        ge=0,
        description="bytes a file changefeed (jsonl, parquet, file://) keeps on disk; its"
        " oldest closed files are removed beyond (0: no limit)",
    )
    max_connections: int = Field(
        256, gt=0, description="MySQL connections at once (TiDB's max_connections; error 1040)"
    )
    max_http_concurrency: int = Field(
        256, gt=0, description="HTTP requests and connections at once (503 beyond)"
    )
    max_result_bytes: int = Field(
        64 << 20,
        gt=0,
        description="bytes of result rows one HTTP request's answer may hold (an error beyond)",
    )
    kafka_queue_bytes: int = Field(
        64 << 20,
        gt=0,
        description="bytes a kafka:// changefeed's producer queues for the brokers"
        " (librdkafka's queue.buffering.max.kbytes)",
    )
    backoff_init_s: float = Field(
        10.0,
        gt=0,
        description="a failed changefeed's first retry after (TiCDC's 10 s; doubled up to"
        " backoff_max_s)",
    )
    error_stuck_s: float = Field(
        0.0,
        ge=0,
        description="how long a changefeed may fail and retry before it is failed, for every"
        " changefeed (0: each one's changefeed-error-stuck-duration, TiCDC's 30m at least)",
    )
    backoff_max_s: float = Field(
        600.0, gt=0, description="the longest wait between a changefeed's retries (TiCDC's 10 min)"
    )


def package_version() -> str:
    try:
        return version("ticdc-sim")
    except PackageNotFoundError:
        return "0.0.0"
