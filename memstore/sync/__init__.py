"""``SyncMemoryStore``: the MemoryStore API for synchronous code.

Flask views, scripts and notebook cells call the same methods without ``await``.
The store runs on a private event loop in a background thread; each call submits
its coroutine there (``asyncio.run_coroutine_threadsafe``) and waits. So it is
safe from several threads at once (the loop serialises nothing but scheduling;
the database sees concurrent transactions as with the async store) and works
from code that already runs inside an event loop, which ``asyncio.run`` refuses.

The methods are written out, with their types, by ``scripts/gen_sync.py`` from
:class:`MemoryStore`, :class:`ThreadBuffer`, :class:`WorkingMemory` and the tenant
handle (:class:`~memstore.tenant.TenantMemory`, its ``threads``) into
``_generated.py`` and ``_generated_views.py``; tests/test_sync_generated.py fails when
they are stale, so the two APIs cannot drift and type checkers see every signature.
"""

from memstore.sync._generated import SyncMemoryStore
from memstore.sync._generated_views import (
    SyncTenantMemory,
    SyncTenantThreads,
    SyncThreadBuffer,
    SyncWorkingMemory,
)
from memstore.sync._runtime import public_members

__all__ = [
    "SyncMemoryStore",
    "SyncTenantMemory",
    "SyncTenantThreads",
    "SyncThreadBuffer",
    "SyncWorkingMemory",
    "public_members",
]
