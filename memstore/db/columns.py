"""Column declarations repeated across the models, declared once.

``TenantId`` is the leading primary-key column of every tenant table (rows of a
tenant sit together, and every statement filters on it). Timestamps need no
declaration of their own: :class:`~memstore.db.base.Base` maps ``datetime`` to
:class:`~memstore.db.types.UTCDateTime`, nullable exactly when the annotation
says ``| None``.
"""

from __future__ import annotations

from typing import Annotated

from sqlalchemy import String
from sqlalchemy.orm import mapped_column

__all__ = ["TENANT_ID_LENGTH", "TenantId"]

TENANT_ID_LENGTH = 255

TenantId = Annotated[str, mapped_column(String(TENANT_ID_LENGTH), primary_key=True)]
