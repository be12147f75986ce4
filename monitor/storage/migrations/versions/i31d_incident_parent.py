"""incident.parent_id: the model-change incident an incident followed (one page for a change and its aftermath)

Incidents open at upgrade keep no parent; correlation applies to incidents opened afterwards.

Revision ID: i31d_incident_parent
Revises: i34a_review_inclusion
Create Date: 2026-12-02 14:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op


revision: str = "i31d_incident_parent"
down_revision: str | None = "i34a_review_inclusion"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("incident", schema=None) as batch_op:
        batch_op.add_column(sa.Column("parent_id", sa.Integer(), nullable=True))
        batch_op.create_index(batch_op.f("ix_incident_parent_id"), ["parent_id"], unique=False)
        batch_op.create_foreign_key("fk_incident_parent_id_incident", "incident", ["parent_id"], ["id"])


def downgrade() -> None:
    with op.batch_alter_table("incident", schema=None) as batch_op:
        batch_op.drop_constraint("fk_incident_parent_id_incident", type_="foreignkey")
        batch_op.drop_index(batch_op.f("ix_incident_parent_id"))
        batch_op.drop_column("parent_id")
