"""The `mnemosyne` command as an operator meets it: its own grouped help, every command's
`--help`, one-line errors with exit code 2, keys with limits, tenants renamed and deleted
under the web page's rules, and `status`/`stop` that need no Django and create nothing."""

from __future__ import annotations

import subprocess
from datetime import timedelta

import pytest

from memoryadmin.commandline import command_names
from tests.helpers import PYTHON, REPO, child_env

SUBCOMMANDS = {
    "tenant": ["create", "list", "rename", "delete"],
    "apikey": ["create", "list", "revoke"],
    "hermes": ["install", "uninstall", "import"],
    "audit": ["verify", "digest"],
}


def _mnemosyne(*args: str, home=None, extra_env=None) -> subprocess.CompletedProcess[str]:
    env = child_env(**({"MNEMOSYNE_HOME": str(home)} if home else {}), **(extra_env or {}))
    return subprocess.run(
        [PYTHON, "-m", "memoryadmin.cli", *args],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=180,
    )


def _one_line_error(result: subprocess.CompletedProcess[str], *words: str) -> str:
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    lines = [line for line in result.stderr.splitlines() if not line.endswith(" ...")]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr and "CommandError" not in result.stderr
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


# -- help --------------------------------------------------------------------------------------


def test_help_lists_mnemosynes_commands_in_groups_without_djangos(tmp_path) -> None:
    result = _mnemosyne("--help", home=tmp_path / "absent")
    assert result.returncode == 0
    for group in ("Run:", "Tenants and keys:", "Agents:", "Data:", "Maintenance:"):
        assert group in result.stdout
    for name in command_names():
        assert f"\n  {name} " in result.stdout, name
    assert "hermes" in result.stdout and "mcp" in result.stdout
    assert "sqlflush" not in result.stdout and "axes_reset" not in result.stdout
    assert not (tmp_path / "absent").exists()


def test_help_status_and_stop_never_load_django(tmp_path) -> None:
    """What makes them answer at once: neither Django nor Celery is imported."""
    for args in (["--help"], ["status"], ["stop"]):
        result = subprocess.run(
            [PYTHON, "-X", "importtime", "-m", "memoryadmin.cli", *args],
            env=child_env(MNEMOSYNE_HOME=str(tmp_path / "absent")),
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=60,
        )
        imported = {line.split("|")[-1].strip() for line in result.stderr.splitlines()}
        assert "django.apps" not in imported and "celery" not in imported, args
        assert "django.conf" not in imported, args


@pytest.mark.parametrize("name", command_names())
def test_every_command_answers_help(name: str, tmp_path) -> None:
    result = _mnemosyne(name, "--help", home=tmp_path)
    assert result.returncode == 0, result.stderr
    assert f"usage: mnemosyne {name}" in result.stdout
    assert "Traceback" not in result.stderr
    if name not in ("django", "shell", "migrate", "check", "createsuperuser"):
        # Django's options that mean nothing to Mnemosyne's own commands are left out.
        assert "--settings" not in result.stdout and "--pythonpath" not in result.stdout
    for sub in SUBCOMMANDS.get(name, []):
        nested = _mnemosyne(name, sub, "--help", home=tmp_path)
        assert nested.returncode == 0, nested.stderr
        assert f"usage: mnemosyne {name} {sub}" in nested.stdout


def test_djangos_own_commands_stay_reachable(tmp_path) -> None:
    listing = _mnemosyne("django", "--help", home=tmp_path)
    assert listing.returncode == 0, listing.stderr
    assert listing.stdout.startswith("usage: mnemosyne django <command>")
    assert "sqlflush" in listing.stdout and "axes_reset" in listing.stdout
    assert "starting the embedded database" not in listing.stderr
    one = _mnemosyne("django", "sqlflush", "--help", home=tmp_path)
    assert one.returncode == 0 and "usage: mnemosyne django sqlflush" in one.stdout


def test_commands_that_set_django_up_say_so_first(tmp_path) -> None:
    result = _mnemosyne("tenant", "--help", home=tmp_path, extra_env={"DEBUG": "maybe"})
    assert result.returncode == 0  # --help is answered before the set-up
    failed = _mnemosyne("check", home=tmp_path, extra_env={"DEBUG": "maybe"})
    lines = failed.stderr.splitlines()
    assert lines[0] == "mnemosyne check: loading Mnemosyne (settings, models, text analysis) ..."
    assert lines[1:] == ["mnemosyne check: configuration error: DEBUG='maybe' is not a boolean "
                         "(use 1/0, true/false, yes/no, on/off)"]  # fmt: skip
    assert failed.returncode == 2


# -- errors: one line, naming the argument, exit code 2 -----------------------------------------


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["apikey", "create"], ["mnemosyne apikey create", "tenant, name"]),
        (["apikey", "create", "acme", "k", "--expires", "soon"], ["--expires", "'soon'"]),
        (["apikey", "create", "acme", "k", "--expires", "2001-01-01"], ["not in the future"]),
        (["apikey", "create", "acme", "k", "--scope", "read"], ["--scope", "--read-only"]),
        (["apikey", "create", "acme", "k", "--read-only", "--write-only"], ["--write-only"]),
        (["apikey", "revoke", "acme", "seven"], ["key_id", "'seven'"]),
        (["tenant", "frobnicate"], ["'frobnicate'", "rename"]),
        (["tenant", "rename", "acme"], ["name"]),
        (["export", "acme", "--out", "x", "--since", "yesterday"], ["--since", "yesterday"]),
        (["up", "--web-workers", "0"], ["--web-workers", "less than 1"]),
        (["status", "--verbose"], ["--verbose"]),
        (["stop", "now"], ["unrecognized arguments: now"]),
        (["hermes", "install"], ["mnemosyne hermes install", "--url"]),
        (["mcp", "--timeout", "soon"], ["--timeout", "'soon'"]),
        (["--frobnicate"], ["--frobnicate"]),
    ],
)
def test_a_bad_argument_is_one_line_naming_it(args: list[str], words: list[str], tmp_path):
    line = _one_line_error(_mnemosyne(*args, home=tmp_path / "absent"), *words)
    assert line.startswith("mnemosyne")
    assert not (tmp_path / "absent").exists()  # refused before anything was set up


def test_an_unknown_command_is_one_line_with_a_suggestion(tmp_path) -> None:
    _one_line_error(_mnemosyne("tenants", home=tmp_path), "'tenants'", "mnemosyne tenant")


# -- status and stop create nothing --------------------------------------------------------------


def test_status_and_stop_create_nothing(tmp_path) -> None:
    home = tmp_path / "nowhere"
    status = _mnemosyne("status", home=home)
    assert status.returncode == 3
    assert "running: no (the data directory does not exist)" in status.stdout
    stop = _mnemosyne("stop", home=home)
    assert stop.returncode == 0 and "not running" in stop.stdout
    assert not home.exists()


def test_status_of_an_existing_directory_says_not_running(tmp_path) -> None:
    before = sorted(tmp_path.rglob("*"))
    status = _mnemosyne("status", home=tmp_path, extra_env={"DATABASE_URL": None})
    assert status.returncode == 3
    assert "running: no" in status.stdout and "embedded PostgreSQL, stopped" in status.stdout
    assert sorted(tmp_path.rglob("*")) == before


# -- what the commands do (in this process, against the test database) --------------------------


def _run(capsys, *args: str) -> tuple[int, str, str]:
    from memoryadmin.cli import run

    code = run(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_key_with_a_scope_read_only_and_an_expiry(tenant, capsys) -> None:
    from django.utils import timezone

    from tenants.models import ApiKey
    from tenants.scope import tenant_scope
    from tests.api_fixtures import bearer

    code, out, err = _run(
        capsys, "apikey", "create", "acme", "reader", "--scope", "team:research",
        "--read-only", "--expires", "30d",
    )  # fmt: skip
    assert code == 0, err
    token = out.strip()
    assert "read; scope team:research and below; expires" in err
    with tenant_scope(tenant):
        key = ApiKey.objects.for_tenant(tenant).get(name="reader")
    assert key.scopes == ["read"] and key.scope_prefix == "team:research"
    assert timedelta(days=29) < key.expires_at - timezone.now() <= timedelta(days=30)
    agent = bearer(token)
    refused = agent.post("/api/v1/facts", {"content": "x", "scope": "team:research"}, "json")
    assert refused.status_code == 403
    assert agent.post("/api/v1/recall", {"query": "x"}, "json").status_code == 200
    code, out, _ = _run(capsys, "apikey", "list", "acme")
    assert code == 0
    assert out.split("\t")[3:] == [
        "read",
        "active",
        "team:research",
        f"{key.expires_at:%Y-%m-%d}\n",
    ]


def test_a_refused_request_is_one_line_with_exit_code_2(tenant, capsys) -> None:
    code, _, err = _run(capsys, "apikey", "create", "nowhere", "x")
    assert code == 2 and err == "mnemosyne apikey: tenant nowhere not found\n"
    code, _, err = _run(capsys, "apikey", "create", "acme", "x", "--scope", "team:bad//path")
    assert code == 2 and err.startswith("mnemosyne apikey: --scope: ") and err.count("\n") == 1
    code, _, err = _run(capsys, "tenant", "create", "Not A Slug", "X")
    assert code == 2 and err.startswith("mnemosyne tenant: SLUG: ") and err.count("\n") == 1


def test_tenant_rename(tenant, capsys) -> None:
    code, out, _ = _run(capsys, "tenant", "rename", "acme", "Acme Research")
    assert code == 0 and out == "tenant acme is now called Acme Research\n"
    tenant.refresh_from_db()
    assert tenant.name == "Acme Research"


def test_tenant_delete_asks_for_the_slug_and_respects_legal_hold(
    tenant, other_tenant, capsys, monkeypatch
) -> None:
    from tenants.actors import Actor
    from tenants.inputs import retention_changes
    from tenants.models import Tenant
    from tenants.services import retention_policy_update

    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    code, _, err = _run(capsys, "tenant", "delete", "acme")
    assert code == 2 and err.startswith("mnemosyne tenant: --confirm: type the tenant's short")
    code, _, err = _run(capsys, "tenant", "delete", "acme", "--confirm", "globex")
    assert code == 2 and "--confirm" in err
    retention_policy_update(
        tenant=tenant, actor=Actor.job("tests"), changes=retention_changes({"legal_hold": True})
    )
    code, _, err = _run(capsys, "tenant", "delete", "acme", "--confirm", "acme")
    assert code == 2 and err.startswith("mnemosyne tenant: legal hold: ")
    assert Tenant.objects.filter(slug="acme").exists()
    retention_policy_update(
        tenant=tenant, actor=Actor.job("tests"), changes=retention_changes({"legal_hold": False})
    )
    code, out, _ = _run(capsys, "tenant", "delete", "acme", "--confirm", "acme")
    assert code == 0 and out.startswith("tenant acme deleted")
    assert not Tenant.objects.filter(slug="acme").exists()
    assert Tenant.objects.filter(slug="globex").exists()


def test_tenant_delete_at_a_terminal_asks(tenant, capsys, monkeypatch) -> None:
    from tenants.models import Tenant

    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    monkeypatch.setattr("builtins.input", lambda prompt: "acme ")
    code, out, _ = _run(capsys, "tenant", "delete", "acme")
    assert code == 0 and not Tenant.objects.filter(slug="acme").exists()
