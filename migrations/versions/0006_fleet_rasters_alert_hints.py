"""fleet rasters (members x time per run and fleet metric); culprit hints on alerts

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-10 10:00:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("alerts") as batch:
        batch.add_column(sa.Column("hints", sa.JSON(), nullable=True))
    op.create_table(
        "fleet_rasters",
        sa.Column("run_id", sa.String(length=200), nullable=False),
        sa.Column("metric", sa.String(length=200), nullable=False),
        sa.Column("label", sa.String(length=200), nullable=False),
        sa.Column("unit", sa.String(length=32), nullable=False),
        sa.Column("device_word", sa.String(length=32), nullable=True),
        sa.Column("members", sa.JSON(), nullable=False),
        sa.Column("step", sa.Float(), nullable=False),
        sa.Column("width", sa.Float(), nullable=False),
        sa.Column("fine", sa.Integer(), nullable=False),
        sa.Column("coarse", sa.Integer(), nullable=False),
        sa.Column("newest", sa.Float(), nullable=True),
        sa.Column("level", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_fleet_rasters_run_id_runs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("run_id", "metric", name=op.f("pk_fleet_rasters")),
    )
    op.create_table(
        "fleet_columns",
        sa.Column("run_id", sa.String(length=200), nullable=False),
        sa.Column("metric", sa.String(length=200), nullable=False),
        sa.Column("tier", sa.Integer(), nullable=False),
        sa.Column("x0", sa.Float(), nullable=False),
        sa.Column("width", sa.Float(), nullable=False),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_fleet_columns_run_id_runs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("run_id", "metric", "tier", "x0", name=op.f("pk_fleet_columns")),
    )


def downgrade() -> None:
    op.drop_table("fleet_columns")
    op.drop_table("fleet_rasters")
    with op.batch_alter_table("alerts") as batch:
        batch.drop_column("hints")
