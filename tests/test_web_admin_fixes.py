"""Faults of the web admin a first user met, through Django's test client: the add-fact form's
default category, and who administers a tenant that a superuser made (the layout on a phone,
the copy buttons and axe are checked in a real browser: tests/test_web_layout_browser.py)."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from facts.models import Fact
from tenants.scope import tenant_scope

pytestmark = pytest.mark.django_db


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _text(response) -> str:
    return re.sub(r"\s+", " ", response.content.decode())


def test_the_add_fact_form_starts_at_the_apis_default_category(owner, tenant) -> None:
    from facts.inputs import fact_draft

    client = _client(owner)
    form = _text(client.get("/t/acme/facts/new/"))
    selected = re.findall(r'<option value="(\w+)" selected>', form)
    assert selected == [fact_draft({"content": "x"}).category] == ["general"]
    # Stored as the form came (the category untouched): the same as an API call without one.
    client.post("/t/acme/facts/new/", {"content": "Dana likes oolong", "category": selected[0]})
    with tenant_scope(tenant):
        stored = Fact.objects.for_tenant(tenant).get(content="Dana likes oolong")
    assert stored.category == "general"


@pytest.fixture
def superusers(django_user_model):
    sam = django_user_model.objects.create_superuser("sam", password="pw-sam-12345")
    django_user_model.objects.create_superuser("retired", password="pw-retired-1", is_active=False)
    return sam


def test_a_tenant_without_members_names_the_superusers_who_administer_it(
    tenant, superusers
) -> None:
    page = _text(_client(superusers).get("/t/acme/members/"))
    assert re.search(r'id="superusers">\s*<span class="badge">sam</span>\s*</dd>', page), page
    assert "retired" not in page  # an inactive account administers nothing
    assert "Superusers administer every tenant" in page
    assert "No members yet: the superusers administer this tenant." in page
    assert "A tenant always keeps at least one admin" not in page


def test_members_see_the_admins_among_them_and_the_superusers(owner, auditor, superusers) -> None:
    page = _text(_client(auditor).get("/t/acme/members/"))  # auditors read it too
    admins = re.search(r'id="member-admins">(.*?)</dd>', page).group(1)
    assert "olivia" in admins and "arthur" not in admins
    assert re.search(r'id="superusers">.*?sam.*?</dd>', page)
