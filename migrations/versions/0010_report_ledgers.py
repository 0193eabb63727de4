"""goodput_slots, goodput_events, reports_sent: the weekly report's ledgers

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-04 12:45:00

The goodput ledger starts with this revision: periods before it have no slots (the report says the
run was not accounted then).
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "goodput_slots",
        sa.Column("run_id", sa.String(length=200), nullable=False),
        sa.Column("slot", sa.Float(), nullable=False),
        sa.Column("bucket", sa.String(length=16), nullable=False),
        sa.Column("seconds", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_goodput_slots_run_id_runs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("run_id", "slot", "bucket", name=op.f("pk_goodput_slots")),
    )
    op.create_index("ix_goodput_slots_slot", "goodput_slots", ["slot"])
    op.create_table(
        "goodput_events",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("run_id", sa.String(length=200), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("start", sa.Float(), nullable=False),
        sa.Column("end", sa.Float(), nullable=False),
        sa.Column("seconds_lost", sa.Float(), nullable=False),
        sa.Column("step", sa.BigInteger(), nullable=True),
        sa.Column("before_step", sa.BigInteger(), nullable=True),
        sa.Column("steps_redone", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_goodput_events_run_id_runs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_goodput_events")),
    )
    op.create_index("ix_goodput_events_run_start", "goodput_events", ["run_id", "start"])
    op.create_table(
        "reports_sent",
        sa.Column("schedule", sa.String(length=200), nullable=False),
        sa.Column("period_start", sa.Float(), nullable=False),
        sa.Column("claimed_by", sa.String(length=200), nullable=False),
        sa.Column("claimed_at", sa.Float(), nullable=False),
        sa.Column("sent_at", sa.Float(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("schedule", "period_start", name=op.f("pk_reports_sent")),
    )


def downgrade() -> None:
    op.drop_table("reports_sent")
    op.drop_index("ix_goodput_events_run_start", table_name="goodput_events")
    op.drop_table("goodput_events")
    op.drop_index("ix_goodput_slots_slot", table_name="goodput_slots")
    op.drop_table("goodput_slots")
