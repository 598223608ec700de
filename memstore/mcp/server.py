"""The MCP server behind ``memstore mcp`` (needs the ``mcp`` extra).

One low-level ``mcp.server.Server`` whose handlers run the memstore tool layer
(:func:`memstore.mcp.tools.call_mcp_tool`) and expose the tenant's working
blocks and threads as ``memstore://blocks/{name}`` and
``memstore://threads/{thread_id}`` resources (:mod:`memstore.mcp.resources`),
with change subscriptions (:mod:`memstore.mcp.subscribe`). Which tenant a
request acts as comes from a resolver fixed at start-up, never from tool
arguments: the ``--user-id`` over stdio, the allow-listed ``X-Memstore-User``
header over HTTP.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext

from memstore.core.model_spec import ModelSpec
from memstore.core.tenancy import storage_user_id
from memstore.embeddings.base import Embedder
from memstore.errors import MemstoreError
from memstore.mcp.gate import PostOnly, TenantGate, tenant_from_scope
from memstore.mcp.limits import MAX_LISTEN_STREAMS, MAX_LISTEN_STREAMS_PER_TENANT
from memstore.mcp.resources import (
    BLOCK_URI_PREFIX,
    TEMPLATES,
    THREAD_URI_PREFIX,
    read_resource_text,
)
from memstore.mcp.resources import list_resources as tenant_resources
from memstore.mcp.subscribe import ListenStreams, SessionSubscriptions, invalid_params
from memstore.mcp.tools import call_mcp_tool, mcp_tool_definitions
from memstore.rerankers.base import Reranker
from memstore.store import MemoryStore
from memstore.tenant import TenantMemory

__all__ = [
    "BLOCK_URI_PREFIX",
    "THREAD_URI_PREFIX",
    "TenantResolver",
    "build_server",
    "serve_http",
    "serve_stdio",
]

MCP_PATH = "/mcp"
TenantResolver = Callable[[ServerRequestContext[Any, Any]], str]
_INSTRUCTIONS = (
    "Long-term memory of the current user. Call get_context at the start of a turn, "
    "search_memory / load_memory to look things up, remember after a turn and "
    "remember_fact for durable facts. The user's pinned working blocks are resources "
    "under memstore://blocks/ and their threads under memstore://threads/; subscribe to "
    "one to be told when it changes."
)


def _version() -> str:
    try:
        return version("memstore")
    except PackageNotFoundError:  # running from a source tree that is not installed
        return "0"


def _tool_error(exc: MemstoreError) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=f"{type(exc).__name__}: {exc}")],
        is_error=True,
    )


def build_server(
    store: MemoryStore,
    tenant: TenantResolver,
    *,
    sessions: SessionSubscriptions | None = None,
    max_listen_streams: int = MAX_LISTEN_STREAMS,
    max_listen_streams_per_tenant: int = MAX_LISTEN_STREAMS_PER_TENANT,
) -> Server[Any]:
    """The MCP server for ``store``; ``tenant(ctx)`` names each request's tenant.

    ``subscriptions/listen`` is always served (at most ``max_listen_streams``
    streams at once, ``max_listen_streams_per_tenant`` of one tenant);
    ``resources/subscribe`` only with ``sessions`` (a transport whose connection
    outlives a request).
    """

    def memory(ctx: ServerRequestContext[Any, Any]) -> TenantMemory:
        # One tenant per request: the resolver names it (TenantRequired if it names none).
        return store.tenant(tenant(ctx))

    tools = [
        types.Tool(name=d["name"], description=d["description"], input_schema=d["input_schema"])
        for d in mcp_tool_definitions()
    ]

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        try:
            result = await call_mcp_tool(memory(ctx), params.name, params.arguments or {})
        except MemstoreError as exc:
            # A tool error the model can read and act on, not a protocol failure.
            return _tool_error(exc)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps(result))],
            structured_content=result,
        )

    async def list_resources(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        try:
            listed = await tenant_resources(memory(ctx))
        except MemstoreError as exc:
            raise invalid_params(exc) from None
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    uri=r.uri, name=r.name, mime_type=r.mime_type, description=r.description
                )
                for r in listed
            ]
        )

    async def list_templates(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    uri_template=t.uri,
                    name=t.name,
                    mime_type=t.mime_type,
                    description=t.description,
                )
                for t in TEMPLATES
            ]
        )

    async def read_resource(
        ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        try:
            mime_type, text = await read_resource_text(memory(ctx), uri)
        except MemstoreError as exc:
            raise invalid_params(exc) from None
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, mime_type=mime_type, text=text)]
        )

    return Server(
        "memstore",
        version=_version(),
        instructions=_INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
        on_subscribe_resource=sessions.subscribe if sessions is not None else None,
        on_unsubscribe_resource=sessions.unsubscribe if sessions is not None else None,
        on_subscriptions_listen=ListenStreams(
            store,
            tenant,
            max_streams=max_listen_streams,
            max_per_tenant=max_listen_streams_per_tenant,
        ),
    )


async def serve_stdio(
    url: str | None,
    user_id: str | None,
    *,
    embedder: Embedder | ModelSpec | None = None,
    reranker: Reranker | ModelSpec | None = None,
) -> None:
    """Serve one client over stdin/stdout as tenant ``user_id`` until stdin closes.

    ``embedder`` and ``reranker`` as for :meth:`MemoryStore.open`.
    """
    from mcp.server.stdio import stdio_server

    user = storage_user_id(user_id)
    # Serves an existing store: `memstore migrate` creates and upgrades schemas.
    async with MemoryStore.open(
        url, embedder=embedder, reranker=reranker, auto_migrate=False
    ) as store:
        async with _session_subscriptions(store, lambda ctx: user) as sessions:
            server = build_server(store, lambda ctx: user, sessions=sessions)
            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())


@asynccontextmanager
async def _session_subscriptions(
    store: MemoryStore, tenant: TenantResolver
) -> AsyncIterator[SessionSubscriptions]:
    sessions = SessionSubscriptions(store, tenant)
    try:
        yield sessions
    finally:
        await sessions.aclose()


async def serve_http(
    url: str | None,
    *,
    host: str,
    port: int,
    allowed_users: Iterable[str],
    token: str | None,
    on_ready: Callable[[], None] | None = None,
    max_listen_streams: int = MAX_LISTEN_STREAMS,
    max_listen_streams_per_tenant: int = MAX_LISTEN_STREAMS_PER_TENANT,
    embedder: Embedder | ModelSpec | None = None,
    reranker: Reranker | ModelSpec | None = None,
) -> None:
    """Serve streamable HTTP at ``http://host:port/mcp`` until SIGINT/SIGTERM.

    ``embedder`` and ``reranker`` as for :meth:`MemoryStore.open`.
    """
    import uvicorn

    allowed = frozenset(allowed_users)
    # Validate the allow-list, token and bind address before touching the database.
    TenantGate(_unused_app, allowed_users=allowed, token=token, host=host)
    async with MemoryStore.open(
        url, embedder=embedder, reranker=reranker, auto_migrate=False
    ) as store:

        def tenant(ctx: ServerRequestContext[Any, Any]) -> str:
            # The gate decoded and checked the header; never decode it a second way here.
            scope = ctx.request.scope if ctx.request is not None else None
            return tenant_from_scope(scope, allowed)

        server = build_server(
            store,
            tenant,
            max_listen_streams=max_listen_streams,
            max_listen_streams_per_tenant=max_listen_streams_per_tenant,
        )
        # Stateless: every request is authenticated and resolved on its own, so no
        # session outlives the header that opened it.
        app = server.streamable_http_app(
            streamable_http_path=MCP_PATH, stateless_http=True, host=host
        )
        gated = TenantGate(
            PostOnly(app, path=MCP_PATH), allowed_users=allowed, token=token, host=host
        )
        config = uvicorn.Config(gated, host=host, port=port, log_level="warning", lifespan="on")
        http = uvicorn.Server(config)
        if on_ready is not None:
            on_ready()
        await http.serve()


async def _unused_app(scope: Any, receive: Any, send: Any) -> None:
    raise AssertionError("validation-only gate")  # pragma: no cover
