"""Every request serializer of the REST API is strict: an unknown field or query parameter is a
400 naming it, never silently dropped (surfaces.base.strict)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

import pytest
from rest_framework import serializers

import surfaces.api
from surfaces.base.strict import StrictSerializer
from tests.api_fixtures import bearer, signed_in

# Where a view names the serializer its input is read with.
_USES = re.compile(r"(?:validated\(|request=\{?[^,()]*?|parameters=\[|_read\()\s*([A-Z]\w+)")


def _modules():
    for info in pkgutil.iter_modules(surfaces.api.__path__):
        yield importlib.import_module(f"surfaces.api.{info.name}")


def test_every_serializer_a_view_reads_input_with_is_strict() -> None:
    checked = []
    for module in _modules():
        source = inspect.getsource(module)
        for name in sorted(set(_USES.findall(source))):
            found = getattr(module, name, None)
            if isinstance(found, type) and issubclass(found, serializers.Serializer):
                assert issubclass(found, StrictSerializer), f"{module.__name__}.{name}"
                checked.append(name)
    assert {"FactCreateIn", "RecallIn", "ConflictResolveIn", "AliasQuery"} <= set(checked)


def test_every_input_serializer_by_name_is_strict() -> None:
    for module in _modules():
        for name, found in vars(module).items():
            if (
                isinstance(found, type)
                and issubclass(found, serializers.Serializer)
                and found.__module__ == module.__name__
                and name.endswith(("In", "Query"))
            ):
                assert issubclass(found, StrictSerializer), f"{module.__name__}.{name}"


@pytest.mark.django_db
def test_an_unknown_field_or_parameter_of_the_serializers_made_strict_is_named(
    world, owner
) -> None:
    listed = bearer(world.tokens["write"]).get("/api/v1/conflicts", {"colour": "red"})
    assert listed.status_code == 400 and "colour" in listed.content.decode()
    added = signed_in(owner).post(
        "/api/v1/tenants/acme/entities/dictionary",
        {"term": "Kubernetes", "colour": "red"},
        format="json",
    )
    assert added.status_code == 400 and "colour" in added.content.decode()
