"""slack_deliveries: the Slack requests acted on over Socket Mode, claimed once across replicas

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-14 10:00:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "slack_deliveries",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("key", sa.String(length=200), nullable=False),
        sa.Column("envelope_id", sa.String(length=200), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("actor", sa.String(length=200), nullable=False),
        sa.Column("received_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("handled_by", sa.String(length=200), nullable=False),
        sa.Column("reply", sa.JSON(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_slack_deliveries")),
        sa.UniqueConstraint("key", name=op.f("uq_slack_deliveries_key")),
    )
    with op.batch_alter_table("slack_deliveries") as batch:
        batch.create_index(batch.f("ix_slack_deliveries_received_at"), ["received_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("slack_deliveries") as batch:
        batch.drop_index(batch.f("ix_slack_deliveries_received_at"))
    op.drop_table("slack_deliveries")
