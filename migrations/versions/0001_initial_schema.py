"""initial schema

Revision ID: 0001
Revises: 
Create Date: 2026-12-02 13:26:37.558569
"""
from alembic import op
import sqlalchemy as sa


revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    
    op.create_table('alerts',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('fingerprint', sa.String(length=32), nullable=False),
    sa.Column('rule', sa.String(length=128), nullable=False),
    sa.Column('kind', sa.String(length=32), nullable=False),
    sa.Column('run_id', sa.String(length=200), nullable=False),
    sa.Column('metric', sa.String(length=200), nullable=True),
    sa.Column('severity', sa.String(length=16), nullable=False),
    sa.Column('labels', sa.JSON(), nullable=False),
    sa.Column('annotations', sa.JSON(), nullable=False),
    sa.Column('state', sa.String(length=16), nullable=False),
    sa.Column('active_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('fired_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('resolved_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('last_true_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('value', sa.Float(), nullable=True),
    sa.Column('threshold', sa.Float(), nullable=True),
    sa.Column('step', sa.BigInteger(), nullable=True),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_alerts'))
    )
    with op.batch_alter_table('alerts', schema=None) as batch_op:
        batch_op.create_index('ix_alerts_fingerprint_state', ['fingerprint', 'state'], unique=False)
        batch_op.create_index('ix_alerts_run_id', ['run_id'], unique=False)

    op.create_table('runs',
    sa.Column('id', sa.String(length=200), nullable=False),
    sa.Column('watch', sa.String(length=128), nullable=False),
    sa.Column('source', sa.String(length=32), nullable=False),
    sa.Column('display_name', sa.String(length=300), nullable=True),
    sa.Column('url', sa.Text(), nullable=True),
    sa.Column('labels', sa.JSON(), nullable=False),
    sa.Column('state', sa.String(length=32), nullable=True),
    sa.Column('last_step', sa.BigInteger(), nullable=True),
    sa.Column('last_step_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('last_seen_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('last_polled_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('source_error', sa.Text(), nullable=True),
    sa.Column('restarts', sa.Integer(), server_default='0', nullable=False),
    sa.Column('first_seen_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_runs'))
    )
    op.create_table('series_buckets',
    sa.Column('run_id', sa.String(length=200), nullable=False),
    sa.Column('metric', sa.String(length=200), nullable=False),
    sa.Column('x0', sa.Float(), nullable=False),
    sa.Column('min', sa.Float(), nullable=True),
    sa.Column('max', sa.Float(), nullable=True),
    sa.Column('sum', sa.Float(), nullable=False),
    sa.Column('count', sa.Integer(), nullable=False),
    sa.Column('nonfinite', sa.Integer(), server_default='0', nullable=False),
    sa.Column('last', sa.Float(), nullable=True),
    sa.Column('t_last', sa.DateTime(timezone=True), nullable=True),
    sa.PrimaryKeyConstraint('run_id', 'metric', 'x0', name=op.f('pk_series_buckets'))
    )
    op.create_table('silences',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('matchers', sa.JSON(), nullable=False),
    sa.Column('starts_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('ends_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('created_by', sa.String(length=200), nullable=False),
    sa.Column('comment', sa.Text(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_silences'))
    )
    op.create_table('alert_transitions',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('alert_id', sa.Integer(), nullable=False),
    sa.Column('run_id', sa.String(length=200), nullable=False),
    sa.Column('at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('from_state', sa.String(length=16), nullable=False),
    sa.Column('to_state', sa.String(length=16), nullable=False),
    sa.Column('reason', sa.Text(), nullable=False),
    sa.Column('value', sa.Float(), nullable=True),
    sa.Column('step', sa.BigInteger(), nullable=True),
    sa.ForeignKeyConstraint(['alert_id'], ['alerts.id'], name=op.f('fk_alert_transitions_alert_id_alerts'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_alert_transitions'))
    )
    with op.batch_alter_table('alert_transitions', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_alert_transitions_alert_id'), ['alert_id'], unique=False)
        batch_op.create_index('ix_alert_transitions_run_id_at', ['run_id', 'at'], unique=False)

    op.create_table('notifications',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('idempotency_key', sa.String(length=200), nullable=False),
    sa.Column('alert_id', sa.Integer(), nullable=True),
    sa.Column('receiver', sa.String(length=128), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('payload', sa.JSON(), nullable=False),
    sa.Column('attempts', sa.Integer(), server_default='0', nullable=False),
    sa.Column('next_attempt_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('claimed_by', sa.String(length=128), nullable=True),
    sa.Column('claim_expires_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('sent_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('external_ref', sa.String(length=200), nullable=True),
    sa.Column('last_error', sa.Text(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['alert_id'], ['alerts.id'], name=op.f('fk_notifications_alert_id_alerts'), ondelete='SET NULL'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_notifications')),
    sa.UniqueConstraint('idempotency_key', name=op.f('uq_notifications_idempotency_key'))
    )
    with op.batch_alter_table('notifications', schema=None) as batch_op:
        batch_op.create_index('ix_notifications_status_due', ['status', 'next_attempt_at'], unique=False)

    op.create_table('series_meta',
    sa.Column('run_id', sa.String(length=200), nullable=False),
    sa.Column('metric', sa.String(length=200), nullable=False),
    sa.Column('axis', sa.String(length=8), nullable=False),
    sa.Column('width', sa.Float(), nullable=False),
    sa.Column('buckets', sa.Integer(), server_default='0', nullable=False),
    sa.Column('points', sa.BigInteger(), server_default='0', nullable=False),
    sa.ForeignKeyConstraint(['run_id'], ['runs.id'], name=op.f('fk_series_meta_run_id_runs'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('run_id', 'metric', name=op.f('pk_series_meta'))
    )
    op.create_table('source_cursors',
    sa.Column('run_id', sa.String(length=200), nullable=False),
    sa.Column('source', sa.String(length=32), nullable=False),
    sa.Column('cursor', sa.JSON(), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['run_id'], ['runs.id'], name=op.f('fk_source_cursors_run_id_runs'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('run_id', 'source', name=op.f('pk_source_cursors'))
    )
    


def downgrade() -> None:
    
    op.drop_table('source_cursors')
    op.drop_table('series_meta')
    with op.batch_alter_table('notifications', schema=None) as batch_op:
        batch_op.drop_index('ix_notifications_status_due')

    op.drop_table('notifications')
    with op.batch_alter_table('alert_transitions', schema=None) as batch_op:
        batch_op.drop_index('ix_alert_transitions_run_id_at')
        batch_op.drop_index(batch_op.f('ix_alert_transitions_alert_id'))

    op.drop_table('alert_transitions')
    op.drop_table('silences')
    op.drop_table('series_buckets')
    op.drop_table('runs')
    with op.batch_alter_table('alerts', schema=None) as batch_op:
        batch_op.drop_index('ix_alerts_run_id')
        batch_op.drop_index('ix_alerts_fingerprint_state')

    op.drop_table('alerts')
    
