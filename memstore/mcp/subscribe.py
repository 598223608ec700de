"""Resource subscriptions of ``memstore mcp``: ``notifications/resources/updated`` on change.

Two wires, one source. Both are fed by :class:`memstore.mcp.watch.TenantWatch`,
which follows the tenant's change stream (``store.changes``) and so sees
changes committed by any process on the database, and both only ever watch the
tenant the server fixed for the request (``--user-id``, or the allow-listed
``X-Memstore-User``): a session learns nothing about another tenant's
resources, not even that they changed, even under the same URI.

- Handshake-era clients (``initialize``): ``resources/subscribe`` and
  ``resources/unsubscribe``; updates go out on the connection. Served on stdio,
  whose one connection outlives its requests; the stateless HTTP transport has
  no server-to-client stream, so there the capability is not advertised.
- 2026-07-28 clients: ``subscriptions/listen``, whose response *is* the stream
  (stdio, or SSE over stateless HTTP); ending the request unsubscribes. Written
  here rather than with the SDK's ``ListenHandler``, whose bus fans every event
  out to every stream: URIs are per tenant, so that would tell bob that
  alice's ``persona`` block changed.

Either way the watch listens *before* the subscribe answer (or the listen
acknowledgment) is sent, so a change committed after the client has its answer
is never missed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import SUBSCRIPTION_ID_META_KEY
from mcp_types.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST

from memstore.errors import MemstoreError
from memstore.mcp.limits import MAX_LISTEN_STREAMS, MAX_LISTEN_STREAMS_PER_TENANT
from memstore.mcp.resources import ResourceRef, parse_uri
from memstore.mcp.watch import TenantWatch, touched
from memstore.store import MemoryStore

__all__ = [
    "MAX_LISTEN_STREAMS",
    "MAX_LISTEN_STREAMS_PER_TENANT",
    "ListenStreams",
    "SessionSubscriptions",
    "invalid_params",
]

logger = logging.getLogger(__name__)

Tenant = Callable[[ServerRequestContext[Any, Any]], str | None]


def invalid_params(exc: MemstoreError) -> MCPError:
    """A memstore error as the protocol's invalid-params error, named by its class."""
    return MCPError(INVALID_PARAMS, f"{type(exc).__name__}: {exc}")


def _ref(uri: str) -> ResourceRef:
    try:
        return parse_uri(uri)
    except MemstoreError as exc:
        raise invalid_params(exc) from None


def _user(tenant: Tenant, ctx: ServerRequestContext[Any, Any]) -> str | None:
    try:
        return tenant(ctx)
    except MemstoreError as exc:
        raise invalid_params(exc) from None


class SessionSubscriptions:
    """``resources/subscribe`` / ``unsubscribe`` of the one connection of a stdio server.

    The SDK hands each request its own ``ServerSession`` proxy and no public
    handle on the connection behind it, so this object *is* the per-connection
    state: ``serve_stdio`` makes one for its single connection (stdin/stdout).
    One watch serves all the subscribed URIs; it runs while any is subscribed.
    """

    def __init__(self, store: MemoryStore, tenant: Tenant) -> None:
        self._store = store
        self._tenant = tenant
        self._uris: dict[str, ResourceRef] = {}
        self._session: ServerSession | None = None
        self._task: asyncio.Task[None] | None = None

    async def subscribe(
        self, ctx: ServerRequestContext[Any, Any], params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        uri = str(params.uri)
        self._uris[uri] = _ref(uri)
        # Every request's proxy sends on the same connection; keep the latest.
        self._session = ctx.session
        if self._task is None or self._task.done():
            ready = asyncio.get_running_loop().create_future()
            self._task = asyncio.create_task(self._forward(_user(self._tenant, ctx), ready))
            await ready  # listening before the client is told it is subscribed
        return types.EmptyResult()

    async def unsubscribe(
        self, ctx: ServerRequestContext[Any, Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        uri = str(params.uri)
        _ref(uri)
        self._uris.pop(uri, None)
        if not self._uris:
            await self.aclose()
        return types.EmptyResult()

    async def _forward(self, user: str | None, ready: asyncio.Future[None]) -> None:
        try:
            async with TenantWatch(self._store, user) as changes:
                ready.set_result(None)
                async for change in changes:
                    for uri in touched(self._uris, change):
                        if self._session is not None:
                            await self._session.send_resource_updated(uri)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the connection is gone, or the watch failed: end it
            logger.info("resource subscriptions of the connection ended: %r", exc)
            if not ready.done():
                ready.set_exception(
                    MCPError(INTERNAL_ERROR, f"cannot watch for changes: {type(exc).__name__}")
                )

    async def aclose(self) -> None:
        """Stop the watch (no URI left, or the server is shutting down)."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


@dataclass(eq=False)
class ListenStreams:
    """``subscriptions/listen``: one watch per stream, for as long as the request is open.

    At most ``max_streams`` streams are open at once, at most ``max_per_tenant``
    of them for one tenant. Over stdio the server has one connection, so these
    are that connection's limits; over HTTP every stream is a request of its own,
    and the tenant is what one client can multiply.
    """

    store: MemoryStore
    tenant: Tenant
    _: KW_ONLY
    max_streams: int = MAX_LISTEN_STREAMS
    max_per_tenant: int = MAX_LISTEN_STREAMS_PER_TENANT
    _per_tenant: Counter[str | None] = field(default_factory=Counter, init=False)

    @property
    def open_streams(self) -> int:
        return self._per_tenant.total()

    async def __call__(
        self,
        ctx: ServerRequestContext[Any, Any],
        params: types.SubscriptionsListenRequestParams,
    ) -> types.SubscriptionsListenResult:
        subscription_id = ctx.request_id
        if subscription_id is None:
            raise MCPError(INVALID_REQUEST, "subscriptions/listen requires a request id")
        user = _user(self.tenant, ctx)
        # The memstore:// URIs are honoured; list-changed flags and other URIs are
        # not (this server publishes none of those events), so the ack leaves them out.
        requested = params.notifications.resource_subscriptions or []
        uris = {uri: _ref(uri) for uri in requested}
        if self._per_tenant[user] >= self.max_per_tenant:
            raise MCPError(
                INTERNAL_ERROR,
                f"subscription limit reached: this tenant has {self.max_per_tenant} listen "
                "streams open; close one first",
            )
        if self.open_streams >= self.max_streams:
            raise MCPError(
                INTERNAL_ERROR,
                f"subscription limit reached: the server has {self.max_streams} listen "
                "streams open; retry later",
            )
        meta: dict[str, Any] = {SUBSCRIPTION_ID_META_KEY: subscription_id}
        honored = types.SubscriptionFilter(resource_subscriptions=list(uris) or None)
        self._per_tenant[user] += 1
        try:
            async with TenantWatch(self.store, user) as changes:
                await ctx.session.send_notification(
                    types.SubscriptionsAcknowledgedNotification(
                        params=types.SubscriptionsAcknowledgedNotificationParams(
                            notifications=honored, _meta=meta
                        )
                    ),
                    related_request_id=subscription_id,
                )
                if uris:
                    async for change in changes:
                        for uri in touched(uris, change):
                            await ctx.session.send_notification(
                                types.ResourceUpdatedNotification(
                                    params=types.ResourceUpdatedNotificationParams(
                                        uri=uri, _meta=meta
                                    )
                                ),
                                related_request_id=subscription_id,
                            )
        finally:
            self._per_tenant[user] -= 1
            if not self._per_tenant[user]:
                del self._per_tenant[user]  # no count kept for a tenant gone quiet
        # Nothing honoured (an immediate graceful close), or the feed ended.
        return types.SubscriptionsListenResult(_meta=meta)
