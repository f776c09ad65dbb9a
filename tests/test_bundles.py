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
from facts.bundles import BundleError, bundle_open, bundle_paths, manifest_checksum
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
    del manifest["checksum"]
    manifest["checksum"] = manifest_checksum(manifest)  # the manifest's own fields, resealed
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
        ("manifest", r"manifest: its fields do not match its checksum"),
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


# -- what an import validates: every record's fields, every manifest field ----------------------


def _rewrite(stem: Path, out: Path, change) -> list:
    """The bundle at `stem` written again at `out` with `change(records)` applied: its
    checksums hold, so only the validation of the records' fields can refuse it."""
    from facts.bundles import bundle_write

    reader = bundle_open(stem)
    records = [r.__class__(r.type, r.id, json.loads(json.dumps(r.body)), r.meta)
               for r in reader.records()]  # fmt: skip
    change(records)
    bundle_write(stem=out, records=records, tenant="acme", model=reader.manifest.model)
    return records


def _first(records: list, type: str) -> int:
    return next(i for i, r in enumerate(records) if r.type == type)


WRONG_FIELDS = [
    ("fact", "trust_score", "high", "must be a number"),
    ("fact", "trust_score", 1.5, "must be a number from 0 to 1"),
    ("fact", "trust_score", True, "must be a number"),
    ("fact", "content", 42, "must be text"),
    ("fact", "content", "  ", "must not be empty"),
    ("fact", "kind", "memo", "must be one of fact, turn"),
    ("fact", "scope", ["user:alice"], "must be text"),
    ("fact", "scope", "x" * 256, "at most 255 characters"),
    ("fact", "position", "3", "must be a whole number"),
    ("fact", "category", 7, "must be one of"),
    ("fact", "tags", "tea", "must be a list of tags"),
    ("fact", "tags", [1, 2], "must be a list of tags"),
    ("fact", "metadata", [], "must be an object"),
    ("fact", "helpful_count", -1, "must be a whole number"),
    ("fact", "retrieval_count", 2**40, "must be a whole number"),
    ("fact", "mention_count", 1.5, "must be a whole number"),
    ("fact", "importance", "very", "must be a number"),
    ("fact", "pinned", "yes", "must be true or false"),
    ("fact", "status", None, "must be text"),
    ("fact", "created_by", {"user": 1}, "must be text"),
    ("fact", "created_at", "yesterday", "ISO 8601"),
    ("fact", "created_at", "2024-01-01T10:00:00", "ISO 8601"),  # no offset
    ("fact", "last_retrieved_at", 1700000000, "ISO 8601"),
    ("fact", "entities", [[1]], r"\[entity id, role\]"),
    ("fact", "entities", [[1, "owner"]], r"\[entity id, role\]"),
    ("fact", "feedback", [{"helpful": "yes", "actor": "job:x"}], r"\[0\]\.helpful: must be"),
    ("fact", "history", [{"action": "boom", "actor": "job:x"}], r"\[0\]\.action: must be one"),
    ("fact", "speaker", "Carol\x00", "NUL character"),
    ("fact", "content", None, "must be text"),
    ("entity", "name", None, "must be text"),
    ("entity", "name", "", "must not be empty"),
    ("entity", "type", "animal", "must be one of"),
    ("entity", "aliases", [None], "must be a list of names"),
    ("vector", "embedding", ["0.1"], "must be a list of numbers"),
    ("vector", "embedding", [0.1, 0.2], "must have"),
    ("vector", "model", 3, "must be text"),
]


@pytest.mark.parametrize(("type", "name", "value", "said"), WRONG_FIELDS)
def test_a_wrongly_typed_field_is_refused_naming_record_and_field(
    filled, tenant, other_tenant, tmp_path, type, name, value, said
) -> None:
    stem = tmp_path / "acme"
    tenant_export(tenant=tenant, out=stem, actor=ACTOR)
    number = {}

    def change(records: list) -> None:
        number["n"] = _first(records, type)
        records[number["n"]].body[name] = value

    records = _rewrite(stem, tmp_path / "bad", change)
    record = records[number["n"]]
    label = rf"record {number['n']} \({type} {record.id}\): {name}"
    with pytest.raises(BundleError, match=rf"{label}.*{said}"):
        tenant_import(tenant=other_tenant, path=tmp_path / "bad", actor=ACTOR)
    assert _counts(other_tenant) == dict.fromkeys(_counts(other_tenant), 0)


def test_a_missing_field_and_a_body_that_is_no_object_are_refused(
    filled, tenant, other_tenant, tmp_path
) -> None:
    stem = tmp_path / "acme"
    tenant_export(tenant=tenant, out=stem, actor=ACTOR)
    _rewrite(stem, tmp_path / "lacking", lambda rs: rs[_first(rs, "fact")].body.pop("kind"))
    with pytest.raises(BundleError, match=r"record \d+ \(fact \d+\): kind: is missing"):
        tenant_import(tenant=other_tenant, path=tmp_path / "lacking", actor=ACTOR)

    def listed(records: list) -> None:
        n = _first(records, "entity")
        records[n] = records[n].__class__("entity", records[n].id, ["Alice"])  # type: ignore[arg-type]

    _rewrite(stem, tmp_path / "listed", listed)
    with pytest.raises(BundleError, match=r"record 0 \(entity \d+\): its body is not an object"):
        tenant_import(tenant=other_tenant, path=tmp_path / "listed", actor=ACTOR)
    assert _counts(other_tenant) == dict.fromkeys(_counts(other_tenant), 0)


@pytest.mark.parametrize(
    ("field", "value"),
    [("tenant", "globex"), ("scope", "user:bob"), ("purpose", "archive"),
     ("created_at", "2020-01-01T00:00:00+00:00"), ("extra", {"since": None, "x": 1}),
     ("model", "some-other-model"), ("counts", {"fact": 4})],
)  # fmt: skip
def test_every_manifest_field_is_covered_by_its_checksum(
    filled, tenant, other_tenant, tmp_path, field, value
) -> None:
    stem = tmp_path / "acme"
    tenant_export(tenant=tenant, out=stem, actor=ACTOR)
    path = bundle_paths(stem)[2]
    manifest = json.loads(path.read_text())
    assert set(manifest) == {"format", "version", "tenant", "scope", "model", "purpose", "counts",
                             "created_at", "files", "extra", "checksum"}  # fmt: skip
    manifest[field] = value
    path.write_text(json.dumps(manifest))
    with pytest.raises(BundleError, match="manifest: its fields do not match its checksum"):
        tenant_import(tenant=other_tenant, path=stem, actor=ACTOR)
    assert _counts(other_tenant)["facts"] == 0


def test_a_version_1_bundle_is_read_without_a_checksum_and_refused_with_one(
    filled, tenant, other_tenant, tmp_path
) -> None:
    """Bundles written before the manifest had its checksum (retention's archives among them)
    are read still; a version 1 manifest that carries a checksum is not one of them."""
    stem = tmp_path / "acme"
    tenant_export(tenant=tenant, out=stem, actor=ACTOR)
    path = bundle_paths(stem)[2]
    manifest = json.loads(path.read_text())
    path.write_text(json.dumps(manifest | {"version": 1}))
    with pytest.raises(BundleError, match="manifest: its fields do not match its checksum"):
        tenant_import(tenant=other_tenant, path=stem, actor=ACTOR)
    del manifest["checksum"]
    path.write_text(json.dumps(manifest | {"version": 1}))
    assert tenant_import(tenant=other_tenant, path=stem, actor=ACTOR).added == 4
    path.write_text(json.dumps(manifest | {"version": 1, "tenant": 7}))
    with pytest.raises(BundleError, match="manifest: its field 'tenant' is missing or not str"):
        tenant_import(tenant=other_tenant, path=stem, actor=ACTOR)


def test_nan_in_a_record_is_refused_as_json(filled, tenant, other_tenant, tmp_path) -> None:
    stem = tmp_path / "acme"
    tenant_export(tenant=tenant, out=stem, actor=ACTOR)
    _rewrite(stem, tmp_path / "nan", lambda rs: rs[_first(rs, "fact")].body.update(
        metadata={"score": float("nan")}))  # fmt: skip
    with pytest.raises(BundleError, match=r"record \d+ \(fact \d+\): its bytes do not decompress"):
        tenant_import(tenant=other_tenant, path=tmp_path / "nan", actor=ACTOR)
    assert _counts(other_tenant)["facts"] == 0


def test_the_api_answers_a_wrongly_typed_field_with_400_naming_it(
    filled, tenant, other_tenant, outsider, tmp_path
) -> None:
    from facts.bundle_tar import bundle_tar_stream
    from tests.api_fixtures import signed_in

    stem = tmp_path / "acme"
    tenant_export(tenant=tenant, out=stem, actor=ACTOR)
    records = _rewrite(
        stem, tmp_path / "bad", lambda rs: rs[_first(rs, "fact")].body.update(trust_score="high")
    )
    n = _first(records, "fact")
    blob = b"".join(bundle_tar_stream(tmp_path / "bad"))
    answer = signed_in(outsider).post(
        "/api/v1/tenants/globex/bundle/import", data=blob, content_type="application/x-tar"
    )
    assert answer.status_code == 400, answer.content
    assert answer.json()["field"] == "bundle"
    assert (
        f"record {n} (fact {records[n].id}): trust_score: must be a number"
        in (answer.json()["message"])
    )
    assert "nothing imported" in answer.json()["message"]
    assert _counts(other_tenant)["facts"] == 0


# Fields that may be null; a corruption to null is no corruption of them.
NULLABLE = {"position", "last_retrieved_at", "archived_at", "created_at", "updated_at", "type",
            "aliases"}  # fmt: skip
# Read by no one: the content hash is computed again from the content, the id is the index's.
UNREAD = {"content_hash", "id"}


def _json_values():
    from hypothesis import strategies as st

    scalars = st.one_of(
        st.none(), st.booleans(), st.integers(-(2**40), 2**40),
        st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=6),
    )  # fmt: skip
    return st.recursive(
        scalars,
        lambda inner: st.one_of(st.lists(inner, max_size=3),
                                st.dictionaries(st.text(max_size=4), inner, max_size=3)),
        max_leaves=6,
    )  # fmt: skip


def _json_kind(value) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return type(value).__name__


def _wrongly_typed(original, value, name: str) -> bool:
    """A value of another JSON type than the field's (numbers are one type; null only where
    the field cannot be null)."""
    if value is None and name in NULLABLE:
        return False
    return _json_kind(value) != _json_kind(original)


@pytest.mark.slow
def test_any_corruption_of_a_valid_bundle_is_refused_with_400_and_nothing_written(
    filled, tenant, other_tenant, outsider, tmp_path
) -> None:
    """Random corruptions of a valid bundle: a byte of one of its files flipped, a file cut
    short or lengthened, a record's field given a value of another type (the checksums made
    to hold), a manifest field changed. Each is answered 400 by the import endpoint, and the
    tenant holds what it held before."""
    import shutil

    from hypothesis import HealthCheck, assume, given, settings
    from hypothesis import strategies as st

    from facts.bundle_tar import bundle_tar_stream
    from facts.models import FactEvent
    from tests.api_fixtures import signed_in

    stem = tmp_path / "acme"
    tenant_export(tenant=tenant, out=stem, actor=ACTOR)
    records = list(bundle_open(stem).records())
    fields = sorted({(i, name) for i, r in enumerate(records) for name in r.body
                     if name not in UNREAD and r.type in ("fact", "entity", "vector")})  # fmt: skip
    client = signed_in(outsider)

    def held() -> tuple:
        with tenant_scope(other_tenant):
            return tuple(_counts(other_tenant).values()), FactEvent.objects.for_tenant(
                other_tenant
            ).count()

    before = held()
    files = st.sampled_from(range(3))
    corruption = st.one_of(
        st.tuples(st.just("flip"), files, st.floats(0, 1, exclude_max=True),
                  st.integers(1, 255)),
        st.tuples(st.just("cut"), files, st.floats(0, 1, exclude_max=True)),
        st.tuples(st.just("append"), files, st.binary(min_size=1, max_size=16)),
        st.tuples(st.just("field"), st.sampled_from(fields), _json_values()),
        st.tuples(st.just("manifest"), st.sampled_from(
            ["tenant", "scope", "model", "purpose", "counts", "created_at", "files", "extra",
             "version", "format", "checksum"]), _json_values()),
    )  # fmt: skip
    rounds = iter(range(10_000))

    @settings(max_examples=60, deadline=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
    @given(corruption)
    def refused(how: tuple) -> None:
        work = tmp_path / f"round{next(rounds)}"
        work.mkdir()
        copy = work / "bundle"
        for source, target in zip(bundle_paths(stem), bundle_paths(copy), strict=True):
            shutil.copy(source, target)
        paths = bundle_paths(copy)
        if how[0] in ("flip", "cut", "append"):
            path = paths[how[1]]
            blob = bytearray(path.read_bytes())
            if how[0] == "flip":
                blob[int(how[2] * len(blob))] ^= how[3]
            elif how[0] == "cut":
                blob = blob[: int(how[2] * len(blob))]
            else:
                blob += how[2]
            if how[1] == 2:  # the manifest: only a change of what it says is a corruption
                try:
                    assume(json.loads(bytes(blob)) != json.loads(path.read_bytes()))
                except ValueError:
                    pass
            path.write_bytes(bytes(blob))
        elif how[0] == "field":
            (number, name), value = how[1], how[2]
            assume(_wrongly_typed(records[number].body[name], value, name))
            _rewrite(stem, copy, lambda rs: rs[number].body.__setitem__(name, value))
        else:
            manifest = json.loads(paths[2].read_text())
            assume(manifest[how[1]] != how[2])
            manifest[how[1]] = how[2]
            paths[2].write_text(json.dumps(manifest))
        blob = b"".join(bundle_tar_stream(copy))
        answer = client.post(
            "/api/v1/tenants/globex/bundle/import", data=blob, content_type="application/x-tar"
        )
        assert answer.status_code == 400, (how, answer.content)
        assert answer.json()["field"] == "bundle"
        assert held() == before

    refused()
