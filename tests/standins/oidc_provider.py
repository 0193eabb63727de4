"""An OpenID Connect provider for the tests, built on authlib's server side (its AuthorizationServer, the
authorization code grant with PKCE and the OpenID Connect code extension), served on loopback by the
standard library's HTTP server. It behaves as a provider does: discovery, JWKS (RS256 keys), a login form
at the authorization endpoint, codes bound to their PKCE challenge, nonce and redirect URI and usable
once, signed ID tokens with the person's ``groups``, an end-session endpoint, and errors when asked
(``token_failures``: the token endpoint answers 500 that many times).

authlib refuses plain http unless ``AUTHLIB_INSECURE_TRANSPORT`` is set: this module sets it for itself,
and the tests set it for the herowatch they start (the provider listens on http://127.0.0.1 only).
"""

from __future__ import annotations

import html
import json
import os
import secrets
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from authlib.oauth2.rfc6749 import AuthorizationServer, ClientMixin, OAuth2Request
from authlib.oauth2.rfc6749.grants import AuthorizationCodeGrant
from authlib.oauth2.rfc6749.requests import BasicOAuth2Payload
from authlib.oauth2.rfc6750 import BearerTokenGenerator
from authlib.oauth2.rfc7636 import CodeChallenge
from authlib.oidc.core.grants import OpenIDCode
from joserfc.jwk import RSAKey

os.environ.setdefault("AUTHLIB_INSECURE_TRANSPORT", "1")


@dataclass
class Client(ClientMixin):
    client_id: str
    client_secret: str
    redirect_uris: list[str]

    def get_client_id(self) -> str:
        return self.client_id

    def get_default_redirect_uri(self) -> str:
        return self.redirect_uris[0]

    def get_allowed_scope(self, scope: str) -> str:
        return " ".join(s for s in (scope or "").split() if s in ("openid", "profile", "email", "groups"))

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        return redirect_uri in self.redirect_uris

    def check_client_secret(self, client_secret: str) -> bool:
        return secrets.compare_digest(self.client_secret, client_secret or "")

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        return method in ("client_secret_post", "client_secret_basic")

    def check_response_type(self, response_type: str) -> bool:
        return response_type == "code"

    def check_grant_type(self, grant_type: str) -> bool:
        return grant_type == "authorization_code"


@dataclass
class Person:
    name: str
    password: str
    groups: list[str]


@dataclass
class Code:
    code: str
    client_id: str
    redirect_uri: str
    scope: str
    user: Person
    nonce: str | None
    code_challenge: str | None
    code_challenge_method: str | None
    auth_time: int = field(default_factory=lambda: int(time.time()))

    def get_redirect_uri(self) -> str:
        return self.redirect_uri

    def get_scope(self) -> str:
        return self.scope

    def get_nonce(self) -> str | None:
        return self.nonce

    def get_auth_time(self) -> int:
        return self.auth_time

    def get_acr(self) -> None:
        return None

    def get_amr(self) -> None:
        return None


class Request(OAuth2Request):
    def __init__(self, method: str, uri: str, headers: dict[str, str], data: dict[str, str]) -> None:
        super().__init__(method, uri, headers=headers)
        self.payload = BasicOAuth2Payload(data)
        self._data = data

    @property
    def args(self) -> dict[str, str]:
        return dict(parse_qsl(urlsplit(self.uri).query))

    @property
    def form(self) -> dict[str, str]:
        return self._data


class OidcProvider:
    def __init__(
        self,
        people: dict[str, tuple[str, list[str]]],
        client_id: str,
        client_secret: str,
        issuer_suffix: str = "",
    ) -> None:
        self.people = {n: Person(n, pw, list(g)) for n, (pw, g) in people.items()}
        self.key = RSAKey.generate_key(2048, parameters={"kid": "test-key-1", "use": "sig"}, private=True)
        self.codes: dict[str, Code] = {}
        self.nonces: set[str] = set()
        self.ended: list[dict[str, str]] = []  # end-session requests received
        self.token_requests: list[dict[str, str]] = []
        self.token_failures = 0
        self.lock = threading.Lock()
        self.client = Client(client_id, client_secret, [])
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.issuer = self.url + issuer_suffix  # as published and put in tokens' iss (Auth0's ends in "/")
        self.auth = self._authorization_server()
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def allow_redirect(self, uri: str) -> None:
        self.client.redirect_uris.append(uri)

    def __enter__(self) -> OidcProvider:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    # ---- authlib's server side -------------------------------------------------------------------
    def _authorization_server(self) -> AuthorizationServer:
        provider = self

        class Server(AuthorizationServer):
            def query_client(self, client_id: str) -> Client | None:
                return provider.client if client_id == provider.client.client_id else None

            def save_token(self, token: dict, request: OAuth2Request) -> None:
                pass

            def create_oauth2_request(self, request: Any) -> OAuth2Request:
                return request

            def create_json_request(self, request: Any) -> Any:
                return request

            def handle_response(self, status: int, body: Any, headers: Any) -> tuple[int, Any, Any]:
                return status, body, headers

            def send_signal(self, name: str, *args: Any, **kwargs: Any) -> None:
                pass

        class CodeGrant(AuthorizationCodeGrant):
            TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_post", "client_secret_basic"]

            def save_authorization_code(self, code: str, request: OAuth2Request) -> None:
                data = request.payload.data
                with provider.lock:
                    provider.codes[code] = Code(
                        code=code,
                        client_id=request.client.get_client_id(),
                        redirect_uri=data.get("redirect_uri", ""),
                        scope=request.scope or data.get("scope", ""),
                        user=request.user,
                        nonce=data.get("nonce"),
                        code_challenge=data.get("code_challenge"),
                        code_challenge_method=data.get("code_challenge_method"),
                    )

            def query_authorization_code(self, code: str, client: Client) -> Code | None:
                found = provider.codes.get(code)
                return found if found is not None and found.client_id == client.get_client_id() else None

            def delete_authorization_code(self, authorization_code: Code) -> None:
                provider.codes.pop(authorization_code.code, None)  # a code works once

            def authenticate_user(self, authorization_code: Code) -> Person:
                return authorization_code.user

        class IdToken(OpenIDCode):
            def exists_nonce(self, nonce: str, request: OAuth2Request) -> bool:
                with provider.lock:
                    seen = nonce in provider.nonces
                    provider.nonces.add(nonce)
                return seen

            def resolve_client_private_key(self, client: Client) -> RSAKey:
                return provider.key

            def get_client_algorithm(self, client: Client) -> str:
                return "RS256"

            def get_encode_header(self, client: Client) -> dict[str, str]:
                return {"alg": "RS256", "kid": "test-key-1"}

            def get_client_claims(self, client: Client) -> dict[str, Any]:
                now = int(time.time())
                return {"iss": provider.issuer, "aud": [client.get_client_id()], "iat": now, "exp": now + 300}

            def generate_user_info(self, user: Person, scope: str) -> dict[str, Any]:
                return {"sub": f"id-{user.name}", "preferred_username": user.name, "groups": user.groups}

        server = Server()
        server.register_token_generator(
            "default", BearerTokenGenerator(lambda **_: secrets.token_urlsafe(32))
        )
        server.register_grant(CodeGrant, [CodeChallenge(required=True), IdToken(require_nonce=True)])
        return server

    def discovery(self) -> dict[str, Any]:
        return {
            "issuer": self.issuer,
            "authorization_endpoint": f"{self.url}/authorize",
            "token_endpoint": f"{self.url}/token",
            "jwks_uri": f"{self.url}/jwks",
            "end_session_endpoint": f"{self.url}/logout",
            "response_types_supported": ["code"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["client_secret_post", "client_secret_basic"],
            "scopes_supported": ["openid", "profile", "email", "groups"],
            "claims_supported": ["sub", "preferred_username", "groups", "nonce"],
        }

    # ---- HTTP ------------------------------------------------------------------------------------
    def _handler(self) -> type[BaseHTTPRequestHandler]:
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(
                self, status: int, body: Any, headers: Any = (), kind: str = "application/json"
            ) -> None:
                data = (
                    body
                    if isinstance(body, bytes)
                    else (body.encode() if isinstance(body, str) else json.dumps(body).encode())
                )
                self.send_response(status)
                for k, v in headers:
                    self.send_header(k, v)
                if not any(k.lower() == "content-type" for k, _ in headers):
                    self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _request(self, data: dict[str, str]) -> Request:
                return Request(self.command, provider.url + self.path, dict(self.headers.items()), data)

            def do_GET(self) -> None:  # noqa: N802
                path, _, query = self.path.partition("?")
                args = dict(parse_qsl(query))
                if path == "/.well-known/openid-configuration":
                    return self._send(200, provider.discovery())
                if path == "/jwks":
                    return self._send(200, {"keys": [provider.key.as_dict(private=False)]})
                if path == "/authorize":
                    page = f'<form method="post" action="/authorize?{html.escape(query)}">' + (
                        '<input name="username"><input name="password" type="password">'
                        "<button>Sign in</button></form>"
                    )
                    return self._send(200, page, kind="text/html")
                if path == "/logout":
                    provider.ended.append(args)
                    target = args.get("post_logout_redirect_uri") or "/"
                    return self._send(302, b"", [("Location", target)])
                return self._send(404, {"error": "not_found"})

            def do_POST(self) -> None:  # noqa: N802
                path, _, query = self.path.partition("?")
                length = int(self.headers.get("Content-Length") or 0)
                form = dict(parse_qsl(self.rfile.read(length).decode()))
                if path == "/authorize":
                    person = provider.people.get(form.get("username", ""))
                    if person is None or not secrets.compare_digest(
                        person.password, form.get("password", "")
                    ):
                        return self._send(401, "<p>Wrong name or password.</p>", kind="text/html")
                    request = self._request(dict(parse_qsl(query)))
                    request.user = person
                    grant = provider.auth.get_authorization_grant(request)
                    status, body, headers = provider.auth.create_authorization_response(
                        request=request, grant_user=person, grant=grant
                    )
                    return self._send(status, body or b"", headers)
                if path == "/token":
                    provider.token_requests.append(form)
                    if provider.token_failures > 0:
                        provider.token_failures -= 1
                        return self._send(500, {"error": "server_error"})
                    status, body, headers = provider.auth.create_token_response(self._request(form))
                    return self._send(status, body, headers)
                return self._send(404, {"error": "not_found"})

        return Handler


def query_of(url: str) -> dict[str, str]:
    return dict(parse_qsl(urlsplit(url).query))


def with_query(url: str, **params: str) -> str:
    return f"{url}?{urlencode(params)}"
