"""stack_captures: when a capture settled and where its answer is told in Slack; alerts: the culprit
the stacks named (monitor.stacks)

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-06 19:00:00

A capture settles once every node asked has answered or its hold ran out: herowatch then stores the
culprit (the odd group's call, hosts and ranks) with the run's hang alerts, for the weekly report, and
answers a Slack click in the alert's thread.
"""

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("stack_captures") as batch:
        batch.add_column(sa.Column("settled_at", sa.Float(), nullable=True))
        batch.add_column(sa.Column("reply_receiver", sa.String(length=128), nullable=True))
        batch.add_column(sa.Column("reply_ref", sa.String(length=200), nullable=True))
    with op.batch_alter_table("alerts") as batch:
        batch.add_column(sa.Column("culprit", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("alerts") as batch:
        batch.drop_column("culprit")
    with op.batch_alter_table("stack_captures") as batch:
        batch.drop_column("reply_ref")
        batch.drop_column("reply_receiver")
        batch.drop_column("settled_at")
