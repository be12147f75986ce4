"""detectorstate recovery detector, burnin reference stages

Revision ID: c51e0a7d3b92
Revises: 0a13f094dc64
Create Date: 2026-11-30 19:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel  # noqa: F401  (autogenerate writes sqlmodel.sql.sqltypes.AutoString)
from alembic import op


revision: str = "c51e0a7d3b92"
down_revision: str | None = "0a13f094dc64"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("detectorstate", schema=None) as batch_op:
        batch_op.add_column(sa.Column("recovery", sa.JSON(), nullable=True))
    with op.batch_alter_table("burnin", schema=None) as batch_op:
        batch_op.add_column(sa.Column("reference", sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column("stage", sa.Integer(), server_default="0", nullable=False))
        batch_op.add_column(sa.Column("alpha", sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("burnin", schema=None) as batch_op:
        batch_op.drop_column("alpha")
        batch_op.drop_column("stage")
        batch_op.drop_column("reference")
    with op.batch_alter_table("detectorstate", schema=None) as batch_op:
        batch_op.drop_column("recovery")
