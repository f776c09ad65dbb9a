"""Sign-in throttling, the per-address API rate for callers without valid credentials, HTTP
hardening (CSP, no-store, /healthz detail, one-line 403 logs, password rules), strict API
input, and the limits in the schema's own units."""

from __future__ import annotations

import json
import logging
import re

import pytest
from django.test import Client

from tests.api_fixtures import bearer, signed_in

pytestmark = pytest.mark.django_db


def _sign_in(client: Client, username: str, password: str, address: str = "198.51.100.7"):
    return client.post(
        "/accounts/sign-in/",
        {"username": username, "password": password},
        REMOTE_ADDR=address,
    )


# -- sign-in throttling ------------------------------------------------------------------------


def test_an_account_is_locked_after_repeated_wrong_passwords_even_for_the_right_one(
    owner, settings
) -> None:
    client = Client()
    limit = settings.AXES_FAILURE_LIMIT
    for n in range(limit - 1):
        assert _sign_in(client, "olivia", f"wrong-{n}", f"203.0.113.{n + 1}").status_code == 200
    # The limit-th failure locks: from any address, the right password is refused too.
    assert _sign_in(client, "olivia", "wrong-last", "203.0.113.99").status_code == 429
    locked = _sign_in(client, "olivia", "pw-olivia-123", "192.0.2.44")
    assert locked.status_code == 429
    text = locked.content.decode()
    assert "Too many failed sign-ins" in text and "Try again in 15 minutes" in text
    assert locked["Retry-After"] == str(15 * 60)
    assert "_auth_user_id" not in client.session


def test_an_address_is_locked_after_wrong_passwords_for_many_accounts(owner, auditor) -> None:
    client = Client()
    for n in range(10):
        _sign_in(client, f"nobody{n}", "guess", "198.51.100.50")
    # The address is paused, also for a real account with its right password.
    assert _sign_in(client, "arthur", "pw-arthur-123", "198.51.100.50").status_code == 429
    # Another address is not.
    assert _sign_in(Client(), "arthur", "pw-arthur-123", "198.51.100.51").status_code == 302


def test_lockouts_are_listed_for_superusers_in_the_django_admin(owner, django_user_model) -> None:
    for n in range(10):
        _sign_in(Client(), "olivia", f"wrong-{n}", "198.51.100.60")
    sam = django_user_model.objects.create_superuser("sam", password="pw-sam-12345")
    page = signed_in(sam).get("/admin/axes/accessattempt/")
    assert page.status_code == 200
    assert "olivia" in page.content.decode() and "198.51.100.60" in page.content.decode()


def test_the_django_admin_signs_in_through_the_throttled_sign_in(owner) -> None:
    answer = Client().post("/admin/login/?next=/admin/", {"username": "x", "password": "y"})
    assert answer.status_code == 302
    assert answer["Location"].startswith("/accounts/sign-in/?next=/admin/")


# -- the API's address limit -------------------------------------------------------------------


@pytest.mark.parametrize("authorization", [None, "Bearer mnm_000000000000_guessed", "Bearer"])
def test_requests_without_valid_credentials_are_counted_per_address(
    world, settings, authorization
) -> None:
    from operations.rates import rates_clear

    rates_clear()  # the counts of other tests
    settings.MNEMOSYNE_API_RATES = {"key": None, "user": None, "anon": "60/minute"}
    client = Client()
    headers = {"HTTP_AUTHORIZATION": authorization} if authorization else {}
    codes = [
        client.get("/api/v1/facts", REMOTE_ADDR="198.51.100.9", **headers).status_code
        for _ in range(130)
    ]
    assert codes[:60] == [401] * 60
    assert set(codes[60:]) == {429}
    refused = client.get("/api/v1/facts", REMOTE_ADDR="198.51.100.9", **headers)
    assert refused.json()["code"] == "throttled" and int(refused["Retry-After"]) > 0
    # Another address, and a valid key from the same one, still get through.
    assert client.get("/api/v1/facts", REMOTE_ADDR="198.51.100.10").status_code == 401
    good = bearer(world.tokens["read"]).get("/api/v1/facts", REMOTE_ADDR="198.51.100.9")
    assert good.status_code == 200


# -- HTTP hardening ----------------------------------------------------------------------------


def test_pages_carry_a_strict_csp_and_signed_in_pages_are_not_stored(owner) -> None:
    client = Client()
    client.force_login(owner)
    for path in ("/", "/t/acme/", "/t/acme/keys/", "/accounts/sign-in/"):
        response = client.get(path, follow=False)
        csp = response["Content-Security-Policy"]
        assert "script-src 'self'" in csp and "style-src 'self'" in csp, path
        assert "unsafe-inline" not in csp and "frame-ancestors 'none'" in csp, path
        assert "no-store" in response["Cache-Control"], path
        assert response["X-Frame-Options"] == "DENY"
    api = signed_in(owner).get("/api/v1/tenants/acme/facts")
    assert "no-store" in api["Cache-Control"]


def test_pages_have_no_inline_script_or_style(owner, tenant) -> None:
    client = Client()
    client.force_login(owner)
    pages = ["/", "/accounts/two-factor/"] + [
        f"/t/acme/{page}" for page in ("", "facts/", "retention/", "members/", "keys/", "audit/")
    ]
    for path in pages:
        html = client.get(path).content.decode()
        assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", html), path
        assert not re.search(r"\sstyle=|<style", html), path
        assert not re.search(r"\son[a-z]+=", html), path


def test_healthz_detail_only_from_this_machine_or_for_staff(db, django_user_model) -> None:
    local = Client().get("/healthz")
    assert "checks" in local.json()
    remote = Client().get("/healthz", REMOTE_ADDR="203.0.113.8")
    assert set(remote.json()) == {"status", "failing"}
    assert remote.status_code == local.status_code
    staff = django_user_model.objects.create_user("ops", password="x", is_staff=True)
    client = Client()
    client.force_login(staff)
    assert "checks" in client.get("/healthz", REMOTE_ADDR="203.0.113.8").json()


def test_healthz_behind_a_proxy_looks_at_the_forwarded_address(db, settings) -> None:
    settings.MNEMOSYNE_PROXY_COUNT = 1
    proxied = Client().get("/healthz", HTTP_X_FORWARDED_FOR="203.0.113.8")
    assert "checks" not in proxied.json()


def test_a_refused_request_is_logged_as_one_line(owner, auditor, caplog) -> None:
    client = Client()
    client.force_login(auditor)
    with caplog.at_level(logging.WARNING, logger="django.request"):
        assert client.post("/t/acme/keys/new", {"name": "x"}).status_code == 403
    record = next(r for r in caplog.records if r.name == "django.request")
    # What the log shows of it: the console handler's filters and format.
    console = next(h for h in logging.getLogger().handlers if h.get_name() == "console")
    assert console.filter(record)
    written = console.format(record)
    assert "Forbidden" in written and "/t/acme/keys/new" in written
    assert "\n" not in written and "Traceback" not in written


def test_a_password_containing_the_username_is_refused(db, django_user_model) -> None:
    from django.contrib.auth.password_validation import validate_password
    from django.core.exceptions import ValidationError

    alan = django_user_model(username="alan")
    with pytest.raises(ValidationError, match="username"):
        validate_password("alan1234", alan)
    with pytest.raises(ValidationError):
        validate_password("Xq7-short", alan)  # 9 characters: too short
    validate_password("green-tea-at-noon", alan)


# -- strict input ------------------------------------------------------------------------------


def _post(client, path: str, body) -> object:
    return client.post(path, json.dumps(body), content_type="application/json")


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/api/v1/facts/{fact}/feedback", {"helpful": "yes"}, "helpful"),
        ("/api/v1/facts/{fact}/feedback", {"helpful": 1}, "helpful"),
        ("/api/v1/recall", {"query": 123}, "query"),
        ("/api/v1/recall", {"query": "tea", "k": "5"}, "k"),
        ("/api/v1/recall", {"query": "tea", "explain": "true"}, "explain"),
        ("/api/v1/facts", {"content": "x", "tags": [1, 2]}, "tags"),
        ("/api/v1/facts", {"content": "x", "colour": "blue"}, "colour"),
        ("/api/v1/recall", {"query": "tea", "top_k": 3}, "top_k"),
    ],
)
def test_wrong_types_and_unknown_parameters_are_refused_by_name(world, path, body, field) -> None:
    client = bearer(world.tokens["write"])
    answer = _post(client, path.format(fact=world.fact.pk), body)
    assert answer.status_code == 400, answer.content
    assert answer.json()["field"].split("[")[0] == field


def test_unknown_query_parameters_and_loose_booleans_are_refused(world) -> None:
    client = bearer(world.tokens["read"])
    unknown = client.get("/api/v1/facts?colour=blue")
    assert unknown.status_code == 400 and unknown.json()["field"] == "colour"
    assert "unknown parameter" in unknown.json()["message"]
    admin = signed_in(world_owner(world))
    loose = admin.get("/api/v1/tenants/acme/retention/preview?legal_hold=yes")
    assert loose.status_code == 400 and loose.json()["field"] == "legal_hold"
    assert admin.get("/api/v1/tenants/acme/retention/preview?legal_hold=true").status_code == 200


def world_owner(world):
    from django.contrib.auth import get_user_model

    return get_user_model().objects.get(username="olivia")


def test_the_content_limit_counts_characters(world) -> None:
    client = bearer(world.tokens["write"])
    chinese = "记" * 6000  # 18,000 bytes of UTF-8, 6,000 characters
    assert _post(client, "/api/v1/facts", {"content": chinese}).status_code == 201
    at_limit = "长" * 16_384
    assert _post(client, "/api/v1/facts", {"content": at_limit}).status_code == 201
    over = _post(client, "/api/v1/facts", {"content": "x" * 16_385})
    assert over.status_code == 400 and over.json()["field"] == "content"


def test_an_import_line_may_start_with_a_byte_order_mark(world) -> None:
    client = bearer(world.tokens["write"])
    body = '\ufeff{"content": "Erin joined in May"}\n\ufeff{"content": "Frank left in June"}\n'
    answer = client.post("/api/v1/facts/import", body.encode(), content_type="application/x-ndjson")
    assert answer.status_code == 200
    assert answer.json()["counts"]["added"] == 2


def test_a_very_long_url_gets_a_json_400(world) -> None:
    client = bearer(world.tokens["read"])
    answer = client.get("/api/v1/facts?cursor=" + "A" * 5000)
    assert answer.status_code == 400 and answer.json()["field"] == "cursor"
    huge = client.get("/api/v1/facts?cursor=" + "A" * 8000)
    assert huge.status_code == 400 and huge.json()["code"] == "too_long"


def test_up_lets_gunicorn_pass_long_urls_to_the_application() -> None:
    from memoryadmin.supervisor import gunicorn_command
    from surfaces.base.security import MAX_REQUEST_LINE

    command = gunicorn_command(bind="127.0.0.1:1", workers=1)
    assert int(command[command.index("--limit-request-line") + 1]) > MAX_REQUEST_LINE + 100


# -- the production profile --------------------------------------------------------------------


@pytest.fixture
def production(settings):
    """The production profile's settings, as memoryadmin.settings applies them."""
    from memoryadmin.profile import production_settings

    for name, value in production_settings().items():
        setattr(settings, name, value)
    settings.MNEMOSYNE_PROXY_COUNT = 1
    return settings


def _https(client: Client, method: str, path: str, **extra):
    return getattr(client, method)(
        path, HTTP_X_FORWARDED_PROTO="https", HTTP_X_FORWARDED_FOR="198.51.100.20", **extra
    )


def _all_paths(world) -> list[str]:
    from django.urls import reverse

    from surfaces.base.pages import registered_pages

    values = {
        "fact_id": world.fact.pk,
        "entity_id": world.entity_id,
        "key_id": world.key_id,
        "username": "arthur",
        "invitation_id": world.invitation_id,
    }
    pages = []
    for spec in registered_pages():
        if hasattr(spec.view, "get"):
            names = set(re.findall(r"<(?:\w+:)?(\w+)>", spec.route))
            kwargs = {"tenant": "acme", **{n: values[n] for n in names}}
            pages.append(reverse(f"web:{spec.name}", kwargs=kwargs))
    api = [
        f"/api/v1/tenants/acme/{path}"
        for path in ("facts", f"facts/{world.fact.pk}", f"facts/{world.fact.pk}/history",
                     "entities", f"entities/{world.entity_id}", "members", "api-keys",
                     "retention", "retention/preview", "audit", "audit/export")
    ]  # fmt: skip
    accounts = ["/", "/accounts/password/", "/accounts/two-factor/", "/api/v1/tenants",
                "/api/schema/", "/api/schema/ui/", "/api/schema/redoc/", "/admin/"]  # fmt: skip
    return pages + api + accounts


def test_the_production_profile_secures_every_page_and_api_answer(production, world, owner):
    signing_in = Client()
    form = _https(signing_in, "get", "/accounts/sign-in/")
    assert form.status_code == 200
    csrf = form.cookies["csrftoken"]
    assert csrf["secure"] and csrf["httponly"] and csrf["samesite"] == "Lax"
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.content.decode())[1]
    signed = _https(signing_in, "post", "/accounts/sign-in/",
                    data={"username": "olivia", "password": "pw-olivia-123",
                          "csrfmiddlewaretoken": token})  # fmt: skip
    assert signed.status_code == 302
    session = signed.cookies["sessionid"]
    assert session["secure"] and session["httponly"] and session["samesite"] == "Lax"
    assert int(session["max-age"]) == production.SESSION_COOKIE_AGE <= 24 * 3600
    for path in _all_paths(world):
        response = _https(signing_in, "get", path)
        assert response.status_code in (200, 302), (path, response.status_code)
        assert response["Strict-Transport-Security"].startswith("max-age=31536000"), path
        assert response["X-Content-Type-Options"] == "nosniff", path
        assert response["Referrer-Policy"] == "same-origin", path
        assert "no-store" in response["Cache-Control"], path
        csp = response["Content-Security-Policy"]
        assert "default-src 'self'" in csp and "frame-ancestors 'none'" in csp, path
        if not path.startswith("/api/schema/"):
            assert "unsafe-inline" not in csp, path
        for cookie in response.cookies.values():
            assert cookie["secure"], (path, cookie.key)
    key = bearer(world.tokens["read"])
    answer = _https(key, "get", "/api/v1/facts")
    assert answer.status_code == 200 and "no-store" in answer["Cache-Control"]
    assert answer["Strict-Transport-Security"]


def test_the_production_profile_sends_plain_http_to_https_but_not_the_health_check(
    production, db
) -> None:
    plain = Client().get("/accounts/sign-in/", HTTP_X_FORWARDED_PROTO="http")
    assert plain.status_code == 301 and plain["Location"].startswith("https://")
    assert Client().get("/healthz", HTTP_X_FORWARDED_PROTO="http").status_code in (200, 503)


def test_the_profile_is_chosen_by_the_environment() -> None:
    import subprocess

    from tests.helpers import PYTHON, REPO, child_env

    script = (
        "import django, os; os.environ['DJANGO_SETTINGS_MODULE'] = 'memoryadmin.settings';"
        "from django.conf import settings as s;"
        "print(s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.SECURE_HSTS_SECONDS,"
        " s.SECURE_PROXY_SSL_HEADER, s.SESSION_COOKIE_AGE)"
    )
    for profile, expected in [
        ("production", "True True 31536000 ('HTTP_X_FORWARDED_PROTO', 'https') 7200"),
        ("local", "False False 0 None 7200"),
    ]:
        env = child_env() | {"MNEMOSYNE_PROFILE": profile, "MNEMOSYNE_SESSION_HOURS": "2"}
        out = subprocess.run(
            [PYTHON, "-c", script], cwd=REPO, env=env, capture_output=True, text=True, check=True
        )
        assert out.stdout.strip() == expected
    env = child_env() | {"MNEMOSYNE_PROFILE": "prod"}
    bad = subprocess.run([PYTHON, "-c", script], cwd=REPO, env=env, capture_output=True, text=True)
    assert bad.returncode != 0 and "MNEMOSYNE_PROFILE='prod'" in bad.stderr


@pytest.mark.django_db(transaction=True)
def test_the_address_limit_is_one_count_for_every_process(settings) -> None:
    """The counts are a table of the database (operations.rates): what one process counted for
    an address, another process refuses it for, with or without CACHE_URL."""
    import subprocess

    from django.db import connection

    from operations.rates import rates_clear
    from tests.helpers import PYTHON, REPO, child_env, database_url

    settings.MNEMOSYNE_API_RATES = {"key": None, "user": None, "anon": "5/minute"}
    script = (
        "import django; django.setup()\n"
        "from django.test import RequestFactory\n"
        "from surfaces.base.throttling import charge_address\n"
        "for _ in range(5):\n"
        "    charge_address(RequestFactory().get('/', REMOTE_ADDR='198.51.100.77'))\n"
        "print('counted')\n"
    )
    done = subprocess.run(
        [PYTHON, "-c", script],
        env=child_env(DJANGO_SETTINGS_MODULE="memoryadmin.settings", CACHE_URL=None,
                      DATABASE_URL=database_url(connection.settings_dict),
                      MNEMOSYNE_API_RATE_ANON="5/minute"),
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "counted"
    client = Client()
    try:
        assert client.get("/api/v1/facts", REMOTE_ADDR="198.51.100.77").status_code == 429
        assert client.get("/api/v1/facts", REMOTE_ADDR="198.51.100.78").status_code == 401
    finally:
        rates_clear()  # the table outlives the test's flush
