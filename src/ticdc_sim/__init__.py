"""ticdc-sim: a simulated TiCDC producer and CDC test-data generator.

The Python API (`ticdc_sim.api`): `Simulator` (an upstream cluster and its changefeeds, in
process), `generate` (a workload spec run in process), the `Record`s they give and the
`SQLError` a failing statement raises; the consumer checker's `Diff` and `NotReplicated`
(`Simulator.diff`, `Simulator.assert_replicated`). Importing this package loads none of it (nor
pyspark, fastapi or confluent_kafka) until a name is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = [
    "Changefeed",
    "ChangefeedFailed",
    "Diff",
    "NotReplicated",
    "Record",
    "Result",
    "SQLError",
    "SimError",
    "Simulator",
    "generate",
]

# where each public name lives, imported on first use
_EXPORTS = {
    "Changefeed": "ticdc_sim.api",
    "ChangefeedFailed": "ticdc_sim.api",
    "Result": "ticdc_sim.api",
    "Simulator": "ticdc_sim.api",
    "generate": "ticdc_sim.api",
    "Diff": "ticdc_sim.check",
    "NotReplicated": "ticdc_sim.check",
    "Record": "ticdc_sim.sinks",
    "SQLError": "ticdc_sim.errors",
    "SimError": "ticdc_sim.errors",
}

if TYPE_CHECKING:
    from ticdc_sim.api import Changefeed, ChangefeedFailed, Result, Simulator, generate
    from ticdc_sim.check import Diff, NotReplicated
    from ticdc_sim.errors import SimError, SQLError
    from ticdc_sim.sinks import Record


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ticdc_sim' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # once: the next lookup does not come here
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
