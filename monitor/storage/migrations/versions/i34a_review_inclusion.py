"""reviewitem.inclusion_probability: the known chance each reviewed answer was drawn with

Revision ID: i34a_review_inclusion
Revises: 7d31c2b9e4a0
Create Date: 2026-12-02 06:10:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op


revision: str = "i34a_review_inclusion"
down_revision: str | None = "7d31c2b9e4a0"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("reviewitem", schema=None) as batch_op:
        batch_op.add_column(sa.Column("inclusion_probability", sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("reviewitem", schema=None) as batch_op:
        batch_op.drop_column("inclusion_probability")
