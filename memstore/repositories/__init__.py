"""Async repositories: each takes an AsyncSession; the caller owns the transaction."""

from memstore.repositories.blocks import BlockRepository
from memstore.repositories.episodes import EpisodeRepository
from memstore.repositories.facts import FactRepository
from memstore.repositories.tenants import TenantRepository

__all__ = ["BlockRepository", "EpisodeRepository", "FactRepository", "TenantRepository"]
