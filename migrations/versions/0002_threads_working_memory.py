"""thread context buffers and scoped working memory

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22

Reserved slot in the revision chain; its issue fills it in.
"""

from collections.abc import Sequence

revision: str = "0002"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
