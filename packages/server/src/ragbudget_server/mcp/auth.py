"""A static bearer token for the HTTP transport (`--auth-token` / `RAGBUDGET_AUTH_TOKEN`)."""

from __future__ import annotations

import hashlib
import hmac

from fastmcp.server.auth import AccessToken, TokenVerifier

__all__ = ["BearerTokenVerifier"]


class BearerTokenVerifier(TokenVerifier):
    """Accept exactly one shared secret as `Authorization: Bearer <token>`.

    fastmcp's own `StaticTokenVerifier` is meant for tests (a dict lookup); this one compares
    digests in constant time and keeps only the token's SHA-256, so the secret is not held in
    a plain attribute. Requests without the header, or with another token, get HTTP 401 from
    fastmcp's bearer middleware before they reach a tool.

    Instantiate:
        ```python
        from ragbudget_server.mcp import ServerSettings, create_server

        mcp = create_server(ServerSettings(), auth_token="s3cret")  # uses this verifier
        ```
    """

    def __init__(self, token: str, *, client_id: str = "ragbudget-client") -> None:
        if not token or token != token.strip():
            msg = "auth token must be a non-empty string without surrounding whitespace"
            raise ValueError(msg)
        super().__init__()
        self._digest = hashlib.sha256(token.encode()).digest()
        self._client_id = client_id

    async def verify_token(self, token: str) -> AccessToken | None:
        """The access granted to `token`, or None (-> 401) when it is not the shared secret."""
        digest = hashlib.sha256(token.encode()).digest()
        if not hmac.compare_digest(digest, self._digest):
            return None
        return AccessToken(token=token, client_id=self._client_id, scopes=[])
