"""Process settings from the environment (prefix HEROWATCH_). Secrets are SecretStr: never printed."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


def data_dir() -> Path:
    """The user's data folder for herowatch (XDG_DATA_HOME, else ~/.local/share)."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "herowatch"


def default_database_url() -> str:
    return f"sqlite:///{data_dir() / 'herowatch.db'}"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="HEROWATCH_", extra="ignore", populate_by_name=True)

    database_url: str = Field(
        default_factory=default_database_url,
        description="SQLAlchemy URL; default: an SQLite file in the user's data folder",
    )
    listen: str = Field(default="127.0.0.1:8080", description="host:port the API and dashboard listen on")
    log_level: str = "INFO"

    wandb_api_key: SecretStr | None = Field(default=None, validation_alias=AliasChoices("WANDB_API_KEY"))
    slack_bot_token: SecretStr | None = Field(default=None, validation_alias=AliasChoices("SLACK_BOT_TOKEN"))
    slack_signing_secret: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("SLACK_SIGNING_SECRET")
    )
    prometheus_token: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("HEROWATCH_PROMETHEUS_TOKEN")
    )
    api_token: SecretStr | None = Field(default=None, validation_alias=AliasChoices("HEROWATCH_API_TOKEN"))
    protect_reads: bool = Field(
        default=False, description="HEROWATCH_PROTECT_READS=true: reads need the API token too (not probes)"
    )

    def __repr_args__(self):  # noqa: ANN204 - the database URL may hold a password: never show it
        for key, value in super().__repr_args__():
            yield key, (redact_url(value) if key == "database_url" and isinstance(value, str) else value)

    @property
    def host(self) -> str:
        return self.listen.rsplit(":", 1)[0] or "127.0.0.1"

    @property
    def port(self) -> int:
        return int(self.listen.rsplit(":", 1)[1])

    def redacted_database_url(self) -> str:
        return redact_url(self.database_url)


def redact_url(url: str) -> str:
    """Hide a password in a database URL for logs: postgresql://u:***@host/db."""
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return "<unparseable database URL>"
