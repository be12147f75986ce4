"""proberesult: the reader model's reading beside the rules' and the path that decided

Revision ID: i27c_reader
Revises: i31d_incident_parent
Create Date: 2026-12-02 14:25:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "i27c_reader"
down_revision: str | None = "i31d_incident_parent"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("proberesult", schema=None) as batch_op:
        batch_op.add_column(sa.Column("read_path", sa.String(), nullable=True))
        batch_op.add_column(sa.Column("reader_extracted", sa.String(), nullable=True))
        batch_op.add_column(sa.Column("reader_reason", sa.String(), nullable=True))
        batch_op.add_column(sa.Column("reader_agrees", sa.Boolean(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("proberesult", schema=None) as batch_op:
        batch_op.drop_column("reader_agrees")
        batch_op.drop_column("reader_reason")
        batch_op.drop_column("reader_extracted")
        batch_op.drop_column("read_path")
