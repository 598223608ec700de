"""episodes.passages: a long text's passages, embedded one by one

Recall scores an episode by its best passage as well as by its whole-text
vector, so a query about one paragraph of a long answer finds it (measured in
docs/RECALL.md). Postgres stores them as ``vector[]`` without a width (a
change of embedder width needs no column rewrite; ``memstore reembed``
recomputes them); SQLite as a blob, like ``embedding``. Existing rows get NULL
and are scored by their whole-text vector until re-embedded.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-25
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.types import UserDefinedType

revision: str = "0011"
down_revision: str | Sequence[str] | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


class _VectorArray(UserDefinedType):  # type: ignore[type-arg]
    cache_ok = True

    def get_col_spec(self, **kw: object) -> str:
        return "VECTOR[]"


def upgrade() -> None:
    postgres = op.get_context().dialect.name == "postgresql"
    column_type = _VectorArray() if postgres else sa.LargeBinary()
    with op.batch_alter_table("episodes") as batch:
        batch.add_column(sa.Column("passages", column_type, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("episodes") as batch:
        batch.drop_column("passages")
