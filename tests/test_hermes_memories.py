"""What a Hermes profile already remembers comes along: a holographic memory_store.db made by the
real hermes-agent provider (trust, tags, entities) and the MEMORY.md / USER.md entries."""

from __future__ import annotations

import json
import subprocess
from contextlib import redirect_stdout
from io import StringIO
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from facts.importers import hermes_profile_memories, holographic_import, memory_files_import
from facts.models import Entity, Fact, FactEntity
from tenants.actors import Actor
from tenants.errors import InvalidInput
from tenants.scope import tenant_scope

pytestmark = pytest.mark.django_db
ACTOR = Actor.job("tests")


def _holographic_profile(home: Path) -> dict[str, int]:
    from plugins.memory.holographic import HolographicMemoryProvider

    provider = HolographicMemoryProvider(config={"db_path": str(home / "memory_store.db")})
    provider.initialize("s", hermes_home=str(home))
    ids = {}
    try:
        for content, category, tags in (
            ("Alice Chen leads the Northstar project", "project", "team,lead"),
            ("Alice Chen prefers the Vim editor", "user_pref", "editor"),
            ("The staging database is restored every Sunday", "general", ""),
        ):
            answer = provider.handle_tool_call(
                "fact_store",
                {"action": "add", "content": content, "category": category, "tags": tags},
            )
            ids[content] = json.loads(answer)["fact_id"]
        for _ in range(2):
            provider.handle_tool_call(
                "fact_feedback",
                {"action": "unhelpful", "fact_id": ids["Alice Chen prefers the Vim editor"]},
            )
        provider.handle_tool_call(
            "fact_feedback",
            {"action": "helpful", "fact_id": ids["Alice Chen leads the Northstar project"]},
        )
    finally:
        provider.shutdown()
    return ids


def _memory_files(home: Path) -> None:
    memories = home / "memories"
    memories.mkdir(parents=True)
    (memories / "MEMORY.md").write_text(
        "The repo uses uv, not pip\n§\nCI runs on the self-hosted runner\n§\n", encoding="utf-8"
    )
    (memories / "USER.md").write_text("User prefers short answers in Chinese", encoding="utf-8")


def test_a_holographic_store_imports_with_trust_tags_and_entities(tenant, tmp_path) -> None:
    _holographic_profile(tmp_path)
    result = holographic_import(tenant=tenant, path=tmp_path / "memory_store.db", actor=ACTOR)
    assert (result.added, result.exists) == (3, 0) and result.entities_linked >= 2
    with tenant_scope(tenant):
        facts = {f.content: f for f in Fact.objects.for_tenant(tenant)}
        lead = facts["Alice Chen leads the Northstar project"]
        vim = facts["Alice Chen prefers the Vim editor"]
        assert lead.trust_score == pytest.approx(0.55) and lead.helpful_count == 1
        assert vim.trust_score == pytest.approx(0.3) and vim.category == "user_pref"
        assert lead.tags == ["team", "lead"] and lead.category == "project"
        assert lead.metadata["imported_from"] == "holographic"
        # Importance reads the counts and trust that came along, at once.
        from facts.importance import importance_recompute

        staging = facts["The staging database is restored every Sunday"]
        assert lead.importance > staging.importance > vim.importance
        assert importance_recompute(tenant=tenant) == 0  # nothing left stale
        alice = Entity.objects.for_tenant(tenant).get(normalized="alice chen")
        linked = set(
            FactEntity.objects.for_tenant(tenant)
            .filter(entity=alice)
            .values_list("fact_id", flat=True)
        )
        assert linked == {lead.pk, vim.pk}
    again = holographic_import(tenant=tenant, path=tmp_path / "memory_store.db", actor=ACTOR)
    assert (again.added, again.exists) == (0, 3)  # importing twice adds nothing


def test_memory_files_become_facts(tenant, tmp_path) -> None:
    _memory_files(tmp_path)
    result = memory_files_import(tenant=tenant, memories_dir=tmp_path / "memories", actor=ACTOR)
    assert result.added == 3
    with tenant_scope(tenant):
        user = Fact.objects.for_tenant(tenant).get(content="User prefers short answers in Chinese")
        notes = Fact.objects.for_tenant(tenant).filter(tags=["memory"]).count()
    assert user.category == "user_pref" and notes == 2


def test_a_broken_store_is_refused_and_nothing_is_imported(tenant, tmp_path) -> None:
    (tmp_path / "memory_store.db").write_bytes(b"not sqlite at all" * 100)
    with pytest.raises(InvalidInput, match="not a holographic store"):
        holographic_import(tenant=tenant, path=tmp_path / "memory_store.db", actor=ACTOR)
    with tenant_scope(tenant):
        assert not Fact.objects.for_tenant(tenant).exists()


@pytest.mark.django_db(transaction=True)
def test_install_brings_the_memories_along_through_the_server(
    tenant, other_tenant, system_actor, live_server, tmp_path
) -> None:
    from tenants.services import apikey_create
    from tests.helpers import PYTHON, REPO, child_env

    home = tmp_path / "hermes"
    home.mkdir()
    _holographic_profile(home)
    _memory_files(home)
    assert hermes_profile_memories(home) == {"memory_store.db": 3, "MEMORY.md": 2, "USER.md": 1}
    token = apikey_create(tenant=tenant, name="hermes", actor=system_actor).token

    def mnemosyne_hermes(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [PYTHON, "-m", "memoryadmin.cli", "hermes", *args,
             "--url", live_server.url, "--api-key", token, "--hermes-home", str(home)],
            # The profile's host holds no database credential: only the URL and the key.
            env=child_env(DATABASE_URL=None, MNEMOSYNE_HOME="/nonexistent", SECRET_KEY=None),
            cwd=REPO, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
        )  # fmt: skip

    installed = mnemosyne_hermes("install", "--import-memories", "yes")
    assert installed.returncode == 0, installed.stderr
    assert (
        "memories: imported 6 (0 were there already; 2 entity links) from memory_store.db, "
        "MEMORY.md, USER.md into the whole tenant (no scope)" in installed.stdout
    )
    again = mnemosyne_hermes("import")
    assert again.returncode == 0, again.stderr
    assert "memories: imported 0 (6 were there already" in again.stdout
    with tenant_scope(tenant):
        assert Fact.objects.for_tenant(tenant).count() == 6
        vim = Fact.objects.for_tenant(tenant).get(content="Alice Chen prefers the Vim editor")
        assert vim.trust_score == pytest.approx(0.3)
    with tenant_scope(other_tenant):
        assert not Fact.objects.for_tenant(other_tenant).exists()


@pytest.mark.django_db(transaction=True)
def test_import_lands_in_the_scope_the_profile_reads_and_says_so(
    tenant, system_actor, live_server, tmp_path
) -> None:
    from hermes_provider.installer import main
    from tenants.services import apikey_create

    _memory_files(tmp_path)
    token = apikey_create(tenant=tenant, name="hermes", actor=system_actor).token

    def run(*args: str) -> tuple[int, str]:
        out = StringIO()
        with redirect_stdout(out):
            code = main([*args, "--hermes-home", str(tmp_path)])
        return code, out.getvalue()

    code, _ = run("install", "--url", live_server.url, "--api-key", token,
                  "--scope", "team:hermes", "--import-memories", "no")  # fmt: skip
    assert code == 0
    # The URL, the key and the scope are the profile's own.
    code, said = run("import")
    assert code == 0, said
    assert "imported 3 (0 were there already; 0 entity links) from MEMORY.md, USER.md into " \
        "scope team:hermes" in said  # fmt: skip
    with tenant_scope(tenant):
        scopes = set(Fact.objects.for_tenant(tenant).values_list("scope", flat=True))
    assert scopes == {"team:hermes"}
    # --scope puts them elsewhere, on purpose.
    code, said = run("import", "--scope", "team:archive")
    assert code == 0 and "into scope team:archive" in said, said
    with tenant_scope(tenant):
        archived = Fact.objects.for_tenant(tenant).filter(scope="team:archive").count()
    assert archived == 3
    # A profile that was never connected is told what to give.
    other = tmp_path / "other"
    other.mkdir()
    out, err = StringIO(), StringIO()
    from contextlib import redirect_stderr

    with redirect_stdout(out), redirect_stderr(err):
        assert main(["import", "--hermes-home", str(other)]) == 1
    assert "give --url and --api-key" in err.getvalue()


@pytest.mark.django_db(transaction=True)
def test_install_without_a_terminal_says_how_to_import_later(
    tenant, system_actor, live_server, tmp_path
) -> None:
    from hermes_provider.installer import main
    from tenants.services import apikey_create

    _memory_files(tmp_path)
    token = apikey_create(tenant=tenant, name="hermes", actor=system_actor).token
    out = StringIO()
    with redirect_stdout(out):
        code = main(["install", "--url", live_server.url, "--api-key", token,
                     "--hermes-home", str(tmp_path)])  # fmt: skip
    assert code == 0
    assert "this profile remembers 2 in MEMORY.md, 1 in USER.md; bring them along with" in (
        out.getvalue()
    )
    with tenant_scope(tenant):
        assert not Fact.objects.for_tenant(tenant).exists()


@pytest.mark.django_db(transaction=True)
def test_the_import_endpoint_refuses_what_is_not_a_store_and_a_read_key(
    tenant, system_actor, tmp_path
) -> None:
    from tenants.services import apikey_create
    from tests.api_fixtures import bearer

    write = bearer(apikey_create(tenant=tenant, name="w", actor=system_actor).token)
    read = bearer(apikey_create(tenant=tenant, name="r", actor=system_actor, scopes=["read"]).token)
    junk = SimpleUploadedFile("memory_store.db", b"not sqlite at all" * 100)
    answer = write.post("/api/v1/agent/profile-import", {"memory_store": junk}, format="multipart")
    assert answer.status_code == 400
    assert answer.json()["field"] == "memory_store"
    assert "is not a holographic memory_store.db" in answer.json()["message"]
    notes = SimpleUploadedFile("MEMORY.md", "One\n§\nTwo\n".encode())
    refused = read.post("/api/v1/agent/profile-import", {"memory_md": notes}, format="multipart")
    assert refused.status_code == 403
    odd = write.post(
        "/api/v1/agent/profile-import",
        {"photo": SimpleUploadedFile("a.png", b"x")},
        format="multipart",
    )
    assert odd.status_code == 400 and odd.json()["field"] == "photo"
    with tenant_scope(tenant):
        assert not Fact.objects.for_tenant(tenant).exists()


def test_a_store_the_config_puts_elsewhere_comes_along_with_its_unflushed_writes(
    tenant, tmp_path
) -> None:
    """The profile's config.yaml may put the holographic store anywhere (`db_path`, with
    $HERMES_HOME); and facts still in SQLite's write-ahead log, while Hermes runs, count too."""
    from plugins.memory.holographic import HolographicMemoryProvider

    from hermes_provider.memories import holographic_store, profile_memories, store_snapshot

    home = tmp_path / "hermes"
    (home / "stores").mkdir(parents=True)
    (home / "config.yaml").write_text(
        "plugins:\n  hermes-memory-store:\n    db_path: $HERMES_HOME/stores/team.db\n",
        encoding="utf-8",
    )
    assert holographic_store(home) == home / "stores" / "team.db"
    provider = HolographicMemoryProvider(config={"db_path": str(home / "stores" / "team.db")})
    provider.initialize("s", hermes_home=str(home))
    try:  # Hermes still running: its writes may sit in team.db-wal
        for content in ("Deploys need two approvals", "The on-call phone is in drawer 3"):
            provider.handle_tool_call("fact_store", {"action": "add", "content": content})
        assert profile_memories(home) == {"team.db": 2}
        copy = store_snapshot(holographic_store(home), tmp_path)
        result = holographic_import(tenant=tenant, path=copy, actor=ACTOR)
    finally:
        provider.shutdown()
    assert result.added == 2
    with tenant_scope(tenant):
        assert set(Fact.objects.for_tenant(tenant).values_list("content", flat=True)) == {
            "Deploys need two approvals",
            "The on-call phone is in drawer 3",
        }
