"""``memstore mcp``: memstore as a Model Context Protocol server (extra ``memstore[mcp]``).

``memstore.mcp.tools`` and ``memstore.mcp.gate`` are plain Python;
``memstore.mcp.server`` imports the ``mcp`` SDK and is only loaded by the
``memstore mcp`` command, so ``import memstore`` never needs the extra.
"""

__all__: list[str] = []
