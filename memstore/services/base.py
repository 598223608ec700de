"""What every service is: its collaborators, given by keyword and fixed once built."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, dataclass_transform

from memstore.db.unit import Database

__all__ = ["Service"]


@dataclass_transform(kw_only_default=True, frozen_default=True)
@dataclass(frozen=True, kw_only=True, eq=False)
class Service:
    """Base of the services: each subclass is a frozen, keyword-only dataclass of its
    collaborators (``db`` here, the rest declared as fields), compared by identity."""

    db: Database

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        dataclass(frozen=True, kw_only=True, eq=False)(cls)
