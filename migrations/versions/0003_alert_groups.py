"""alert groups; notifications belong to a group

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-02 14:10:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "alert_groups",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("group_key", sa.String(length=200), nullable=False),
        sa.Column("receiver", sa.String(length=128), nullable=False),
        sa.Column("labels", sa.JSON(), nullable=False),
        sa.Column("timing", sa.JSON(), nullable=False),
        sa.Column("root_ref", sa.String(length=200), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_sent_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_alert_groups")),
        sa.UniqueConstraint("group_key", name=op.f("uq_alert_groups_group_key")),
    )
    with op.batch_alter_table("notifications") as batch:
        batch.add_column(sa.Column("group_id", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("kind", sa.String(length=16), nullable=False, server_default="change"))
        batch.add_column(sa.Column("merged_into", sa.Integer(), nullable=True))
        batch.create_index(batch.f("ix_notifications_group_id"), ["group_id"], unique=False)
        batch.create_foreign_key(batch.f("fk_notifications_group_id_alert_groups"), "alert_groups",
                                 ["group_id"], ["id"], ondelete="CASCADE")


def downgrade() -> None:
    with op.batch_alter_table("notifications") as batch:
        batch.drop_constraint(batch.f("fk_notifications_group_id_alert_groups"), type_="foreignkey")
        batch.drop_index(batch.f("ix_notifications_group_id"))
        batch.drop_column("merged_into")
        batch.drop_column("kind")
        batch.drop_column("group_id")
    op.drop_table("alert_groups")
