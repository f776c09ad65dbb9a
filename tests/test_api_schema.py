"""schemathesis against our own OpenAPI schema: generated requests, valid and invalid, to every
operation, with a key of a tenant that has data. No answer may be a 5xx, and every answer must
match the schema (status code, content type, headers, body)."""

from __future__ import annotations

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

pytestmark = pytest.mark.django_db

# Imports take JSON Lines: generated bodies go out as the text they are.
schemathesis.serializer.alias("application/x-ndjson", "text/plain")
schemathesis.serializer.alias("application/jsonl", "text/plain")

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


EXAMPLES = 12


def test_the_api_keeps_to_its_schema(wsgi_app, world: World, owner, member_for_schema) -> None:
    schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", wsgi_app)
    headers = {"Authorization": f"Bearer {world.tokens['write']}"}
    failures: list[str] = []
    operations = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        operations += 1
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

            @given(case=operation.as_strategy(generation_mode=mode))
            @settings(
                max_examples=EXAMPLES,
                deadline=None,
                derandomize=True,  # the same cases on every run: CI is not a lottery
                database=None,
                suppress_health_check=list(HealthCheck),
            )
            def run(case) -> None:
                _aim(case, world)
                case.call_and_validate(headers=headers, checks=CHECKS)

            try:
                run()
            except Exception as error:  # noqa: BLE001 - collected: one report for all of them
                failures.append(f"{operation.label} ({mode.value}): {error}")
    assert operations >= 40, "the schema lost operations"
    assert not failures, "\n\n".join(failures)
