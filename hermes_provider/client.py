"""The provider's one connection to Mnemosyne: its agent endpoints over HTTP, with the API key.

A persistent `httpx.Client` (HTTP keep-alive: a turn's requests reuse one connection), TLS
verification on (a private CA through `ca_file`), and a timeout per request. Every failure is
one of three exceptions, so the provider can decide what a turn does without knowing HTTP:
`Unreachable` (down, slow, 5xx, 429: try again later), `KeyRefused` (401: the key is unknown or
revoked) and `Rejected` (400/403: this request will never succeed; the body says why).
"""

from __future__ import annotations

import ssl
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import httpx

PREFIX = "/api/v1/agent/"


class Unreachable(Exception):
    """The server did not answer this request (down, slow, failing or too busy)."""


class KeyRefused(Exception):
    """The server does not know the API key, or it was revoked (HTTP 401)."""


class Rejected(Exception):
    """The server understood the request and refused it (HTTP 400 or 403)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _version() -> str:
    try:
        return version("mnemosyne")
    except PackageNotFoundError:  # pragma: no cover - run from a source tree
        return "0"


def tls_verify(ca_file: str) -> ssl.SSLContext | bool:
    """What httpx verifies the server's certificate with: the system's CAs, or the file's."""
    if not ca_file:
        return True
    return ssl.create_default_context(cafile=ca_file)


def _message(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:200].strip()
    if not isinstance(body, dict):
        return ""
    if body.get("error"):
        return str(body["error"])
    message, field = str(body.get("message") or ""), body.get("field")
    return f"{field}: {message}" if field and not message.startswith(f"{field}:") else message


class AgentClient:
    def __init__(self, url: str, api_key: str, *, ca_file: str = "", timeout: float = 15.0) -> None:
        self.url = url.rstrip("/")
        self._http = httpx.Client(
            base_url=self.url + PREFIX,
            headers={
                "Authorization": f"Bearer {api_key}",
                "User-Agent": f"mnemosyne-hermes/{_version()}",
            },
            verify=tls_verify(ca_file),
            timeout=timeout,
            limits=httpx.Limits(max_connections=4, max_keepalive_connections=4),
        )

    def call(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        *,
        timeout: float,
        files: dict[str, Any] | None = None,
    ) -> Any:
        """The JSON answer of one request (a JSON `body`, or a multipart upload of `files`
        with `body` as its fields), or one of this module's exceptions."""
        try:
            if files:
                response = self._http.request(method, path, data=body, files=files, timeout=timeout)
            else:
                response = self._http.request(method, path, json=body, timeout=timeout)
        except httpx.TimeoutException:
            raise Unreachable(f"{self.url} did not answer within {timeout:g} s") from None
        except httpx.HTTPError as error:
            raise Unreachable(
                f"cannot reach {self.url} ({error or type(error).__name__})"
            ) from None
        status = response.status_code
        if status == 401:
            raise KeyRefused(_message(response) or "the API key is unknown or revoked")
        if status in (400, 403, 404, 413):
            raise Rejected(status, _message(response) or f"HTTP {status}")
        if status >= 300:
            wait = response.headers.get("Retry-After")
            detail = _message(response)
            raise Unreachable(
                f"{self.url} answered HTTP {status}"
                + (f": {detail}" if detail else "")
                + (f" (retry in {wait} s)" if wait else "")
            )
        try:
            return response.json()
        except ValueError:
            raise Unreachable(f"{self.url} answered something that is not JSON") from None

    def close(self) -> None:
        self._http.close()
