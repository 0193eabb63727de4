"""Settings from the environment; secrets never printed or logged."""

from __future__ import annotations

import logging

import pytest

from monitor.settings import Settings, data_dir, redact_url


def test_settings_read_the_environment_and_hide_secrets(monkeypatch, caplog):
    monkeypatch.setenv("HEROWATCH_DATABASE_URL", "postgresql://hw:s3cret-pw@db:5432/hw")
    monkeypatch.setenv("HEROWATCH_LISTEN", "0.0.0.0:9000")
    monkeypatch.setenv("WANDB_API_KEY", "k" * 40)
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-very-secret")
    monkeypatch.setenv("HEROWATCH_API_TOKEN", "api-very-secret-0123456789abcdefghij")
    s = Settings()
    assert (s.host, s.port) == ("0.0.0.0", 9000)
    assert s.wandb_api_key.get_secret_value() == "k" * 40
    shown = repr(s) + str(s) + s.model_dump_json()
    for secret in ("k" * 40, "xoxb-very-secret", "api-very-secret-0123456789abcdefghij"):
        assert secret not in shown
    with caplog.at_level(logging.INFO):
        logging.getLogger("t").info("settings: %s db=%s", s, s.redacted_database_url())
    assert "s3cret-pw" not in caplog.text and "xoxb" not in caplog.text
    assert redact_url("postgresql://hw:s3cret-pw@db/hw") == "postgresql://hw:***@db/hw"


def test_the_default_database_is_an_sqlite_file_in_the_data_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert Settings().database_url == f"sqlite:///{tmp_path / 'herowatch' / 'herowatch.db'}"
    assert data_dir() == tmp_path / "herowatch"


def test_people_settings_are_checked_at_start() -> None:
    from monitor.settings import load_settings

    with pytest.raises(ValueError, match="roles viewer, responder, admin"):
        load_settings(role_groups="responders=oncall")
    with pytest.raises(ValueError, match="set HEROWATCH_SECRET_KEY"):
        load_settings(auth_proxies="10.0.0.0/8")
    with pytest.raises(ValueError, match="HEROWATCH_OIDC_CLIENT_ID is not"):
        load_settings(oidc_issuer="https://id.example", secret_key="k" * 40)
    ok = load_settings(auth_proxies="10.0.0.0/8", secret_key="k" * 40, role_groups="admin=hw-admins;viewer=*")
    assert ok.auth_proxies == ["10.0.0.0/8"]
