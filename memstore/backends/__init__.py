"""One package per SQL backend, named as SQLAlchemy names the dialect.

Each holds everything that is that backend's alone (its :class:`Dialect`, connection
set-up and URL handling, change signalling, search statements) and exports the
dialect as ``DIALECT``. :mod:`memstore.dialects` finds a backend here by name; no
other module of memstore imports one.
"""

__all__: list[str] = []
