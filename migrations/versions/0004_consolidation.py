"""consolidation claims and state

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22

Reserved slot in the revision chain; its issue fills it in.
"""

from collections.abc import Sequence

revision: str = "0004"
down_revision: str | Sequence[str] | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
