"""A provider whose issuer ends in "/" (Auth0 publishes ``https://tenant.auth0.com/``, and its ID tokens'
``iss`` is the same): sign-in works, whether herowatch was configured with the slash or without it.
The provider is the OIDC stand-in (tests/standins/oidc_provider.py); herowatch's side is
``monitor.web.oidc.Provider``, the code the callback page runs."""

from __future__ import annotations

import httpx
import pytest

from monitor.settings import Settings
from monitor.web.oidc import Provider, new_pending
from tests.standins.oidc_provider import OidcProvider, query_of

CLIENT_SECRET = "oidc-client-secret-for-tests-0123456789"
CALLBACK = "http://127.0.0.1:9/auth/oidc/callback"


@pytest.mark.parametrize("configured_with_slash", [True, False])
def test_sign_in_works_when_the_issuer_ends_in_a_slash(configured_with_slash: bool) -> None:
    people = {"amy": ("amy-pw", ["staff", "oncall"])}
    with OidcProvider(people, "herowatch", CLIENT_SECRET, issuer_suffix="/") as idp:
        idp.allow_redirect(CALLBACK)
        assert idp.issuer.endswith("/")
        settings = Settings(
            oidc_issuer=idp.issuer if configured_with_slash else idp.url,
            oidc_client_id="herowatch",
            oidc_client_secret=CLIENT_SECRET,
            secret_key="k" * 40,
        )
        provider = Provider(settings)
        pending = new_pending("/alerts")
        authorize = provider.authorize_url(CALLBACK, pending)
        back = httpx.post(authorize, data={"username": "amy", "password": "amy-pw"}, timeout=30)
        assert back.status_code == 302, back.text[:300]
        answer = query_of(back.headers["location"])
        assert answer["state"] == pending.state
        person = provider.finish(CALLBACK, pending, answer["code"])
        assert person.name == "amy" and person.groups == {"staff", "oncall"}
