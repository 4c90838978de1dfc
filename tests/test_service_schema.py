"""schemathesis against the service's OpenAPI document, the app in process: generated
requests to every operation (bounded, seeded), no server error, every answer as documented."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from ticdc_sim.service.app import create_app
from ticdc_sim.service.settings import Settings

schemathesis = pytest.importorskip("schemathesis", reason="schemathesis is not installed")

_DATA = Path(tempfile.mkdtemp(prefix="ticdc-sim-schema-")) / "data"
APP = create_app(Settings(data_dir=_DATA, mysql_port=0, max_body_bytes=64 << 10))
# the tail is an endless event stream: its own test reads it (test_service_e2e)
schema = schemathesis.openapi.from_asgi("/openapi.json", APP).exclude(path_regex=r"/tail$")


@schema.parametrize()
@settings(
    max_examples=25,
    derandomize=True,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    database=None,
)
def test_every_operation_answers_as_documented(case: Any) -> None:
    # not positive_data_acceptance: a schema-valid sink URI or script may still be refused,
    # with a documented 4xx that says why (a URI's grammar is beyond JSON Schema)
    case.call_and_validate(excluded_checks=[schemathesis.checks.positive_data_acceptance])
