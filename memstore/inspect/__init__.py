"""``memstore inspect``: a local, read-only web page over one store.

Needs the ``inspect`` extra (Starlette, Jinja2, uvicorn); nothing here is
imported by ``import memstore`` or by the other CLI commands.
"""

from __future__ import annotations

__all__: list[str] = []
