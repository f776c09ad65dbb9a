"""schemathesis against our own OpenAPI schema: generated requests, valid and invalid, to every
operation, with a key of a tenant that has data. No answer may be a 5xx, and every answer must
match the schema (status code, content type, headers, body)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import pytest
import schemathesis
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.api_fixtures import World

# The fuzzer sends thousands of requests (minutes): left out of `./scripts/test.sh --quick`.
pytestmark = [pytest.mark.django_db, pytest.mark.slow]

# Imports take JSON Lines: generated bodies go out as the text they are.
schemathesis.serializer.alias("application/x-ndjson", "text/plain")
schemathesis.serializer.alias("application/jsonl", "text/plain")
# Bundles are tar files: generated bodies go out as bytes.
schemathesis.serializer.alias("application/x-tar", "application/octet-stream")

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]


@pytest.fixture
def wsgi_app() -> Iterator[WSGIHandler]:
    """Django's WSGI application, in this process and this test's transaction. Like Django's
    test client, it must not close the connection between requests (that would end the
    transaction that holds the test data)."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield WSGIHandler()
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


@pytest.fixture
def member_for_schema(world: World, system_actor):
    from django.contrib.auth import get_user_model

    from tenants.services import membership_set

    carol = get_user_model().objects.create_user("carol", password="pw-carol-123")
    membership_set(tenant=world.tenant, user=carol, role="auditor", actor=system_actor)
    return carol


def _aim(case, world: World) -> None:
    """Point generated cases at real data often enough: the tenant is always ours (else every
    answer is a 404), and an id that comes out even is swapped for a real object's id."""
    params = case.path_parameters
    if not params:
        return
    if "tenant" in params:
        params["tenant"] = world.tenant.slug
    real = {
        "fact_id": world.fact.pk,
        "entity_id": world.entity_id,
        "key_id": world.key_id,  # the read key: revoking it leaves the test's key working
    }
    for name, ident in real.items():
        value = params.get(name)
        if isinstance(value, str) and value.isdigit() and int(value[-1]) % 2 == 0:
            params[name] = str(ident)
    if isinstance(params.get("username"), str) and len(params["username"]) % 2 == 0:
        params["username"] = "carol"


def _fuzz(app, world: World, *, examples: int, only: str = "", **transport) -> Counter:
    """Run every operation (whose path starts with `only`) with generated valid and invalid
    cases; fail with every failure found. Returns the operations that answered 2xx at least
    once, and how often, so a test can tell that the fuzzing got past authentication."""
    schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", app)
    failures: list[str] = []
    succeeded: Counter = Counter()
    for result in schema.get_all_operations():
        operation = result.ok()
        if not operation.path.startswith(only):
            continue
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

            @given(case=operation.as_strategy(generation_mode=mode))
            @settings(
                max_examples=examples,
                deadline=None,
                derandomize=True,  # the same cases on every run: CI is not a lottery
                database=None,
                suppress_health_check=list(HealthCheck),
            )
            def run(case) -> None:
                _aim(case, world)
                response = case.call_and_validate(checks=CHECKS, **transport)
                if 200 <= response.status_code < 300:
                    succeeded[case.operation.label] += 1

            try:
                run()
            except Exception as error:  # noqa: BLE001 - collected: one report for all of them
                failures.append(f"{operation.label} ({mode.value}): {error}")
    assert not failures, "\n\n".join(failures)
    return succeeded


def test_the_api_keeps_to_its_schema_with_a_key(wsgi_app, world: World, member_for_schema):
    headers = {"Authorization": f"Bearer {world.tokens['write']}"}
    succeeded = _fuzz(wsgi_app, world, examples=12, headers=headers)
    # Reads and writes of facts, recall, context, entities and audit got through.
    assert len(succeeded) >= 30, sorted(succeeded)


def test_the_api_keeps_to_its_schema_for_a_signed_in_admin(
    wsgi_app, world: World, owner, member_for_schema
) -> None:
    # Administration (members, keys, settings, retention, purge) is for people only.
    from django.test import Client

    browser = Client()
    browser.force_login(owner)
    csrf = "a" * 32  # a CSRF secret: the cookie and the header must agree
    cookies = {"sessionid": browser.cookies["sessionid"].value, "csrftoken": csrf}
    succeeded = _fuzz(
        wsgi_app, world, examples=8, only="/api/v1/tenants", cookies=cookies,
        headers={"X-CSRFToken": csrf},
    )  # fmt: skip
    # Administration, which no key may do, got through for the signed-in admin.
    for operation in ("POST /api/v1/tenants/{tenant}/api-keys", "GET /api/v1/tenants"):
        assert succeeded[operation], sorted(succeeded)
