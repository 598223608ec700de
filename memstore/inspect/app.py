"""The inspector's ASGI app: Starlette routes over one read-only store."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any
from urllib.parse import quote

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from memstore.core.tenancy import ANONYMOUS, public_user_id, storage_user_id
from memstore.errors import InvalidInput, MemstoreError, Unavailable
from memstore.inspect.auth import inspector_gate
from memstore.inspect.views import AXIS_WIDTH, build_tenant_view
from memstore.store import MemoryStore

__all__ = ["DEFAULT_MAX_ROWS", "create_app"]

_HERE = Path(__file__).parent
_SECURITY_HEADERS = {
    # Everything is served from here; no inline script, nothing from elsewhere.
    "content-security-policy": "default-src 'none'; script-src 'self'; style-src 'self'; "
    "img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}
_SEARCH_LIMIT = 10
# Rows per table a page reads (newest first): keeps a large tenant's page usable.
DEFAULT_MAX_ROWS = 2000


def _environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(_HERE / "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["tenant_path"] = lambda stored: "/t/" + quote(stored, safe="")
    env.filters["fmt_time"] = lambda v: "" if v is None else str(v)[:19].replace("T", " ")
    env.globals["axis_width"] = AXIS_WIDTH
    return env


def _tenant_from_path(raw: str) -> str:
    """The stored tenant id named in the URL; InvalidInput for a malformed one."""
    return storage_user_id(raw)


def _tenant_label(stored: str) -> str:
    return "(anonymous)" if stored == ANONYMOUS else public_user_id(stored)


def create_app(
    store: MemoryStore, *, token: str | None = None, max_rows: int = DEFAULT_MAX_ROWS
) -> Any:
    """The app over an open ``store`` (which the caller closes after serving)."""
    env = _environment()

    def render(name: str, status: int = 200, **context: Any) -> HTMLResponse:
        html = env.get_template(name).render(**context)
        return HTMLResponse(html, status_code=status, headers=_SECURITY_HEADERS)

    async def index(request: Request) -> Response:
        tenants = await store.list_tenants_cross_tenant()
        return render("index.html", tenants=[(s, _tenant_label(s)) for s in tenants])

    async def tenant(request: Request) -> Response:
        try:
            stored = _tenant_from_path(request.path_params["tenant"])
        except InvalidInput as error:
            return render("error.html", status=400, message=str(error))
        user_id = public_user_id(stored)
        query = request.query_params.get("q", "")
        recency_raw = request.query_params.get("recency", "0") or "0"
        hits: list[Any] = []
        search_error = None
        with store.reads_unrecorded():
            dump = await store.snapshot(user_id=user_id, max_rows_per_table=max_rows)
            if query.strip():
                try:
                    recency = float(recency_raw)
                    if not math.isfinite(recency):
                        raise ValueError(recency_raw)
                except ValueError:
                    search_error = f"recency must be a number, got {recency_raw!r}"
                else:
                    try:
                        hits = await store.recall_scored(
                            query,
                            user_id=user_id,
                            limit=_SEARCH_LIMIT,
                            recency_weight=recency,
                        )
                    except MemstoreError as error:
                        search_error = f"{type(error).__name__}: {error}"
        view = build_tenant_view(dump["tables"], store.now())
        return render(
            "tenant.html",
            tenant=stored,
            label=_tenant_label(stored),
            view=view,
            query=query,
            recency=recency_raw,
            hits=hits,
            search_error=search_error,
            taken_at=dump["taken_at"],
            totals=dump["totals"],
            truncated=any(len(dump["tables"][t]) < n for t, n in dump["totals"].items()),
        )

    async def failed(request: Request, error: Exception) -> Response:
        # E.g. Unavailable: say what went wrong instead of a bare 500.
        status = 503 if isinstance(error, Unavailable) else 500
        return render("error.html", status=status, message=f"{type(error).__name__}: {error}")

    app = Starlette(
        exception_handlers={MemstoreError: failed},
        routes=[
            Route("/", index),
            Route("/t/{tenant:path}", tenant),
            Mount("/static", StaticFiles(directory=_HERE / "static"), name="static"),
        ],
    )
    return inspector_gate(app, token=token)
