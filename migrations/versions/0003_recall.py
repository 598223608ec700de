"""embeddings and full-text search for semantic and hybrid recall

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22

Reserved slot in the revision chain; its issue fills it in.
"""

from collections.abc import Sequence

revision: str = "0003"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
