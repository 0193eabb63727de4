"""run stats, alert acknowledgements and silenced-by

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-02 13:55:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("stats", sa.JSON(), nullable=False, server_default="{}"))
    with op.batch_alter_table("alerts") as batch:
        batch.add_column(sa.Column("acked_by", sa.String(length=200), nullable=True))
        batch.add_column(sa.Column("acked_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("silenced_by", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("alerts") as batch:
        batch.drop_column("silenced_by")
        batch.drop_column("acked_at")
        batch.drop_column("acked_by")
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("stats")
