"""reliability and security (row-level security support)

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-22

Reserved slot in the revision chain; its issue fills it in.
"""

from collections.abc import Sequence

revision: str = "0006"
down_revision: str | Sequence[str] | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
