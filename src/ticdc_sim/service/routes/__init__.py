"""The service's routes, one module per resource."""

from __future__ import annotations

from fastapi import APIRouter

from ticdc_sim.service.routes import changefeeds, clusters, ops, schema_registry

ROUTERS: list[APIRouter] = [
    changefeeds.router,
    clusters.router,
    ops.router,
    schema_registry.router,
]
