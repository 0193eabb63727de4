"""people: the audit trail, personal API tokens, and the role of a dashboard session

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-04 12:45:00

Sessions started before this revision were started with the shared token: their role is automation.
"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("login_sessions") as batch:
        batch.add_column(sa.Column("role", sa.String(length=16), server_default="automation", nullable=False))
    op.create_table(
        "audit_events",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("actor", sa.String(length=200), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=True),
        sa.Column("via", sa.String(length=16), nullable=False),
        sa.Column("door", sa.String(length=16), nullable=False),
        sa.Column("action", sa.String(length=32), nullable=False),
        sa.Column("target", sa.String(length=300), nullable=False),
        sa.Column("run_id", sa.String(length=200), nullable=True),
        sa.Column("outcome", sa.String(length=16), nullable=False),
        sa.Column("detail", sa.String(length=500), server_default="", nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_events")),
    )
    op.create_index("ix_audit_events_at", "audit_events", ["at"])
    op.create_index("ix_audit_events_actor", "audit_events", ["actor"])
    op.create_index("ix_audit_events_run_id", "audit_events", ["run_id"])
    op.create_table(
        "api_tokens",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("person", sa.String(length=200), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("label", sa.String(length=100), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_used_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_tokens")),
        sa.UniqueConstraint("key", name=op.f("uq_api_tokens_key")),
    )
    op.create_index("ix_api_tokens_person", "api_tokens", ["person"])


def downgrade() -> None:
    op.drop_index("ix_api_tokens_person", table_name="api_tokens")
    op.drop_table("api_tokens")
    op.drop_index("ix_audit_events_run_id", table_name="audit_events")
    op.drop_index("ix_audit_events_actor", table_name="audit_events")
    op.drop_index("ix_audit_events_at", table_name="audit_events")
    op.drop_table("audit_events")
    with op.batch_alter_table("login_sessions") as batch:
        batch.drop_column("role")
