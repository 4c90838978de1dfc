"""Probes and metrics: /livez (the process answers), /readyz (the clusters are up and
the service takes work), /metrics (Prometheus)."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse

from ticdc_sim.service.metrics import CONTENT_TYPE
from ticdc_sim.service.state import BEARER, state_of

router = APIRouter(tags=["operations"])


@router.get("/livez")
async def livez() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/readyz", responses={503: {"description": "starting or stopping"}})
async def readyz(request: Request) -> Response:
    if not state_of(request).ready:
        return JSONResponse({"status": "not ready"}, status_code=503)
    return JSONResponse({"status": "ok"})


@router.get("/metrics", response_class=Response, dependencies=BEARER)
async def metrics(request: Request) -> Response:
    return Response(state_of(request).metrics.render(), media_type=CONTENT_TYPE)
