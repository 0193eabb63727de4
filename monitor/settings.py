"""Process settings from the environment (prefix HEROWATCH_). Secrets are SecretStr: never printed."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

from pydantic import AliasChoices, Field, SecretStr, ValidationInfo, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from alerts.durations import Duration

MIN_TOKEN_CHARS = 32
MAKE_TOKEN = "python -c 'import secrets; print(secrets.token_urlsafe(32))'"
Names = Annotated[list[str], NoDecode]  # from the environment as "a,b,c"


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
    slack_app_token: SecretStr | None = Field(
        default=None,
        validation_alias=AliasChoices("SLACK_APP_TOKEN"),
        description="an app-level token (xapp-...): Slack's buttons and /herowatch over Socket Mode",
    )
    slack_api_url: str = Field(
        default="https://slack.com/api/", description="Slack's Web API, for Socket Mode (tests and proxies)"
    )
    prometheus_token: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("HEROWATCH_PROMETHEUS_TOKEN")
    )
    api_token: SecretStr | None = Field(default=None, validation_alias=AliasChoices("HEROWATCH_API_TOKEN"))
    protect_reads: bool = Field(
        default=False, description="HEROWATCH_PROTECT_READS=true: reads need the API token too (not probes)"
    )
    allowed_hosts: Names = Field(
        default_factory=list,
        description="host names clients use to reach herowatch (Host header), comma-separated; IP "
        "addresses and localhost are always served; '*' serves any name (no DNS-rebinding defence)",
    )
    trusted_proxies: Names = Field(
        default_factory=list,
        description="addresses or CIDRs of reverse proxies whose X-Forwarded-For/-Proto/-Host are believed",
    )
    slack_team_id: str | None = Field(
        default=None, description="the Slack workspace id (T...) whose button clicks are accepted"
    )
    secret_key: SecretStr | None = Field(
        default=None,
        description="signs sign-in cookies and forms when people sign in through a proxy or OpenID Connect "
        "(default: the API token); at least 32 random characters",
    )
    auth_proxies: Names = Field(
        default_factory=list,
        description="addresses or CIDRs of the sign-in proxies whose identity headers are believed; a "
        "request with those headers from anywhere else is refused",
    )
    auth_proxy_user_header: str = Field(default="X-Forwarded-User", description="the person's name")
    auth_proxy_groups_header: str = Field(
        default="X-Forwarded-Groups", description="the person's groups, comma-separated"
    )
    role_groups: str = Field(
        default="",
        description="groups to roles, e.g. 'admin=hw-admins;responder=oncall,ml-sre;viewer=*' ('*': anyone "
        "signed in); a person gets the highest role of their groups, none at all without a match",
    )
    oidc_issuer: str | None = Field(default=None, description="OpenID Connect issuer URL (sign-in with OIDC)")
    oidc_client_id: str | None = None
    oidc_client_secret: SecretStr | None = None
    oidc_groups_claim: str = Field(default="groups", description="the ID token claim holding groups")
    ingest_dir: Path = Field(
        default_factory=lambda: data_dir() / "ingest",
        description="where POST /api/ingest keeps what jobs push until the push source reads it (one "
        "append-only file per run); put it on local disk of the host that serves the API and polls",
    )
    stacks_hold: Duration = Field(
        default=30.0,
        ge=1,
        le=600,
        description="how long a hang's first page (and the run page) waits for the nodes' stacks, at most "
        "(docs/stacks.md); e.g. 30s, 2m",
    )
    max_body_api: int = Field(default=1 << 20, ge=1024, description="largest /api request body, bytes")
    max_body_form: int = Field(default=16 << 10, ge=1024, description="largest dashboard form body, bytes")
    max_body_slack: int = Field(
        default=256 << 10, ge=1024, description="largest Slack interactivity request body, bytes"
    )
    header_timeout: float = Field(
        default=10.0, gt=0, le=600, description="seconds a connection may take to send its request headers"
    )
    max_connections: int = Field(
        default=1000,
        ge=16,
        le=1_000_000,
        description="open HTTP connections at most (also kept below the process's open-file limit)",
    )

    @field_validator("api_token", "secret_key")
    @classmethod
    def _long_token(cls, v: SecretStr | None, info: ValidationInfo) -> SecretStr | None:
        if v is None or not v.get_secret_value():
            return None
        n = len(v.get_secret_value())
        if n < MIN_TOKEN_CHARS:
            raise ValueError(
                f"HEROWATCH_{(info.field_name or '').upper()} is {n} characters long; "
                f"use at least {MIN_TOKEN_CHARS} random ones, "
                f"e.g. the output of: {MAKE_TOKEN}"
            )
        return v

    @field_validator("slack_app_token")
    @classmethod
    def _app_token(cls, v: SecretStr | None) -> SecretStr | None:
        if v is None or not v.get_secret_value().strip():
            return None
        if not v.get_secret_value().startswith("xapp-"):
            raise ValueError(
                "SLACK_APP_TOKEN is not an app-level token (xapp-...): create one under Basic Information > "
                "App-Level Tokens with the connections:write scope (the bot's xoxb- token is SLACK_BOT_TOKEN)"
            )
        return v

    @field_validator("role_groups")
    @classmethod
    def _role_groups(cls, v: str) -> str:
        for part in (p.strip() for p in v.split(";")):
            role, sep, groups = part.partition("=")
            if not part:
                continue
            if not sep or role.strip() not in ("viewer", "responder", "admin") or not groups.strip():
                raise ValueError(
                    f"{part[:100]!r}: write role=group,group;... with roles viewer, responder, admin "
                    "(e.g. 'admin=hw-admins;responder=oncall;viewer=*')"
                )
        return v

    @model_validator(mode="after")
    def _people_need_a_key(self) -> Settings:
        if (self.auth_proxies or self.oidc_issuer) and self.secret_key is None and self.api_token is None:
            raise ValueError(
                "people sign in (HEROWATCH_AUTH_PROXIES or HEROWATCH_OIDC_ISSUER) but nothing signs their "
                f"sessions and forms: set HEROWATCH_SECRET_KEY (e.g. the output of: {MAKE_TOKEN})"
            )
        if self.oidc_issuer and not self.oidc_client_id:
            raise ValueError("HEROWATCH_OIDC_ISSUER is set but HEROWATCH_OIDC_CLIENT_ID is not")
        return self

    @field_validator("allowed_hosts", "trusted_proxies", "auth_proxies", mode="before")
    @classmethod
    def _comma_list(cls, v: object) -> object:
        if isinstance(v, str):
            return [part.strip() for part in v.split(",") if part.strip()]
        return v

    @field_validator("trusted_proxies", "auth_proxies")
    @classmethod
    def _networks(cls, v: list[str]) -> list[str]:
        import ipaddress

        for item in v:
            try:
                ipaddress.ip_network(item, strict=False)
            except ValueError:
                raise ValueError(f"{item!r} is not an IP address or CIDR (e.g. 10.0.0.0/8)") from None
        return v

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

    def secret_env(self) -> dict[str, str]:
        """The secrets these settings hold, under their environment names (``SLACK_BOT_TOKEN``: ...),
        for receivers that read theirs from the environment (given as overrides, not only in it)."""
        out = {}
        for name, info in type(self).model_fields.items():
            value, alias = getattr(self, name), info.validation_alias
            if isinstance(value, SecretStr) and isinstance(alias, AliasChoices):
                out[str(alias.choices[0])] = value.get_secret_value()
        return out


def load_settings(**overrides: str | None) -> Settings:
    """Settings from the environment and the given overrides (None: not given). Raises ValueError with
    every problem in one line, never echoing a value (it may be a secret)."""
    from pydantic import ValidationError

    try:
        return Settings(**{k: v for k, v in overrides.items() if v})
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'settings'}: {e['msg'].removeprefix('Value error, ')}"
            for e in exc.errors(include_input=False)
        )
        raise ValueError(f"bad environment settings: {problems}") from None


def redact_url(url: str) -> str:
    """Hide a password in a database URL for logs: postgresql://u:***@host/db."""
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return "<unparseable database URL>"
