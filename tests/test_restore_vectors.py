"""TiCDC's DDL query text, checked against tiflow's own TestAddSpecialComment cases.

Deviation from the upstream inputs: AUTO_RANDOM cases use BIGINT because our catalog rejects
AUTO_RANDOM on INT exactly as TiDB does (upstream only restores, it never executes them).
"""

import json
from pathlib import Path

import pytest

from ticdc_sim.generator.sql.ddl import Catalog
from ticdc_sim.generator.sql.script import parse_statements

VECTORS = json.loads(
    (Path(__file__).parent / "vectors/tiflow_add_special_comment.json").read_text()
)


@pytest.mark.parametrize(("sql", "expected"), VECTORS["cases"])
def test_restored_query_matches_ticdc(sql: str, expected: str) -> None:
    catalog = Catalog(current_schema="test")
    (stmt,) = parse_statements(sql)
    (event,) = catalog.apply(stmt.expression, stmt.text)
    assert event.query == expected
