"""The service's routes, one module per resource."""

from __future__ import annotations

from fastapi import APIRouter

from ticdc_sim.service.routes.changefeeds import router as changefeeds
from ticdc_sim.service.routes.clusters import router as clusters
from ticdc_sim.service.routes.ops import router as ops

ROUTERS: list[APIRouter] = [changefeeds, clusters, ops]
