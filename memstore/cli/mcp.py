"""serve memory tools and working blocks over the Model Context Protocol

An MCP server: tools search_memory, load_memory, remember_fact, remember, get_context
and resources memstore://blocks/{name}. Over stdio it acts as one tenant (--user-id or
$MEMSTORE_USER_ID); over HTTP each request names its tenant in the X-Memstore-User
header, which must be on the --allow-user list.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from typing import Any

# Thin wrapper: the ``mcp`` SDK is imported only when this command runs.
from memstore.cli.command import add_command
from memstore.cli.embedder_args import (
    add_model_arguments,
    reranker_spec_from_args,
    store_embedder_from_args,
)
from memstore.cli.user_args import add_user_argument
from memstore.mcp.limits import MAX_LISTEN_STREAMS, MAX_LISTEN_STREAMS_PER_TENANT
from memstore.schema.database import require_existing_database
from memstore.web.asgi import is_loopback

__all__ = ["register"]


def register(subparsers: Any) -> None:
    mcp = add_command(subparsers, "mcp", run, __doc__, extras=("mcp",))
    mcp.add_argument(
        "--transport",
        choices=["stdio", "http"],
        default="stdio",
        help="stdio: one client on stdin/stdout as one tenant (default); http: "
        "streamable HTTP at http://HOST:PORT/mcp for the --allow-user tenants",
    )
    add_user_argument(
        mcp,
        default=os.environ.get("MEMSTORE_USER_ID"),
        help="stdio: the tenant to act as (default: $MEMSTORE_USER_ID)",
    )
    mcp.add_argument("--host", default="127.0.0.1", help="http: address to bind (127.0.0.1)")
    mcp.add_argument("--port", type=int, default=8765, help="http: port (8765)")
    mcp.add_argument(
        "--allow-user",
        action="append",
        default=[],
        metavar="ID",
        help="http: a tenant clients may name in X-Memstore-User (repeatable)",
    )
    mcp.add_argument(
        "--max-listen-streams",
        type=int,
        default=MAX_LISTEN_STREAMS,
        metavar="N",
        help=f"http: listen streams open at once, all tenants ({MAX_LISTEN_STREAMS})",
    )
    mcp.add_argument(
        "--max-listen-streams-per-tenant",
        type=int,
        default=MAX_LISTEN_STREAMS_PER_TENANT,
        metavar="N",
        help="http: listen streams one tenant may hold open, so that no tenant "
        f"locks the others out ({MAX_LISTEN_STREAMS_PER_TENANT})",
    )
    mcp.add_argument(
        "--token",
        default=os.environ.get("MEMSTORE_MCP_TOKEN"),
        help="http: bearer token clients must send (default: "
        "$MEMSTORE_MCP_TOKEN); required unless --host is loopback",
    )
    add_model_arguments(
        mcp,
        purpose="embedder of the tools' queries and remembered texts; must be the database's",
    )


def _usage_error(message: str) -> int:
    print(f"memstore mcp: {message}", file=sys.stderr)
    return 2


def run(args: argparse.Namespace) -> int:
    if args.transport == "stdio":
        if args.allow_user:
            return _usage_error("--allow-user is for --transport http; over stdio use --user-id")
        if not args.user_id:
            return _usage_error("give the tenant to act as: --user-id ID or $MEMSTORE_USER_ID")
    else:
        if not args.allow_user:
            return _usage_error("--transport http needs at least one --allow-user ID")
        if not is_loopback(args.host) and not args.token:
            return _usage_error(
                f"refusing to serve on non-loopback host {args.host!r} without a bearer "
                "token: pass --token or set $MEMSTORE_MCP_TOKEN"
            )
        if not 0 <= args.port <= 65535:
            return _usage_error("--port must be between 0 and 65535")
        if not 1 <= args.max_listen_streams_per_tenant <= args.max_listen_streams:
            return _usage_error(
                "--max-listen-streams-per-tenant must be between 1 and --max-listen-streams"
            )
    require_existing_database(args.url)  # never create one behind a mistyped path
    from memstore.mcp.server import serve_http, serve_stdio

    # The embedder is built here, the reranker by open before the engine: a model that
    # is not there fails in one line, before anything is served.
    embedder, reranker = store_embedder_from_args(args), reranker_spec_from_args(args)
    if args.transport == "stdio":
        asyncio.run(serve_stdio(args.url, args.user_id, embedder=embedder, reranker=reranker))
        return 0

    def ready() -> None:
        users = ", ".join(sorted(args.allow_user))
        print(
            f"memstore mcp: starting http://{args.host}:{args.port}/mcp for {users}",
            file=sys.stderr,
            flush=True,
        )

    asyncio.run(
        serve_http(
            args.url,
            host=args.host,
            port=args.port,
            allowed_users=args.allow_user,
            token=args.token,
            on_ready=ready,
            max_listen_streams=args.max_listen_streams,
            max_listen_streams_per_tenant=args.max_listen_streams_per_tenant,
            embedder=embedder,
            reranker=reranker,
        )
    )
    return 0
