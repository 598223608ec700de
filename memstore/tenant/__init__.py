"""Tenant-bound handles: ``store.tenant("alice")`` and its ``threads``.

A :class:`TenantMemory` carries every tenant-scoped method of the store without a
``user_id`` parameter: code working for one user names the tenant once, where it
opens the handle, and cannot fall into another tenant by forgetting an argument.
"""

from memstore.tenant._generated import TenantMemory, TenantThreads

__all__ = ["TenantMemory", "TenantThreads"]
