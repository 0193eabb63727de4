"""Sign-in with OpenID Connect (authlib's OAuth 2 protocol functions, httpx for the two requests): the
authorization code flow with PKCE (S256),
a state and a nonce, the ID token checked (signature against the provider's JWKS, issuer, audience,
expiry, nonce), and the person's groups (``HEROWATCH_OIDC_GROUPS_CLAIM``, ``groups`` by default) mapped to
a role (``HEROWATCH_ROLE_GROUPS``). The provider's metadata comes from its discovery document.

What the browser carries between the redirect out and the callback (state, nonce, PKCE verifier, where to
go back to) is a short-lived cookie signed with the signing key, scoped to ``/auth/oidc``; nothing is kept
server side until the person is signed in (then a ``login_sessions`` row, as for every session).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import threading
import time
from dataclasses import dataclass
from typing import Any

import httpx
from authlib.oauth2.rfc6749.parameters import prepare_grant_uri, prepare_token_request
from authlib.oauth2.rfc7636 import create_s256_code_challenge
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet

from monitor.settings import Settings

PENDING_COOKIE = "herowatch_oidc"
PENDING_PATH = "/auth/oidc"
PENDING_MAX_AGE = 600  # ten minutes to sign in at the provider
METADATA_TTL = 600.0
TIMEOUT = 10.0
SCOPE = "openid profile email groups"


class OidcError(Exception):
    """A sign-in that cannot complete: the message is for the person (no secrets, no tokens)."""


@dataclass(frozen=True)
class Person:
    name: str
    groups: frozenset[str]


@dataclass(frozen=True)
class Pending:
    state: str
    nonce: str
    verifier: str
    next: str
    at: float


def configured(settings: Settings) -> bool:
    return bool(settings.oidc_issuer and settings.oidc_client_id)


class Provider:
    """The provider's discovery document and keys, fetched when first needed and kept ten minutes."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._lock = threading.Lock()
        self._meta: dict[str, Any] | None = None
        self._keys: KeySet | None = None
        self._fetched = 0.0

    def _load(self, force: bool = False) -> tuple[dict[str, Any], KeySet]:
        with self._lock:
            if force or self._meta is None or time.monotonic() - self._fetched > METADATA_TTL:
                issuer = (self.settings.oidc_issuer or "").rstrip("/")
                try:
                    meta = httpx.get(f"{issuer}/.well-known/openid-configuration", timeout=TIMEOUT)
                    meta.raise_for_status()
                    doc = meta.json()
                    jwks = httpx.get(doc["jwks_uri"], timeout=TIMEOUT)
                    jwks.raise_for_status()
                    self._keys = KeySet.import_key_set(jwks.json())
                except (httpx.HTTPError, ValueError, KeyError, JoseError) as exc:
                    raise OidcError(f"the sign-in provider did not answer ({type(exc).__name__})") from None
                if not isinstance(doc.get("issuer"), str) or doc["issuer"].rstrip("/") != issuer:
                    raise OidcError("the sign-in provider's discovery document names another issuer")
                self._meta, self._fetched = doc, time.monotonic()
            assert self._meta is not None and self._keys is not None
            return self._meta, self._keys

    def metadata(self) -> dict[str, Any]:
        return self._load()[0]

    def authorize_url(self, redirect_uri: str, pending: Pending) -> str:
        return prepare_grant_uri(
            self.metadata()["authorization_endpoint"],
            client_id=self.settings.oidc_client_id,
            response_type="code",
            redirect_uri=redirect_uri,
            scope=SCOPE,
            state=pending.state,
            nonce=pending.nonce,
            code_challenge=create_s256_code_challenge(pending.verifier),
            code_challenge_method="S256",
        )

    def finish(self, redirect_uri: str, pending: Pending, code: str) -> Person:
        """The code for tokens (with the PKCE verifier), the ID token checked, the person it names."""
        meta, keys = self._load()
        secret = self.settings.oidc_client_secret
        body = prepare_token_request(
            "authorization_code",
            code=code,
            redirect_uri=redirect_uri,
            code_verifier=pending.verifier,
            client_id=self.settings.oidc_client_id,
            **({"client_secret": secret.get_secret_value()} if secret else {}),
        )
        try:
            r = httpx.post(
                meta["token_endpoint"],
                content=body,
                headers={"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"},
                timeout=TIMEOUT,
            )
            r.raise_for_status()
            token = r.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise OidcError(f"the sign-in provider refused the code ({type(exc).__name__})") from None
        if not isinstance(token, dict):
            raise OidcError("the sign-in provider's token answer is not an object")
        raw = token.get("id_token")
        if not isinstance(raw, str):
            raise OidcError("the sign-in provider sent no ID token")
        claims = self._verified(raw, keys, pending.nonce, meta["issuer"])
        name = claims.get("preferred_username") or claims.get("email") or claims.get("sub")
        if not isinstance(name, str) or not name.strip():
            raise OidcError("the ID token names nobody")
        groups = claims.get(self.settings.oidc_groups_claim) or []
        if isinstance(groups, str):
            groups = [g for g in groups.replace(",", " ").split() if g]
        if not isinstance(groups, list):
            groups = []
        return Person(name.strip()[:200], frozenset(str(g)[:200] for g in groups[:500]))

    def _verified(self, raw: str, keys: KeySet, nonce: str, issuer: str) -> dict[str, Any]:
        """The ID token's claims, its ``iss`` compared with ``issuer`` exactly as the discovery document
        publishes it (Auth0's ends in "/", and so do its tokens' ``iss``)."""
        try:
            try:
                decoded = jwt.decode(raw, keys, algorithms=["RS256", "ES256", "PS256"])
            except JoseError:  # the provider may have rotated its keys: fetch them once more
                decoded = jwt.decode(raw, self._load(force=True)[1], algorithms=["RS256", "ES256", "PS256"])
            jwt.JWTClaimsRegistry(
                now=int(time.time()),
                leeway=60,
                iss={"essential": True, "value": issuer},
                aud={"essential": True, "value": self.settings.oidc_client_id},
                exp={"essential": True},
                nonce={"essential": True, "value": nonce},
            ).validate(decoded.claims)
        except (JoseError, ValueError) as exc:
            raise OidcError(f"the ID token is not valid ({type(exc).__name__})") from None
        return dict(decoded.claims)

    def end_session_url(self, post_logout: str) -> str | None:
        try:
            endpoint = self.metadata().get("end_session_endpoint")
        except OidcError:
            return None
        if not endpoint:
            return None
        query = httpx.QueryParams(
            client_id=self.settings.oidc_client_id, post_logout_redirect_uri=post_logout
        )
        return f"{endpoint}?{query}"


# ---- the pending sign-in, in a signed cookie --------------------------------------------------------
def new_pending(next_path: str) -> Pending:
    return Pending(
        state=secrets.token_urlsafe(24),
        nonce=secrets.token_urlsafe(24),
        verifier=secrets.token_urlsafe(48),
        next=next_path,
        at=time.time(),
    )


def _mac(key: bytes, body: str) -> str:
    return hmac.new(key, f"herowatch oidc pending v1|{body}".encode(), hashlib.sha256).hexdigest()


def seal(key: bytes, pending: Pending) -> str:
    body = base64.urlsafe_b64encode(json.dumps(pending.__dict__).encode()).decode().rstrip("=")
    return f"{body}.{_mac(key, body)}"


def unseal(key: bytes, value: str | None) -> Pending | None:
    """The pending sign-in in a cookie, if its MAC is right and it is less than ten minutes old."""
    if not value or len(value) > 2048:
        return None
    body, _, mac = value.partition(".")
    if not hmac.compare_digest(_mac(key, body).encode(), mac.encode()):
        return None
    try:
        data = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
        pending = Pending(**data)
    except (ValueError, TypeError):
        return None
    return pending if 0 <= time.time() - pending.at < PENDING_MAX_AGE else None
