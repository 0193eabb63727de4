"""The chart points a rewind superseded (``monitor.storage.series_attempts``), on ``models.Base`` so that
migrations and ``tests/test_storage.py`` see them with the rest."""

from __future__ import annotations

from sqlalchemy import Float, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from monitor.storage.base import Base


class SupersededBucket(Base):
    """A chart bucket of a run's series as it stood when a rewind (a restart from a checkpoint) began to
    log its steps again: the earlier attempt at those steps, kept to be drawn beside the redone ones."""

    __tablename__ = "series_superseded"

    run_id: Mapped[str] = mapped_column(String(200), primary_key=True)
    metric: Mapped[str] = mapped_column(String(200), primary_key=True)
    superseded_at: Mapped[float] = mapped_column(Float, primary_key=True)  # the first redone point's time
    x0: Mapped[float] = mapped_column(Float, primary_key=True)
    width: Mapped[float] = mapped_column(Float)
    min: Mapped[float | None] = mapped_column(Float)
    max: Mapped[float | None] = mapped_column(Float)
    sum: Mapped[float] = mapped_column(Float, default=0.0)
    count: Mapped[int] = mapped_column(Integer, default=0)
    nonfinite: Mapped[int] = mapped_column(Integer, default=0)
    last: Mapped[float | None] = mapped_column(Float)
    t_last: Mapped[float | None] = mapped_column(Float)  # epoch seconds of the newest point folded in
