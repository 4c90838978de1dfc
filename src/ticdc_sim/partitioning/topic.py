"""Topic dispatchers: tiflow `topic/expression.go`, `topic/dispatcher.go`.

A rule's `topic` is empty (the default topic of the sink URI), a fixed name, or an expression
with `{schema}` and `{table}`. Names are made Kafka-safe the way TiCDC does it: every rune
outside `[A-Za-z0-9._-]` becomes `_` (an invalid UTF-8 byte is one rune), the result is cut to
249 bytes, and `.`/`..` become `_`/`__`.
"""

from __future__ import annotations

import re

from ticdc_sim.errors import ConfigError

_NAME = r"[A-Za-z0-9\._\-]"
_STATIC = re.compile(rf"{_NAME}+")
_EXPRESSION = re.compile(rf"{_NAME}*(\{{schema\}})?({_NAME}*\{{table\}})?{_NAME}*")
# expression.go avroTopicNameRE: an avro topic rule names both, one table a topic
_AVRO_EXPRESSION = re.compile(rf"{_NAME}*\{{schema\}}{_NAME}*\{{table\}}{_NAME}*")
_UNSAFE = re.compile(r"[^a-zA-Z0-9._\-]")
_MAX_TOPIC_BYTES = 249


class TopicDispatcher:
    def __init__(self, expression: str, default_topic: str) -> None:
        if expression and not _EXPRESSION.fullmatch(expression):
            raise ConfigError(
                f"invalid topic expression {expression!r}: use letters, digits, `._-` and at"
                " most one {schema} followed by at most one {table}"
            )
        self.expression = expression
        self.static = default_topic if not expression else None
        if expression and _STATIC.fullmatch(expression):
            self.static = expression

    def topic(self, schema: str, table: str) -> str:
        if self.static is not None:
            return self.static
        return substitute(self.expression, schema, table)


def is_static(expression: str) -> bool:
    """`IsHardCode`: the rule names one topic (or, empty, the sink URI's)."""
    return not expression or _STATIC.fullmatch(expression) is not None


def check_for_avro(expression: str) -> None:
    """`Expression.ValidateForAvro`, which TiCDC applies to a rule's topic expression (not
    to a fixed topic name) when the protocol is avro."""
    if not is_static(expression) and not _AVRO_EXPRESSION.fullmatch(expression):
        raise ConfigError(
            f"invalid topic expression {expression!r}: topic rule for Avro must contain"
            " {schema} and {table} (ErrKafkaInvalidTopicExpression)"
        )


def substitute(expression: str, schema: str, table: str) -> str:
    """`Expression.Substitute`: the topic for one table."""
    topic = expression.replace("{schema}", _UNSAFE.sub("_", schema)).replace(
        "{table}", _UNSAFE.sub("_", table)
    )
    if len(topic) > _MAX_TOPIC_BYTES:  # all ASCII by now
        topic = topic[:_MAX_TOPIC_BYTES]
    return {".": "_", "..": "__"}.get(topic, topic)
