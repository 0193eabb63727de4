"""stack_captures, stack_dumps: a run's latest stack capture and its nodes' answers (monitor.stacks)

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-07 10:00:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "stack_captures",
        sa.Column("run_id", sa.String(length=200), nullable=False),
        sa.Column("capture_id", sa.String(length=64), nullable=False),
        sa.Column("reason", sa.String(length=300), nullable=False),
        sa.Column("requested_by", sa.String(length=200), nullable=False),
        sa.Column("requested_at", sa.Float(), nullable=False),
        sa.Column("hold_until", sa.Float(), nullable=False),
        sa.Column("expected", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_stack_captures_run_id_runs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("run_id", name=op.f("pk_stack_captures")),
    )
    op.create_table(
        "stack_dumps",
        sa.Column("run_id", sa.String(length=200), nullable=False),
        sa.Column("node", sa.String(length=128), nullable=False),
        sa.Column("capture_id", sa.String(length=64), nullable=False),
        sa.Column("at", sa.Float(), nullable=False),
        sa.Column("body", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_stack_dumps_run_id_runs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("run_id", "node", name=op.f("pk_stack_dumps")),
    )


def downgrade() -> None:
    op.drop_table("stack_dumps")
    op.drop_table("stack_captures")
