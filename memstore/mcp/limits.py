"""How many ``subscriptions/listen`` streams a server holds open (plain Python, no MCP SDK).

Each stream holds a watch (one change-stream consumer) until its client leaves:
a bound for the server, and a smaller one per tenant so that no tenant can take
every stream and lock the others out. The ``memstore mcp`` command reads these
defaults before it loads the SDK.
"""

from __future__ import annotations

__all__ = ["MAX_LISTEN_STREAMS", "MAX_LISTEN_STREAMS_PER_TENANT"]

MAX_LISTEN_STREAMS = 256
MAX_LISTEN_STREAMS_PER_TENANT = 32
