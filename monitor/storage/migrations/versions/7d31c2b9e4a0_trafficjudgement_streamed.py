"""trafficjudgement.streamed: verdicts judged in memory at ingest wait for the leader's streams

Revision ID: 7d31c2b9e4a0
Revises: 100f9ac5f06c
Create Date: 2026-11-30 22:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op


revision: str = "7d31c2b9e4a0"
down_revision: str | None = "100f9ac5f06c"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("trafficjudgement", schema=None) as batch_op:
        batch_op.add_column(sa.Column("streamed", sa.Boolean(), server_default=sa.true(), nullable=False))
        batch_op.create_index(batch_op.f("ix_trafficjudgement_streamed"), ["streamed"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("trafficjudgement", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_trafficjudgement_streamed"))
        batch_op.drop_column("streamed")
