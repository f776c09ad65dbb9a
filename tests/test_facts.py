"""Facts: add, deduplicate, update, remove, restore, purge, feedback, list; their audit trail."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from agenttools.arguments import ToolArguments
from facts import services
from facts.embedding import facts_embed_batch
from facts.inputs import (
    FactChanges,
    fact_changes,
    fact_draft,
    helpful,
    purge_reason,
)
from facts.models import Entity, FactEntity, Feedback, Status
from facts.selectors.facts import (
    fact_count,
    fact_entities,
    fact_get,
    fact_history,
    fact_list,
    fact_vectors,
)
from facts.selectors.paging import MAX_PAGE, cursor_encode
from facts.services import add as add_module
from tenants.actors import Actor
from tenants.errors import InvalidInput, NotFound
from tenants.scope import tenant_scope

pytestmark = pytest.mark.django_db


def add(tenant, actor, content="Alice prefers tea over coffee", **kw):
    return services.fact_add(
        tenant=tenant, actor=actor, draft=fact_draft({"content": content, **kw})
    )


# -- add and deduplicate ----------------------------------------------------------------------


def test_add_stores_the_fact_with_defaults_and_audits_it(tenant, owner_actor) -> None:
    result = add(tenant, owner_actor, scope="user:alice", tags=["Drinks", "drinks ", "morning"])
    fact = fact_get(tenant=tenant, fact_id=result.fact.pk)
    assert result.status == "added"
    assert fact.content == "Alice prefers tea over coffee"
    assert (fact.kind, fact.category, fact.status) == ("fact", "general", "active")
    assert fact.tags == ["drinks", "morning"]
    assert fact.trust_score == pytest.approx(0.5)
    assert fact.created_by == f"user:{owner_actor.ident}:olivia"
    [event] = fact_history(tenant=tenant, fact_id=fact.pk)
    assert (event.action, event.actor) == ("create", str(owner_actor))
    assert event.after["content"] == fact.content and event.before is None


def test_the_same_fact_again_returns_the_existing_one(tenant, owner_actor) -> None:
    first = add(tenant, owner_actor, scope="user:alice")
    again = add(
        tenant, owner_actor, content="  alice PREFERS tea\nover coffee ", scope="user:alice"
    )
    elsewhere = add(tenant, owner_actor, scope="user:bob")
    assert again.status == "exists" and again.fact.pk == first.fact.pk
    assert elsewhere.status == "added" and elsewhere.fact.pk != first.fact.pk
    assert fact_count(tenant=tenant) == 2
    assert len(fact_history(tenant=tenant, fact_id=first.fact.pk)) == 1


def test_the_same_text_in_two_tenants_is_two_facts(tenant, other_tenant, system_actor) -> None:
    mine = add(tenant, system_actor)
    theirs = add(other_tenant, system_actor)
    assert theirs.status == "added" and theirs.fact.pk != mine.fact.pk


def test_tenant_default_trust_applies(tenant, system_actor) -> None:
    from tenants.inputs import settings_changes
    from tenants.services import tenant_update_settings

    tenant_update_settings(
        tenant=tenant, changes=settings_changes({"default_trust": 0.7}), actor=system_actor
    )
    assert add(tenant, system_actor).fact.trust_score == pytest.approx(0.7)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"content": "   "}, "content"),
        ({"content": None}, "content"),
        ({"content": "x" * (16 * 1024 + 1)}, "content"),
        ({"content": "好" * (16 * 1024 + 1)}, "content"),  # counted in characters, not bytes
        ({"scope": "user alice"}, "scope"),
        ({"scope": "User:alice"}, "scope"),
        ({"scope": "user:alice//project:"}, "scope"),
        ({"category": "secrets"}, "category"),
        ({"tags": [1, 2]}, "tags"),
        ({"tags": [f"t{i}" for i in range(21)]}, "tags"),
        ({"kind": "note"}, "kind"),
        ({"kind": "turn"}, "session_id"),
        ({"metadata": ["not", "an", "object"]}, "metadata"),
        ({"trust": 1.5}, "trust"),
    ],
)
def test_bad_input_is_refused_with_the_field_named(tenant, system_actor, kwargs, field) -> None:
    kwargs = {"content": "A valid fact", **kwargs}
    with pytest.raises(InvalidInput) as error:
        services.fact_add(tenant=tenant, actor=system_actor, draft=fact_draft({**kwargs}))
    assert error.value.field == field
    assert fact_count(tenant=tenant, status=None) == 0


def test_exactly_16_kib_is_accepted_and_nul_characters_are_dropped(tenant, system_actor) -> None:
    assert add(tenant, system_actor, content="x" * 16 * 1024).status == "added"
    assert add(tenant, system_actor, content="nul\x00here").fact.content == "nulhere"


def test_chinese_scope_names_are_fine(tenant, system_actor) -> None:
    fact = add(
        tenant, system_actor, content="老王下周去上海", scope="user:老王/project:北极星"
    ).fact
    assert fact.scope == "user:老王/project:北极星"


@pytest.mark.django_db(transaction=True)
def test_two_writers_storing_the_same_fact_at_once_store_it_once(
    tenant, system_actor, monkeypatch
) -> None:
    """Both look for the text before either has stored it. One stores it; the other's insert
    waits for that to commit, then that writer gets the stored fact, pinned as it asked."""
    both_looked, stored = threading.Barrier(2, timeout=10), threading.Event()
    local = threading.local()
    real_existing, real_insert = add_module._existing_fact, add_module._facts_insert

    def existing(tenant_, values):
        found = real_existing(tenant_, values)
        if not getattr(local, "looked", False):
            local.looked = True
            both_looked.wait()
        return found

    def insert(facts, **kwargs):
        if facts[0].pinned:  # the pinned writer comes second
            assert stored.wait(timeout=10)
            return real_insert(facts, **kwargs)
        done = real_insert(facts, **kwargs)
        stored.set()
        return done

    monkeypatch.setattr(add_module, "_existing_fact", existing)
    monkeypatch.setattr(add_module, "_facts_insert", insert)
    results: dict[bool, services.AddResult] = {}

    def writer(pinned: bool) -> None:
        try:
            results[pinned] = add(tenant, system_actor, pinned=pinned)
        finally:
            connection.close()

    threads = [threading.Thread(target=writer, args=(pinned,)) for pinned in (False, True)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert (results[False].status, results[True].status) == ("added", "exists")
    assert results[False].fact.pk == results[True].fact.pk
    assert fact_count(tenant=tenant) == 1
    assert fact_get(tenant=tenant, fact_id=results[False].fact.pk).pinned


def test_turns_are_numbered_within_their_session(tenant, system_actor) -> None:
    turns = [
        services.fact_add(
            tenant=tenant,
            actor=system_actor,
            draft=fact_draft(
                {"content": text, "kind": "turn", "session_id": "s1", "speaker": "Alice"}
            ),
        ).fact
        for text in ("hi", "hi", "how are you?")
    ]
    assert [t.position for t in turns] == [0, 1, 2], "turns repeat; they are not deduplicated"
    other = services.fact_add(
        tenant=tenant,
        actor=system_actor,
        draft=fact_draft({"content": "hi", "kind": "turn", "session_id": "s2"}),
    ).fact
    assert other.position == 0
    with pytest.raises(InvalidInput, match="position"):
        services.fact_add(
            tenant=tenant,
            actor=system_actor,
            draft=fact_draft(
                {"content": "again", "kind": "turn", "session_id": "s1", "position": 1}
            ),
        )


def test_the_search_vector_is_filled_for_chinese_and_english(tenant, system_actor) -> None:
    fact = add(tenant, system_actor, content="老王下周三去上海出差, hiking with Alice").fact
    with tenant_scope(tenant), connection.cursor() as cursor:
        cursor.execute(
            "SELECT search_vector @@ to_tsquery('simple', '上海'), "
            "search_vector @@ to_tsquery('simple', '老王'), "
            "search_vector @@ to_tsquery('english', 'hikes'), "  # stemmed: hike
            "search_vector @@ to_tsquery('english', 'Alice') FROM facts_fact WHERE id = %s",
            [fact.pk],
        )
        assert cursor.fetchone() == (True, True, True, True)


def test_an_edited_fact_is_found_by_its_new_words_and_not_its_old(tenant, owner_actor) -> None:
    fact = add(tenant, owner_actor, content="老王下周三去上海出差, hiking with Alice").fact
    services.fact_update(
        tenant=tenant, fact_id=fact.pk, actor=owner_actor,
        changes=FactChanges(content="老王下周三去北京开会, swimming with Bob"),
    )  # fmt: skip
    with tenant_scope(tenant), connection.cursor() as cursor:
        cursor.execute(
            "SELECT search_vector @@ to_tsquery('simple', '上海'), "
            "search_vector @@ to_tsquery('english', 'hikes'), "
            "search_vector @@ to_tsquery('simple', '北京'), "
            "search_vector @@ to_tsquery('english', 'swims') FROM facts_fact WHERE id = %s",
            [fact.pk],
        )
        assert cursor.fetchone() == (False, False, True, True)


# -- entities ---------------------------------------------------------------------------------


def test_an_extractor_links_facts_to_entities(tenant, system_actor, settings) -> None:
    settings.MNEMOSYNE_ENTITY_EXTRACTOR = "tests.extractors.capitalised_people"
    first = add(tenant, system_actor, content="Alice met Bob in the lab").fact
    second = add(tenant, system_actor, content="Bob fixed the printer").fact
    names = [e.name for e in fact_entities(tenant=tenant, fact_id=first.pk)]
    assert names == ["Alice", "Bob"]
    with tenant_scope(tenant):
        bob = Entity.objects.for_tenant(tenant).get(normalized="bob")
        linked = set(
            FactEntity.objects.for_tenant(tenant)
            .filter(entity=bob)
            .values_list("fact_id", flat=True)
        )
    assert linked == {first.pk, second.pk}


# -- update -----------------------------------------------------------------------------------


def test_update_changes_only_what_is_given_and_audits_exactly_that(tenant, owner_actor) -> None:
    fact = add(tenant, owner_actor, category="user_pref").fact
    updated = services.fact_update(
        tenant=tenant,
        fact_id=fact.pk,
        actor=owner_actor,
        changes=fact_changes({"content": "Alice prefers green tea"}),
    )
    assert updated.content == "Alice prefers green tea" and updated.category == "user_pref"
    assert updated.content_hash == services.content_hash("alice prefers GREEN tea")
    assert updated.embedding_model == "", "the old vector described the old text"
    assert fact_vectors(tenant=tenant, fact_id=fact.pk) == []
    event = fact_history(tenant=tenant, fact_id=fact.pk)[-1]
    assert event.action == "update"
    assert event.before == {"content": "Alice prefers tea over coffee"}
    assert event.after == {"content": "Alice prefers green tea"}


def test_trust_delta_is_clamped(tenant, system_actor) -> None:
    fact = add(tenant, system_actor).fact
    up = services.fact_update(
        tenant=tenant,
        fact_id=fact.pk,
        actor=system_actor,
        changes=fact_changes({"trust_delta": 0.9}),
    )
    assert up.trust_score == 1.0
    down = services.fact_update(
        tenant=tenant,
        fact_id=fact.pk,
        actor=system_actor,
        changes=fact_changes({"trust_delta": -1}),
    )
    assert down.trust_score == 0.0
    with pytest.raises(InvalidInput, match="trust_delta"):
        services.fact_update(
            tenant=tenant,
            fact_id=fact.pk,
            actor=system_actor,
            changes=fact_changes({"trust_delta": "lots"}),
        )


def test_update_cannot_collide_with_another_fact(tenant, system_actor) -> None:
    add(tenant, system_actor, content="The build runs on Fridays")
    other = add(tenant, system_actor, content="The build runs on Mondays").fact
    with pytest.raises(InvalidInput, match="says the same"):
        services.fact_update(
            tenant=tenant,
            fact_id=other.pk,
            actor=system_actor,
            changes=fact_changes({"content": "the build runs on fridays"}),
        )


def test_update_with_nothing_to_change_is_refused(tenant, system_actor) -> None:
    fact = add(tenant, system_actor).fact
    with pytest.raises(InvalidInput, match="nothing to update"):
        fact_changes({})
    unchanged = services.fact_update(
        tenant=tenant, fact_id=fact.pk, changes=FactChanges(), actor=system_actor
    )
    assert unchanged.updated_at == fact.updated_at


# -- remove, restore, purge -------------------------------------------------------------------


def test_remove_is_soft_and_adding_it_again_restores_it(tenant, owner_actor) -> None:
    fact = add(tenant, owner_actor).fact
    services.fact_remove(tenant=tenant, fact_id=fact.pk, actor=owner_actor)
    assert fact_list(tenant=tenant).facts == []
    assert fact_get(tenant=tenant, fact_id=fact.pk).status == Status.REMOVED
    again = add(tenant, owner_actor)
    assert (again.status, again.fact.pk) == ("restored", fact.pk)
    actions = [e.action for e in fact_history(tenant=tenant, fact_id=fact.pk)]
    assert actions == ["create", "remove", "restore"]


def test_purge_deletes_for_good_but_the_audit_keeps_that_it_happened(tenant, owner_actor) -> None:
    fact = add(tenant, owner_actor, content="Carol's phone number is 555-0100").fact
    services.fact_feedback(tenant=tenant, fact_id=fact.pk, helpful=True, actor=owner_actor)
    with pytest.raises(InvalidInput, match="reason"):
        purge_reason(" ")
    services.fact_purge(tenant=tenant, fact_id=fact.pk, actor=owner_actor, reason="GDPR request")
    with pytest.raises(NotFound):
        fact_get(tenant=tenant, fact_id=fact.pk)
    with tenant_scope(tenant):
        assert not Feedback.objects.for_tenant(tenant).filter(fact_id=fact.pk).exists()
    history = fact_history(tenant=tenant, fact_id=fact.pk)
    assert [e.action for e in history] == ["create", "feedback", "purge"]
    assert history[-1].after == {"reason": "GDPR request"}
    assert "555-0100" not in str(history[-1].before)


# -- feedback ---------------------------------------------------------------------------------


def test_feedback_moves_trust_and_counts(tenant, owner_actor) -> None:
    fact = add(tenant, owner_actor).fact
    result = services.fact_feedback(tenant=tenant, fact_id=fact.pk, helpful=True, actor=owner_actor)
    assert (result.old_trust, result.new_trust, result.helpful_count) == (0.5, 0.55, 1)
    result = services.fact_feedback(
        tenant=tenant, fact_id=fact.pk, helpful=False, actor=owner_actor
    )
    assert result.new_trust == pytest.approx(0.45) and result.unhelpful_count == 1
    with tenant_scope(tenant):
        assert Feedback.objects.for_tenant(tenant).filter(fact_id=fact.pk).count() == 2
    event = fact_history(tenant=tenant, fact_id=fact.pk)[-1]
    assert event.before == {"trust_score": 0.55}
    assert event.after == {"trust_score": 0.45, "helpful": False}


def test_feedback_trust_stays_within_0_and_1(tenant, system_actor) -> None:
    high = add(tenant, system_actor, content="high", trust=0.98).fact
    low = add(tenant, system_actor, content="low", trust=0.05).fact
    up = services.fact_feedback(tenant=tenant, fact_id=high.pk, helpful=True, actor=system_actor)
    down = services.fact_feedback(tenant=tenant, fact_id=low.pk, helpful=False, actor=system_actor)
    assert (up.new_trust, down.new_trust) == (1.0, 0.0)


def test_feedback_needs_a_boolean_and_a_real_fact(tenant, system_actor) -> None:
    fact = add(tenant, system_actor).fact
    with pytest.raises(InvalidInput, match="helpful"):
        helpful("yes")
    with pytest.raises(NotFound):
        services.fact_feedback(
            tenant=tenant, fact_id=fact.pk + 999, helpful=True, actor=system_actor
        )
    with pytest.raises(InvalidInput, match="fact_id"):
        ToolArguments({"fact_id": "seven"}).fact_id()


# -- list -------------------------------------------------------------------------------------


def test_list_pages_through_everything_once_newest_first(tenant, system_actor) -> None:
    start = timezone.now() - timedelta(days=1)
    for i in range(23):
        # Pairs share a timestamp: the id breaks the tie.
        add(
            tenant,
            system_actor,
            content=f"fact number {i}",
            created_at=start + timedelta(minutes=i // 2),
        )
    seen, cursor = [], None
    while True:
        page = fact_list(tenant=tenant, limit=5, cursor=cursor)
        seen += [f.content for f in page.facts]
        if not page.next_cursor:
            break
        cursor = page.next_cursor
    assert len(seen) == 23 and len(set(seen)) == 23
    assert seen[0] == "fact number 22" and seen[-1] in {"fact number 0", "fact number 1"}


def test_list_filters(tenant, system_actor) -> None:
    add(tenant, system_actor, content="a", scope="user:alice", category="user_pref", trust=0.9)
    add(tenant, system_actor, content="b", scope="user:alice/project:beta", category="project")
    add(tenant, system_actor, content="c", scope="user:alicia", trust=0.1)
    services.fact_add(
        tenant=tenant,
        actor=system_actor,
        draft=fact_draft({"content": "d", "kind": "turn", "session_id": "s"}),
    )

    def contents(**kw) -> list[str]:
        return sorted(f.content for f in fact_list(tenant=tenant, **kw).facts)

    assert contents(scope_prefix="user:alice") == ["a", "b"], "a prefix is whole segments"
    assert contents(category="project") == ["b"]
    assert contents(kind="turn") == ["d"]
    assert contents(trust_min=0.8) == ["a"]
    assert contents(trust_max=0.2) == ["c"]
    assert contents(created_after=timezone.now() + timedelta(minutes=1)) == []
    with pytest.raises(InvalidInput, match="cursor"):
        fact_list(tenant=tenant, cursor="not-a-cursor")
    with pytest.raises(InvalidInput, match="limit"):
        fact_list(tenant=tenant, limit=0)
    with pytest.raises(InvalidInput, match="status"):
        fact_list(tenant=tenant, status="deleted")


# -- embedding --------------------------------------------------------------------------------


def test_embedding_fills_vectors_with_the_model_name(tenant, system_actor) -> None:
    fact = add(tenant, system_actor).fact
    turn = services.fact_add(
        tenant=tenant,
        actor=system_actor,
        draft=fact_draft(
            {"content": "I love hiking", "kind": "turn", "session_id": "s", "speaker": "Caroline"}
        ),
    ).fact
    assert facts_embed_batch(tenant=tenant) == 2
    assert facts_embed_batch(tenant=tenant) == 0, "nothing is embedded twice"
    fact = fact_get(tenant=tenant, fact_id=fact.pk)
    assert fact.embedding_model == "multilingual-e5-small-int8"
    [vector] = fact_vectors(tenant=tenant, fact_id=fact.pk)
    assert (vector.model, vector.dimension, len(vector.embedding)) == (
        fact.embedding_model,
        384,
        384,
    )
    assert len(fact_vectors(tenant=tenant, fact_id=turn.pk)) == 1


def test_actor_strings_name_who_did_it(tenant) -> None:
    job = Actor.job("retention")
    assert str(job) == "job:retention"
    fact = add(tenant, job).fact
    assert fact_get(tenant=tenant, fact_id=fact.pk).created_by == "job:retention"
    assert fact_history(tenant=tenant, fact_id=fact.pk)[0].actor == "job:retention"


@pytest.mark.parametrize(
    "cursor",
    [
        ("2026-01-01T00:00:00+00:00", 2**63),  # beyond PostgreSQL's bigint
        ("2026-01-01T00:00:00", 5),  # a time without its offset
        ("yesterday", 5),
        (float("nan"), 5),  # an importance cursor that compares with nothing
        ("2026-01-01T00:00:00+00:00", 5, 1),
    ],
)
def test_a_hand_made_cursor_is_refused(tenant, system_actor, cursor) -> None:
    add(tenant, system_actor)
    order = "importance" if isinstance(cursor[0], float) else "newest"
    with pytest.raises(InvalidInput) as refused:
        fact_list(tenant=tenant, order=order, cursor=cursor_encode(*cursor))
    assert refused.value.field == "cursor"


def test_a_cursor_of_one_order_does_not_continue_the_other(tenant, system_actor) -> None:
    for content in ("Alice prefers tea", "Bob prefers coffee", "Carol prefers water"):
        add(tenant, system_actor, content=content)
    newest = fact_list(tenant=tenant, limit=1).next_cursor
    important = fact_list(tenant=tenant, order="importance", limit=1).next_cursor
    assert newest and important
    with pytest.raises(InvalidInput):
        fact_list(tenant=tenant, order="importance", cursor=newest)
    with pytest.raises(InvalidInput):
        fact_list(tenant=tenant, cursor=important)
    with pytest.raises(InvalidInput) as refused:
        fact_list(tenant=tenant, limit=MAX_PAGE + 1)
    assert refused.value.field == "limit"
