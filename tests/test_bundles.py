"""Bundles: export and import (idempotent, all or nothing, vectors when the model matches),
restoring archived facts from their bundle, and damaged bundles refused with the record named."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from facts import services
from facts.bundles import BundleError, bundle_open, bundle_paths
from facts.embedding import facts_embed_batch
from facts.inputs import fact_draft
from facts.models import Entity, Fact, FactEntity, FactVector, Feedback, Status
from facts.selectors.facts import fact_history
from facts.transfer import tenant_export, tenant_import
from tenants.actors import Actor
from tenants.inputs import retention_changes
from tenants.scope import tenant_scope
from tenants.services import retention_policy_update

pytestmark = pytest.mark.django_db
ACTOR = Actor.job("tests")


@pytest.fixture
def filled(tenant, owner_actor, settings):
    settings.MNEMOSYNE_ENTITY_EXTRACTOR = "tests.extractors.capitalised_people"
    facts = [
        services.fact_add(
            tenant=tenant, actor=owner_actor, draft=fact_draft({"content": text, "scope": scope})
        ).fact
        for text, scope in (
            ("Alice prefers green tea", "user:alice"),
            ("Bob maintains the billing service", "project:billing"),
            ("Alice and Bob share the on-call rota", "project:billing"),
        )
    ]
    services.fact_feedback(tenant=tenant, fact_id=facts[0].pk, helpful=True, actor=owner_actor)
    services.fact_add(
        tenant=tenant,
        actor=owner_actor,
        draft=fact_draft(
            {
                "content": "Carol: shall we ship on Friday?",
                "kind": "turn",
                "session_id": "s1",
                "speaker": "Carol",
            }
        ),
    )
    facts_embed_batch(tenant=tenant)
    return facts


def _counts(tenant) -> dict[str, int]:
    with tenant_scope(tenant):
        return {
            "facts": Fact.objects.for_tenant(tenant).count(),
            "entities": Entity.objects.for_tenant(tenant).count(),
            "links": FactEntity.objects.for_tenant(tenant).count(),
            "feedback": Feedback.objects.for_tenant(tenant).count(),
            "vectors": FactVector.objects.for_tenant(tenant).count(),
        }


def _vectors_by_text(tenant) -> dict[str, tuple[str, list[float]]]:
    with tenant_scope(tenant):
        vectors = {v.fact_id: v.embedding for v in FactVector.objects.for_tenant(tenant)}
        return {
            f.content: (f.scope, [round(float(x), 5) for x in vectors[f.pk][:4]])
            for f in Fact.objects.for_tenant(tenant)
        }


def _search_vectors(tenant) -> dict[str, str]:
    with tenant_scope(tenant):
        return {f.content: str(f.search_vector) for f in Fact.objects.for_tenant(tenant)}


def test_export_then_import_into_another_tenant_twice(filled, tenant, other_tenant, tmp_path):
    stem = tmp_path / "acme"
    summary = tenant_export(tenant=tenant, out=stem, actor=ACTOR)
    assert summary.counts["fact"] == 4 and summary.counts["vector"] == 4
    assert all(p.exists() for p in bundle_paths(stem))
    first = tenant_import(tenant=other_tenant, path=stem, actor=ACTOR)
    assert (first.added, first.exists, first.vectors_kept, first.to_embed) == (4, 0, 4, 0)
    assert _counts(other_tenant) == _counts(tenant)
    assert _search_vectors(other_tenant) == _search_vectors(tenant)  # found by full text too
    second = tenant_import(tenant=other_tenant, path=stem, actor=ACTOR)
    assert (second.added, second.exists) == (0, 4)  # importing twice adds nothing
    assert _counts(other_tenant) == _counts(tenant)
    with tenant_scope(other_tenant):
        alice = Fact.objects.for_tenant(other_tenant).get(content="Alice prefers green tea")
    assert (alice.helpful_count, alice.scope) == (1, "user:alice")
    assert alice.embedding_model  # its vector came along: no embedding needed
    actions = [e.action for e in fact_history(tenant=other_tenant, fact_id=alice.pk)]
    assert actions == ["create", "feedback", "import"]  # its history came along


def test_an_import_in_many_rounds_keeps_every_fact_its_vector_and_links(
    filled, tenant, other_tenant, tmp_path, monkeypatch
):
    """Facts are written in rounds: with a round of 2, vectors, links, feedback and history
    still reach the right facts across the rounds' edges, and the second import adds nothing."""
    from facts import transfer

    more = [f"Dana keeps note {n} of the harbour log" for n in range(7)]
    for text in more:
        services.fact_add(
            tenant=tenant, actor=ACTOR,
            draft=fact_draft({"content": text, "scope": "project:harbour"}),
        )  # fmt: skip
    while facts_embed_batch(tenant=tenant):
        pass
    stem = tmp_path / "rounds"
    tenant_export(tenant=tenant, out=stem, actor=ACTOR)
    monkeypatch.setattr(transfer, "IMPORT_BATCH", 2)
    first = tenant_import(tenant=other_tenant, path=stem, actor=ACTOR)
    assert (first.added, first.exists, first.vectors_kept, first.to_embed) == (11, 0, 11, 0)
    assert _counts(other_tenant) == _counts(tenant)
    assert _vectors_by_text(other_tenant) == _vectors_by_text(tenant)  # each its own vector
    with tenant_scope(other_tenant):
        bob = Fact.objects.for_tenant(other_tenant).get(content="Bob maintains the billing service")
        links = FactEntity.objects.for_tenant(other_tenant).filter(fact=bob)
        assert [link.entity.name for link in links] == ["Bob"]
    second = tenant_import(tenant=other_tenant, path=stem, actor=ACTOR)
    assert (second.added, second.exists, second.vectors_kept) == (0, 11, 0)
    assert _counts(other_tenant) == _counts(tenant)


def test_a_scope_export_and_a_different_model_reembeds(filled, tenant, other_tenant, tmp_path):
    stem = tmp_path / "billing"
    summary = tenant_export(tenant=tenant, out=stem, actor=ACTOR, scope="project:billing")
    assert summary.counts["fact"] == 2
    manifest_path = bundle_paths(stem)[2]
    manifest = json.loads(manifest_path.read_text())
    manifest["model"] = "some-other-model"
    manifest_path.write_text(json.dumps(manifest))
    result = tenant_import(tenant=other_tenant, path=stem, actor=ACTOR)
    assert (result.added, result.vectors_kept, result.to_embed) == (2, 0, 2)
    with tenant_scope(other_tenant):
        assert not FactVector.objects.for_tenant(other_tenant).exists()
        assert set(
            Fact.objects.for_tenant(other_tenant).values_list("embedding_model", flat=True)
        ) == {""}
    assert facts_embed_batch(tenant=other_tenant) == 2  # the workers embed them


def _damage(stem: Path, how: str) -> None:
    data, index, manifest = bundle_paths(stem)
    if how == "truncated":
        data.write_bytes(data.read_bytes()[:-10])
    elif how == "flipped":
        blob = bytearray(data.read_bytes())
        entry = json.loads(index.read_text().splitlines()[3])
        blob[entry["offset"] + entry["length"] // 2] ^= 0x40
        data.write_bytes(bytes(blob))
    elif how == "manifest":
        raw = json.loads(manifest.read_text())
        raw["counts"]["fact"] += 1
        manifest.write_text(json.dumps(raw))
    elif how == "version":
        raw = json.loads(manifest.read_text())
        raw["version"] = 99
        manifest.write_text(json.dumps(raw))


@pytest.mark.parametrize(
    ("how", "named"),
    [
        ("truncated", r"record \d+ \((fact|vector) \d+\).*truncated"),
        ("flipped", r"record 3 \(\w+ \d+\).*CRC32"),
        ("manifest", r"manifest: the index's record counts"),
        ("version", r"manifest: format version 99"),
    ],
)
def test_a_damaged_bundle_is_refused_naming_the_record(
    filled, tenant, other_tenant, tmp_path, how, named
) -> None:
    stem = tmp_path / "acme"
    tenant_export(tenant=tenant, out=stem, actor=ACTOR)
    _damage(stem, how)
    with pytest.raises(BundleError, match=named):
        tenant_import(tenant=other_tenant, path=stem, actor=ACTOR)
    assert _counts(other_tenant) == dict.fromkeys(_counts(other_tenant), 0)
    out = StringIO()
    with pytest.raises(CommandError, match="refused, nothing imported"):
        call_command("import", str(stem), tenant=other_tenant.slug, stdout=out, stderr=out)


def test_an_import_that_fails_halfway_leaves_nothing(filled, tenant, other_tenant, tmp_path):
    stem = tmp_path / "acme"
    tenant_export(tenant=tenant, out=stem, actor=ACTOR)
    # A bundle whose checksums hold but whose last fact cannot be stored (no content).
    reader = bundle_open(stem)
    records = list(reader.records())
    last = max(i for i, r in enumerate(records) if r.type == "fact")
    broken = records[last].body.copy()
    del broken["content"]
    records[last] = records[last].__class__("fact", records[last].id, broken)
    from facts.bundles import bundle_write

    bundle_write(stem=tmp_path / "broken", records=records, tenant="acme",
                 model=reader.manifest.model)  # fmt: skip
    with pytest.raises(Exception, match="content"):
        tenant_import(tenant=other_tenant, path=tmp_path / "broken", actor=ACTOR)
    assert _counts(other_tenant)["facts"] == 0


def test_archived_facts_come_back_from_their_bundle(tenant, owner_actor, settings, tmp_path):
    from facts.retention import retention_run_execute, retention_run_start

    settings.MNEMOSYNE_ARCHIVE_DIR = tmp_path / "archives"
    fact = services.fact_add(
        tenant=tenant,
        actor=owner_actor,
        draft=fact_draft({"content": "The VPN endpoint is vpn.acme.test", "trust": 0.1}),
    ).fact
    retention_policy_update(
        tenant=tenant, actor=owner_actor, changes=retention_changes({"archive_below_trust": 0.3})
    )
    run, _ = retention_run_start(tenant=tenant, actor=owner_actor)
    retention_run_execute(tenant=tenant, run_id=run.pk)
    with tenant_scope(tenant):
        archived = Fact.objects.for_tenant(tenant).get(pk=fact.pk)
    assert archived.status == Status.ARCHIVED
    stem = settings.MNEMOSYNE_ARCHIVE_DIR / str(tenant.pk) / archived.archive_bundle
    out = StringIO()
    call_command("import", str(stem) + ".idx", tenant="acme", stdout=out, stderr=StringIO())
    assert "1 restored from the archive" in out.getvalue()
    with tenant_scope(tenant):
        assert Fact.objects.for_tenant(tenant).get(pk=fact.pk).status == Status.ACTIVE
    history = fact_history(tenant=tenant, fact_id=fact.pk)
    assert [e.action for e in history][-2:] == ["archive", "restore"]


def test_the_export_command_prints_a_summary(filled, tenant, tmp_path) -> None:
    out, err = StringIO(), StringIO()
    call_command("export", "acme", out=str(tmp_path / "b"), stdout=out, stderr=err)
    assert "Exported 4 facts, 4 entities, 4 vectors from acme" in out.getvalue()
    assert "exporting [" in err.getvalue()
    with pytest.raises(CommandError, match="no tenant"):
        call_command("export", "nobody", out=str(tmp_path / "c"), stdout=out)


def test_the_api_streams_a_bundle_out_and_takes_it_in(world, owner, auditor, outsider) -> None:
    import io
    import tarfile

    from tests.api_fixtures import bearer, signed_in

    response = signed_in(auditor).get("/api/v1/tenants/acme/bundle/export?scope=user:alice")
    assert response.status_code == 200 and response["Content-Type"] == "application/x-tar"
    blob = b"".join(response.streaming_content)
    names = tarfile.open(fileobj=io.BytesIO(blob)).getnames()
    assert names == ["bundle.dat", "bundle.idx", "bundle.manifest.json"]
    assert signed_in(outsider).get("/api/v1/tenants/acme/bundle/export").status_code == 404
    assert bearer(world.tokens["write"]).get("/api/v1/bundle/export").status_code == 403

    url = "/api/v1/tenants/globex/bundle/import"
    admin = signed_in(outsider)  # the admin of globex takes acme's bundle in
    taken = admin.post(url, data=blob, content_type="application/x-tar")
    assert taken.status_code == 200 and taken.json()["added"] == 1, taken.content
    again = admin.post(url, data=blob, content_type="application/x-tar").json()
    assert (again["added"], again["exists"]) == (0, 1)
    damaged = bytearray(blob)
    damaged[512 + 20] ^= 0xFF  # inside bundle.dat's first record
    refused = admin.post(url, data=bytes(damaged), content_type="application/x-tar")
    assert refused.status_code == 400 and refused.json()["field"] == "bundle"
    assert "record 0" in refused.json()["message"]
    assert admin.post(url, data=b"not a tar", content_type="application/x-tar").status_code == 400
    assert (
        signed_in(auditor)
        .post("/api/v1/tenants/acme/bundle/import", data=blob, content_type="application/x-tar")
        .status_code
        == 403
    )
    assert (
        signed_in(owner).post(url, data=blob, content_type="application/x-tar").status_code == 404
    )


def test_the_facts_page_exports_and_imports_a_bundle(world, owner, auditor) -> None:
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.test import Client

    client = Client()
    client.force_login(owner)
    response = client.get("/t/acme/facts/export-bundle")
    assert response.status_code == 200
    blob = b"".join(response.streaming_content)
    upload = SimpleUploadedFile("acme.bundle.tar", blob, content_type="application/x-tar")
    done = client.post("/t/acme/facts/import-bundle", {"bundle": upload}, follow=True)
    assert "0 facts added, 2 already there" in done.content.decode()
    bad = SimpleUploadedFile("x.tar", b"garbage", content_type="application/x-tar")
    refused = client.post("/t/acme/facts/import-bundle", {"bundle": bad}, follow=True)
    assert "not a tar of a bundle" in refused.content.decode()
    reader = Client()
    reader.force_login(auditor)
    assert reader.get("/t/acme/facts/export-bundle").status_code == 200
    assert reader.post("/t/acme/facts/import-bundle").status_code == 403


@pytest.mark.django_db(transaction=True)
def test_an_export_reads_one_snapshot_while_facts_change(
    tenant, owner_actor, tmp_path, monkeypatch
) -> None:
    """Read in chunks, an export still sees the tenant as it was when it began: a fact that
    another connection changes between two chunks is exported as it was."""
    from django.db import connections

    import facts.transfer

    facts_ = [
        services.fact_add(
            tenant=tenant, actor=owner_actor, draft=fact_draft({"content": f"Runbook step {i}"})
        ).fact
        for i in range(4)
    ]
    monkeypatch.setattr(facts.transfer, "CHUNK", 2)
    other = connections.create_connection("default")

    def meanwhile(done: int, total: int) -> None:
        if done == 2:  # between the chunks: another session changes the tenant and commits
            with other.cursor() as cursor:
                cursor.execute("SELECT set_config('app.tenant_id', %s, false)", [str(tenant.pk)])
                cursor.execute(
                    "UPDATE facts_fact SET content = 'Runbook step rewritten' WHERE id = %s",
                    [facts_[3].pk],
                )

    try:
        summary = tenant_export(
            tenant=tenant, out=tmp_path / "snap", actor=ACTOR, progress=meanwhile
        )
    finally:
        other.close()
    texts = [r.body["content"] for r in bundle_open(tmp_path / "snap").records(["fact"])]
    assert summary.counts["fact"] == 4
    assert texts == [f"Runbook step {i}" for i in range(4)]
    with tenant_scope(tenant):
        assert Fact.objects.for_tenant(tenant).get(pk=facts_[3].pk).content == (
            "Runbook step rewritten"
        )


@pytest.mark.django_db(transaction=True)
def test_an_import_has_the_tables_it_made_stale_analysed(
    filled, tenant, other_tenant, tmp_path, monkeypatch
):
    """With its vectors kept, no embedding task runs after an import to have the tables it
    changed analysed (as it does after embedding a bulk load): the import does."""
    from facts import embedding

    def analysed() -> object:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT last_analyze FROM pg_stat_all_tables WHERE relname = 'facts_fact'"
            )
            return cursor.fetchone()[0]

    stem = tmp_path / "stats"
    tenant_export(tenant=tenant, out=stem, actor=ACTOR)
    monkeypatch.setattr(embedding, "ANALYZE_MIN_CHANGES", 3)
    monkeypatch.setattr(embedding, "ANALYZE_MIN_FRACTION", 0.0)
    monkeypatch.setattr(embedding, "IMPORT_ANALYZE_FRACTION", 0.0)
    embedding.tables_analyze_own_changes()  # what came before: analysed now, not by the import
    before = analysed()
    result = tenant_import(tenant=other_tenant, path=stem, actor=ACTOR)
    assert result.added >= 3 and result.to_embed == 0
    assert analysed() not in (None, before)
