"""alert groups close and reopen (episodes, members); detector snapshots per run

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-03 10:00:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("alert_groups") as batch:
        batch.add_column(sa.Column("open_key", sa.String(length=200), nullable=True))
        batch.add_column(sa.Column("closed_at", sa.DateTime(timezone=True), nullable=True))
        batch.drop_constraint(batch.f("uq_alert_groups_group_key"), type_="unique")
        batch.create_unique_constraint(batch.f("uq_alert_groups_open_key"), ["open_key"])
        batch.create_index("ix_alert_groups_group_key", ["group_key"], unique=False)
    op.execute("UPDATE alert_groups SET open_key = group_key")
    op.create_table(
        "alert_group_members",
        sa.Column("group_id", sa.Integer(), nullable=False),
        sa.Column("alert_id", sa.Integer(), nullable=False),
        sa.Column("joined_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("announced_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("resolved_sent_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["group_id"], ["alert_groups.id"],
            name=op.f("fk_alert_group_members_group_id_alert_groups"), ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["alert_id"], ["alerts.id"], name=op.f("fk_alert_group_members_alert_id_alerts"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("group_id", "alert_id", name=op.f("pk_alert_group_members")),
    )
    # Members of the groups so far: every alert that has a notification in a group; announced if one
    # of its notifications went out.
    op.execute(
        "INSERT INTO alert_group_members (group_id, alert_id, joined_at, announced_at) "
        "SELECT group_id, alert_id, MIN(created_at), MIN(CASE WHEN status IN ('sent', 'merged') "
        "THEN created_at END) FROM notifications WHERE group_id IS NOT NULL AND alert_id IS NOT NULL "
        "GROUP BY group_id, alert_id"
    )
    op.create_table(
        "rule_state",
        sa.Column("run_id", sa.String(length=200), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("saved_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_rule_state_run_id_runs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("run_id", name=op.f("pk_rule_state")),
    )


def downgrade() -> None:
    op.drop_table("rule_state")
    op.drop_table("alert_group_members")
    op.execute("DELETE FROM alert_groups WHERE open_key IS NULL")
    with op.batch_alter_table("alert_groups") as batch:
        batch.drop_index("ix_alert_groups_group_key")
        batch.drop_constraint(batch.f("uq_alert_groups_open_key"), type_="unique")
        batch.create_unique_constraint(batch.f("uq_alert_groups_group_key"), ["group_key"])
        batch.drop_column("closed_at")
        batch.drop_column("open_key")
