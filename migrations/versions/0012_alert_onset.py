"""alerts: the onset of an alert's evidence (time and step), as its rule reported it

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-06 10:00:00

Time to detect runs from the onset; alerts written before this revision have none (the report falls
back to when the condition first held).
"""

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("alerts") as batch:
        batch.add_column(sa.Column("onset_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("onset_step", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("alerts") as batch:
        batch.drop_column("onset_step")
        batch.drop_column("onset_at")
