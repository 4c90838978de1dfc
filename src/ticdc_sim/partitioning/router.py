"""The event router: which rule a table falls under, and so its topic and partition.

Mirrors tiflow `cdc/sink/dmlsink/mq/dispatcher/event_router.go`: the changefeed's
`dispatchers` rules in order, then an implicit `{matcher = ["*.*"], partition = "default"}`; the
first rule whose table filter matches a table gives both its topic and its partition
dispatcher. DDL go to the topic of the table they change (the old name for a rename) or, for
schema-level DDL, to the default topic; checkpoints go to every active topic.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

from ticdc_sim.errors import ConfigError, Warnings
from ticdc_sim.model.events import DDLEvent, RowChangedEvent
from ticdc_sim.model.table import TiCDCProfile
from ticdc_sim.partitioning.columns import ColumnsDispatcher
from ticdc_sim.partitioning.filter import TableFilter
from ticdc_sim.partitioning.index_value import IndexValueDispatcher
from ticdc_sim.partitioning.table import TableDispatcher
from ticdc_sim.partitioning.topic import TopicDispatcher, is_static
from ticdc_sim.partitioning.ts import TsDispatcher


class PartitionDispatcher(Protocol):
    by_table: bool  # every row of a table gets the same (partition, key)

    def dispatch(self, event: RowChangedEvent, partitions: int) -> tuple[int, str]: ...


# a rule's `partition` (lower-cased) -> the dispatcher it names (event_router.go
# getPartitionDispatcher; `rowid` is index-value's old name)
PARTITION_DISPATCHERS = {
    "": "table",
    "default": "table",
    "table": "table",
    "ts": "ts",
    "index-value": "index-value",
    "rowid": "index-value",
    "columns": "columns",
}


@dataclass(frozen=True)
class DispatchRule:
    """One `[[sink.dispatchers]]` entry (`partition` also read from the deprecated
    `dispatcher` key by the config loader)."""

    matcher: tuple[str, ...]
    partition: str = "default"
    index: str = ""
    columns: tuple[str, ...] = ()
    topic: str = ""


# a matcher pattern naming one table: no wildcard, negation, regex or escape
_ONE_TABLE = re.compile(r"[^!*?\[\]/\\.]+\.[^!*?\[\]/\\.]+")


def shared_topics(rules: Iterable[DispatchRule], default_topic: str) -> dict[str, list[str]]:
    """The fixed topics the rules (then the implicit `*.*` one, to `default_topic`) may give
    more than one table, each with the rules that send tables there: what avro, one table
    a topic, cannot carry. A rule with a {schema} and {table} expression and a plain `*.*`
    matcher leaves no table to the rules after it."""
    sources: dict[str, list[tuple[str, bool]]] = {}  # topic -> (rule, gives many tables)
    implicit = DispatchRule(matcher=("*.*",))
    for rule in [*rules, implicit]:
        catch_all = "*.*" in rule.matcher and not any(m.startswith("!") for m in rule.matcher)
        if not is_static(rule.topic):
            if catch_all:
                break
            continue
        many = len(rule.matcher) > 1 or not _ONE_TABLE.fullmatch(rule.matcher[0])
        said = "tables no rule matches" if rule is implicit else f"rule {list(rule.matcher)}"
        sources.setdefault(rule.topic or default_topic, []).append((said, many))
    return {
        topic: [said for said, _ in found]
        for topic, found in sources.items()
        if len(found) > 1 or found[0][1]
    }


@dataclass
class _Compiled:
    rule: DispatchRule
    filter: TableFilter
    topic: TopicDispatcher
    partition: PartitionDispatcher


@dataclass
class EventRouter:
    rules: list[DispatchRule]
    default_topic: str
    case_sensitive: bool = False
    profile: TiCDCProfile = "v8.5"
    warnings: Warnings = field(default_factory=Warnings)

    def __post_init__(self) -> None:
        implicit = DispatchRule(matcher=("*.*",))
        self._compiled = [self._compile(r) for r in [*self.rules, implicit]]
        self._by_table: dict[tuple[str, str], _Compiled] = {}
        self._topics: dict[tuple[str, str], str] = {}  # expressions substituted once a table

    def _compile(self, rule: DispatchRule) -> _Compiled:
        if not rule.matcher:
            raise ConfigError("a dispatcher rule needs a non-empty `matcher`")
        return _Compiled(
            rule,
            TableFilter(list(rule.matcher), case_sensitive=self.case_sensitive),
            TopicDispatcher(rule.topic, self.default_topic),
            self._partition_dispatcher(rule),
        )

    def _partition_dispatcher(self, rule: DispatchRule) -> PartitionDispatcher:
        name = PARTITION_DISPATCHERS.get(rule.partition.lower())
        if name == "table":
            return TableDispatcher()
        if name == "ts":
            return TsDispatcher()
        if name == "index-value":
            return IndexValueDispatcher(rule.index, self.profile)
        if name == "columns":
            return ColumnsDispatcher(list(rule.columns), self.profile)
        self.warnings.warn(
            f"dispatcher {rule.partition}",
            f"partition dispatcher {rule.partition!r} of rule {list(rule.matcher)} is unknown;"
            " TiCDC uses the default (table) dispatcher instead",
        )
        return TableDispatcher()

    def _rule(self, schema: str, table: str) -> _Compiled:
        key = (schema, table)
        found = self._by_table.get(key)
        if found is None:
            found = next(c for c in self._compiled if c.filter.match(schema, table))
            self._by_table[key] = found
        return found

    def topic(self, schema: str, table: str) -> str:
        key = (schema, table)
        found = self._topics.get(key)
        if found is None:
            found = self._topics[key] = self._rule(schema, table).topic.topic(schema, table)
        return found

    def partition(self, event: RowChangedEvent, partitions: int) -> tuple[int, str]:
        """(partition, partition key) of a row; the key groups rows into batches (v7.4+)."""
        info = event.table
        return self._rule(info.schema, info.name).partition.dispatch(event, partitions)

    def dispatcher(self, schema: str, table: str) -> PartitionDispatcher:
        """The partition dispatcher of a table's rule."""
        return self._rule(schema, table).partition

    def ddl_topic(self, event: DDLEvent) -> str:
        info = event.pre_table_info or event.table_info
        if info is None or not info.name or not event.table:
            return self.default_topic
        return self.topic(info.schema, info.name)

    def active_topics(self, tables: Iterable[tuple[str, str]]) -> list[str]:
        """Topics of all replicated tables in order, then the default topic if missing."""
        topics: list[str] = []
        for schema, table in tables:
            topic = self.topic(schema, table)
            if topic not in topics:
                topics.append(topic)
        if self.default_topic not in topics:
            topics.append(self.default_topic)
        return topics
