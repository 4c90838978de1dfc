"""The upstream of the checker's tests: an engine that has run a script."""

from __future__ import annotations

from ticdc_sim.generator.sql.engine import Engine, EngineConfig
from ticdc_sim.generator.sql.script import split_script


def run(script: str) -> Engine:
    """An engine (session in `test`) after every statement of `script`."""
    engine = Engine(EngineConfig())
    engine.catalog.current_schema = "test"
    for _ in engine.run(split_script(script.splitlines(keepends=True), "s.sql")):
        pass
    return engine
