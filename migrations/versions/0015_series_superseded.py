"""series_superseded: the chart points a rewind superseded, kept beside the redone ones

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-06 19:00:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "series_superseded",
        sa.Column("run_id", sa.String(length=200), nullable=False),
        sa.Column("metric", sa.String(length=200), nullable=False),
        sa.Column("superseded_at", sa.Float(), nullable=False),
        sa.Column("x0", sa.Float(), nullable=False),
        sa.Column("width", sa.Float(), nullable=False),
        sa.Column("min", sa.Float(), nullable=True),
        sa.Column("max", sa.Float(), nullable=True),
        sa.Column("sum", sa.Float(), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.Column("nonfinite", sa.Integer(), nullable=False),
        sa.Column("last", sa.Float(), nullable=True),
        sa.Column("t_last", sa.Float(), nullable=True),
        sa.PrimaryKeyConstraint("run_id", "metric", "superseded_at", "x0", name=op.f("pk_series_superseded")),
    )


def downgrade() -> None:
    op.drop_table("series_superseded")
