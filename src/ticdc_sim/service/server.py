"""`ticdc-sim serve`: the app on uvicorn, the MySQL port in the same event loop, and a
banner saying where everything is."""

from __future__ import annotations

import sys
from typing import Any

import uvicorn

from ticdc_sim.service.app import create_app
from ticdc_sim.service.settings import Settings


def banner(settings: Settings) -> str:
    http = f"http://{settings.host}:{settings.port}"
    lines = [
        "ticdc-sim is serving a simulated TiDB cluster (`default`) with a TiCDC changefeed",
        f"  playground      {http}/",
        f"  API docs        {http}/docs   (TiCDC open API v2 under /api/v2, ours under /sim/v1)",
        f"  changefeed      {settings.default_sink_uri}  (under {settings.data_dir.resolve()})",
        f"  SQL over HTTP   curl -s {http}/sim/v1/clusters/default/sql"
        " --data-binary 'CREATE TABLE t (id INT PRIMARY KEY); INSERT INTO t VALUES (1);'"
        + (" -H 'Authorization: Bearer $TICDC_SIM_TOKEN'" if settings.token else ""),
        f"  messages        curl -s '{http}/sim/v1/clusters/default/changefeeds/default/messages'",
    ]
    if settings.mysql_port:
        lines.append(
            f"  MySQL protocol  mysql -h {settings.host} -P {settings.mysql_port} -u root test"
        )
    return "\n".join(lines)


def run(overrides: dict[str, Any]) -> None:
    settings = Settings(**overrides)
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    app = create_app(settings)
    print(banner(settings), file=sys.stderr, flush=True)
    uvicorn.run(app, host=settings.host, port=settings.port, log_level="warning")
