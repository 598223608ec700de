"""Resource subscriptions of ``memstore mcp``: ``notifications/resources/updated`` on change.

Two wires, one source. Both are fed by :class:`memstore.mcp.watch.TenantWatch`,
which follows the tenant's change stream (``store.changes``) and so sees
changes committed by any process on the database, and both only ever watch the
tenant the server fixed for the request (``--user-id``, or the allow-listed
``X-Memstore-User``): a session learns nothing about another tenant's
resources, not even that they changed, even under the same URI.

- Handshake-era clients (``initialize``): ``resources/subscribe`` and
  ``resources/unsubscribe``; updates go out on the connection. Served where a
  connection outlives a request (stdio); the stateless HTTP transport has no
  server-to-client stream, so there the capability is not advertised.
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
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import SUBSCRIPTION_ID_META_KEY
from mcp_types.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST

from memstore.errors import MemstoreError
from memstore.mcp.resources import ResourceRef, parse_uri
from memstore.mcp.watch import TenantWatch, touched
from memstore.store import MemoryStore

__all__ = ["MAX_LISTEN_STREAMS", "ListenStreams", "SessionSubscriptions"]

logger = logging.getLogger(__name__)

# Each stream holds a watch (one change-stream consumer) until its client leaves.
MAX_LISTEN_STREAMS = 256
Tenant = Callable[[ServerRequestContext[Any, Any]], str | None]


def _invalid(exc: MemstoreError) -> MCPError:
    return MCPError(INVALID_PARAMS, f"{type(exc).__name__}: {exc}")


def _ref(uri: str) -> ResourceRef:
    try:
        return parse_uri(uri)
    except MemstoreError as exc:
        raise _invalid(exc) from None


def _user(tenant: Tenant, ctx: ServerRequestContext[Any, Any]) -> str | None:
    try:
        return tenant(ctx)
    except MemstoreError as exc:
        raise _invalid(exc) from None


@dataclass
class _Session:
    user: str | None
    session: ServerSession
    uris: dict[str, ResourceRef] = field(default_factory=dict)
    task: asyncio.Task[None] | None = None


class SessionSubscriptions:
    """``resources/subscribe`` / ``unsubscribe``: per connection, one watch for all its URIs."""

    def __init__(self, store: MemoryStore, tenant: Tenant) -> None:
        self._store = store
        self._tenant = tenant
        self._sessions: dict[int, _Session] = {}

    async def subscribe(
        self, ctx: ServerRequestContext[Any, Any], params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        uri = str(params.uri)
        ref = _ref(uri)
        user = _user(self._tenant, ctx)
        key = id(ctx.session)
        state = self._sessions.get(key)
        if state is None or state.user != user:
            if state is not None:
                await self._stop(key)
            state = self._sessions[key] = _Session(user=user, session=ctx.session)
        state.uris[uri] = ref
        if state.task is None or state.task.done():
            ready = asyncio.get_running_loop().create_future()
            state.task = asyncio.create_task(self._forward(key, state, ready))
            await ready  # listening before the client is told it is subscribed
        return types.EmptyResult()

    async def unsubscribe(
        self, ctx: ServerRequestContext[Any, Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        uri = str(params.uri)
        _ref(uri)
        key = id(ctx.session)
        state = self._sessions.get(key)
        if state is not None:
            state.uris.pop(uri, None)
            if not state.uris:
                await self._stop(key)
        return types.EmptyResult()

    async def _forward(self, key: int, state: _Session, ready: asyncio.Future[None]) -> None:
        try:
            async with TenantWatch(self._store, state.user) as changes:
                ready.set_result(None)
                async for change in changes:
                    for uri in touched(state.uris, change):
                        await state.session.send_resource_updated(uri)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the connection is gone, or the watch failed: end it
            logger.info("resource subscription of a session ended: %r", exc)
            if not ready.done():
                ready.set_exception(
                    MCPError(INTERNAL_ERROR, f"cannot watch for changes: {type(exc).__name__}")
                )
        finally:
            if self._sessions.get(key) is state:
                del self._sessions[key]

    async def _stop(self, key: int) -> None:
        state = self._sessions.pop(key, None)
        if state is not None and state.task is not None:
            state.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await state.task

    async def aclose(self) -> None:
        """Stop every watch (the server is shutting down)."""
        for key in list(self._sessions):
            await self._stop(key)


class ListenStreams:
    """``subscriptions/listen``: one watch per stream, for as long as the request is open."""

    def __init__(
        self, store: MemoryStore, tenant: Tenant, *, max_streams: int = MAX_LISTEN_STREAMS
    ) -> None:
        self._store = store
        self._tenant = tenant
        self._max_streams = max_streams
        self.open_streams = 0

    async def __call__(
        self,
        ctx: ServerRequestContext[Any, Any],
        params: types.SubscriptionsListenRequestParams,
    ) -> types.SubscriptionsListenResult:
        subscription_id = ctx.request_id
        if subscription_id is None:
            raise MCPError(INVALID_REQUEST, "subscriptions/listen requires a request id")
        user = _user(self._tenant, ctx)
        # The memstore:// URIs are honoured; list-changed flags and other URIs are
        # not (this server publishes none of those events), so the ack leaves them out.
        requested = params.notifications.resource_subscriptions or []
        uris = {uri: _ref(uri) for uri in requested}
        if self.open_streams >= self._max_streams:
            raise MCPError(INTERNAL_ERROR, "subscription limit reached")
        meta: dict[str, Any] = {SUBSCRIPTION_ID_META_KEY: subscription_id}
        honored = types.SubscriptionFilter(resource_subscriptions=list(uris) or None)
        self.open_streams += 1
        try:
            async with TenantWatch(self._store, user) as changes:
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
            self.open_streams -= 1
        # Only reached when nothing was honoured: an immediate graceful close.
        return types.SubscriptionsListenResult(_meta=meta)
