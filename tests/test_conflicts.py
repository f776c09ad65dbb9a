"""Conflicts that become decisions, and near-duplicates that join the stored fact: with the real
embedder (e5), the worker's check after embedding, the review decisions and their audit."""

from __future__ import annotations

import inspect
import json
from functools import partial

import pytest

from facts import conflicts
from facts.conflicts import (
    conflict_resolve,
    conflicts_check,
    conflicts_check_pending,
    tenants_with_unchecked_facts,
)
from facts.contradiction import pair_judge
from facts.embedding import facts_embed_batch
from facts.graph import fact_contradictions
from facts.inputs import conflict_decision, fact_draft
from facts.models import Conflict, ConflictScan, FactEvent
from facts.selectors.conflicts import conflict_list
from facts.selectors.facts import fact_entities, fact_get
from facts.services import fact_add, fact_import
from retrieval.inputs import recall_query
from retrieval.search import recall_search
from tenants.errors import InvalidInput, NotFound
from tenants.inputs import settings_changes
from tenants.scope import tenant_scope
from tenants.services import tenant_update_settings

pytestmark = pytest.mark.django_db


def _store(tenant, actor, *texts: str, **kwargs):
    facts = [
        fact_add(tenant=tenant, actor=actor, draft=fact_draft({"content": t, **kwargs})).fact
        for t in texts
    ]
    while facts_embed_batch(tenant=tenant):
        pass
    return facts


def _worker(tenant) -> None:
    """What the worker does after it embedded a tenant's facts."""
    while facts_embed_batch(tenant=tenant):
        pass
    conflicts_check_pending(tenant=tenant)


def _pairs(tenant) -> dict[frozenset[str], Conflict]:
    return {
        frozenset((c.fact_a.content, c.fact_b.content)): c
        for c in conflict_list(tenant=tenant, status=None).conflicts
    }


def test_the_judge_tells_contradictions_duplicates_and_additions_apart() -> None:
    cases = {
        ("Carol is vegetarian.", "Carol is not vegetarian."): ("contradict", "negation"),
        ("李娜吃素。", "李娜不吃素。"): ("contradict", "negation"),
        ("The server has 64 GB of memory.", "The server has 128 GB of memory."): (
            "contradict", "number"),
        ("新版本三月三日发布。", "新版本四月十二日发布。"): ("contradict", "date"),
        ("老王住在上海。", "老王住在北京。"): ("contradict", "value"),
        ("Bob lives in Berlin.", "Bob lives in Munich."): ("contradict", "value"),
        ("Anna is free on Thursday.", "Anna is free on Friday too."): ("compatible", ""),
        ("Alice prefers black coffee.", "Bob prefers black coffee."): ("compatible", ""),
        ("Mia has a dog.", "Mia walks her dog every evening."): ("compatible", ""),
        ("Carol is vegetarian!", "carol is   VEGETARIAN"): ("duplicate", "same text"),
    }  # fmt: skip
    for (a, b), (label, reason) in cases.items():
        verdict = pair_judge(a, b)
        assert (verdict.label, verdict.reason) == (label, reason), (a, b, verdict)
    # A close vector alone makes a duplicate only when nothing disagrees.
    assert pair_judge("Jenny works at Google.", "Jenny is employed at Google.",
                      similarity=0.97).label == "duplicate"  # fmt: skip
    assert pair_judge("Bob lives in Berlin.", "Bob lives in Munich.",
                      similarity=0.99).label == "contradict"  # fmt: skip
    # Close vectors about another subject, or the same numbers in another order, are two facts.
    for a, b in [
        ("Alice prefers black coffee.", "Bob prefers black coffee."),
        ("agent1 wrote note number 2 about the harbour",
         "agent2 wrote note number 1 about the harbour"),
        ("The shuttle runs from stop 1 to stop 2.", "The shuttle runs from stop 2 to stop 1."),
    ]:  # fmt: skip
        assert pair_judge(a, b, similarity=0.99).label != "duplicate", (a, b)
    # A name with digits in it is a word: another one in its place is another value.
    with_digits = pair_judge("The wifi password is sunflower42.", "The wifi password is maple77.")
    plain = pair_judge("The wifi password is sunflower.", "The wifi password is maple.")
    assert (with_digits.label, with_digits.reason) == (plain.label, plain.reason) == (
        "contradict", "value")  # fmt: skip


def test_a_chinese_near_synonym_in_one_place_is_a_rewording_not_another_value() -> None:
    for a, b in [
        ("小周的航班改到周五。", "小周的飞机改到周五。"),
        ("石磊的父亲退休了。", "石磊的爸爸退休了。"),
        ("康宁在周会之前交周报。", "康宁在周会前交周报。"),
    ]:
        assert pair_judge(a, b, similarity=0.99).label == "duplicate", (a, b)
    # A synonym does not hide what does differ.
    assert pair_judge("小周的母亲今年六十岁。", "小周的妈妈今年六十五岁。").label == "contradict"
    assert pair_judge("小周的工资是一万二。", "小周的薪水是一万五。").reason == "number"
    assert pair_judge("小周的航班是下午三点。", "小周的航班是晚上八点。").reason == "date"


def test_chinese_likings_and_skills_stand_together_unless_one_replaces_the_other() -> None:
    for a, b in [
        ("马丽喜欢吃火锅。", "马丽喜欢吃寿司。"),
        ("马丽爱吃火锅。", "马丽爱吃寿司。"),
        ("孟凡会弹古筝。", "孟凡会弹琵琶。"),
        ("秦朗有一辆摩托车。", "秦朗有一辆电动车。"),
        ("小周经常去游泳。", "小周经常去爬山。"),
    ]:
        assert pair_judge(a, b).label == "compatible", (a, b)
    # The only one, the favourite or a change: one value replaces the other.
    for a, b in [
        ("万丽爱吃苹果。", "万丽现在只爱吃香蕉。"),
        ("毛欣最爱看足球比赛。", "毛欣最爱看网球比赛。"),
        ("小周早餐喝牛奶。", "小周早饭改喝咖啡了。"),
        ("小周家里只有一只猫。", "小周家里有一只狗。"),
    ]:
        verdict = pair_judge(a, b)
        assert verdict.label == "contradict" and verdict.reason in ("value", "change"), (a, b)
    # 只 after a digit counts; it does not say "only".
    assert pair_judge("小周有3只猫。", "小周有3只狗。").label == "compatible"


def test_chinese_statements_about_two_things_in_one_slot_do_not_clash() -> None:
    # What has the value differs, or the event does: not one value replacing another.
    for a, b in [
        ("辛悦的猫是橘色的。", "辛悦的狗是黑色的。"),
        ("陈老师新买的上衣是黑色的。", "陈老师新买的裤子是白色的。"),
        ("小周在杭州出生。", "小周在北京上大学。"),
    ]:
        assert pair_judge(a, b).label == "compatible", (a, b)
    # A value named in two words is still one value.
    assert pair_judge("小周住在杭州西湖区。", "小周住在宁波鄞州区。").label == "contradict"


def test_one_more_thing_said_with_also_is_not_a_duplicate_to_join() -> None:
    for a, b in [
        ("景涵爱吃芒果。", "景涵也爱吃榴莲。"),
        ("Anna likes tea.", "Anna likes coffee too."),
    ]:
        verdict = pair_judge(a, b, similarity=0.99)
        assert (verdict.label, verdict.reason) == ("compatible", ""), (a, b, verdict)


def test_a_check_task_past_its_time_leaves_the_rest_to_a_fresh_message(
    tenant, system_actor, monkeypatch
) -> None:
    # A worker runs one task at a time: a long check would keep new facts from their vectors.
    from facts import tasks

    # The task's idea of a full batch is the check's own...
    limit = inspect.signature(conflicts.conflicts_check_pending).parameters["limit"].default
    assert tasks.CHECK_BATCH == conflicts.CHECK_BATCH == limit
    # ...and both are made smaller here, so that 25 facts are embedded and checked, not 205.
    batch = 20
    monkeypatch.setattr(tasks, "CHECK_BATCH", batch)
    monkeypatch.setattr(
        tasks, "conflicts_check_pending", partial(conflicts.conflicts_check_pending, limit=batch)
    )
    lines = [json.dumps({"content": f"Runner {i} builds release branch {i} every Friday."})
             for i in range(batch + 5)]  # fmt: skip
    fact_import(tenant=tenant, lines=lines, actor=system_actor)
    while facts_embed_batch(tenant=tenant):
        pass
    sent = []
    monkeypatch.setattr(tasks, "job_send_coalesced", lambda *args: sent.append(args))
    monkeypatch.setattr(tasks, "CHECK_TASK_S", 0.0)
    assert tasks.facts_check_conflicts(tenant.pk) == batch
    assert sent == [("facts.tasks.facts_check_conflicts", tenant.pk)]
    assert tenants_with_unchecked_facts() == [tenant.pk]
    assert tasks.facts_check_conflicts(tenant.pk) == 5  # what that message runs
    assert len(sent) == 1, "done: nothing more is sent"
    assert tenants_with_unchecked_facts() == []


def test_a_check_gives_way_while_a_bulk_load_waits_for_its_vectors(
    tenant, other_tenant, system_actor, monkeypatch
) -> None:
    # The cores embed a bulk load first (its vectors make it recallable); a check that started
    # meanwhile stops, and a few facts waiting do not hold the checks back.
    from facts import embedding, tasks

    monkeypatch.setattr(embedding, "EMBED_BATCH", 3)
    monkeypatch.setattr(tasks, "job_send_coalesced", lambda *args: None)
    _store(tenant, system_actor, "The demo is on Friday.", "The demo is on Thursday.")
    texts = ["Kevin likes spicy food.", "Backups run at two.", "Maria speaks Portuguese.",
             "The office plant needs water on Mondays."]  # fmt: skip
    lines = [json.dumps({"content": text}) for text in texts]
    fact_import(tenant=tenant, lines=lines, actor=system_actor)
    assert tasks.facts_check_conflicts(tenant.pk) == 0, "four wait for vectors: gives way"
    assert _pairs(tenant) == {}
    assert tenants_with_unchecked_facts() == [tenant.pk]
    facts_embed_batch(tenant=tenant, limit=2)  # two left waiting: fewer than a batch
    # Another tenant's bulk load, waiting too, is not this tenant's backlog.
    fact_import(tenant=other_tenant, lines=lines, actor=system_actor)
    assert tasks.facts_check_conflicts(tenant.pk) == 4
    assert set(_pairs(tenant)) == {
        frozenset(("The demo is on Friday.", "The demo is on Thursday."))
    }
    while facts_embed_batch(tenant=tenant):
        pass
    assert tasks.facts_check_conflicts(tenant.pk) == 2
    assert tenants_with_unchecked_facts() == []


def test_the_worker_records_conflicts_in_english_and_chinese(tenant, system_actor) -> None:
    _store(tenant, system_actor, "Alice Chen prefers green tea.", "老王住在上海。",
           "Alice Chen lives in Berlin.")  # fmt: skip
    conflicts_check_pending(tenant=tenant)
    # In a scope inside the first ones': the request compares a new fact with its own scope's
    # facts only, the worker with the scopes around it too.
    _store(tenant, system_actor, "Alice Chen prefers black coffee.", "老王住在北京。",
           "Alice Chen has two cats.", scope="team:x")  # fmt: skip
    assert _pairs(tenant) == {}, "recorded by the worker, not by the request"
    assert tenants_with_unchecked_facts() == [tenant.pk]
    result = conflicts_check_pending(tenant=tenant)
    assert result.checked == 3
    pairs = _pairs(tenant)
    assert set(pairs) == {
        frozenset(("Alice Chen prefers green tea.", "Alice Chen prefers black coffee.")),
        frozenset(("老王住在上海。", "老王住在北京。")),
    }
    assert all(c.status == "open" and c.reason == "value" for c in pairs.values())
    assert tenants_with_unchecked_facts() == []
    # The Hermes `contradict` action reads the same records.
    assert {frozenset((p.fact_a.content, p.fact_b.content))
            for p in fact_contradictions(tenant=tenant)} == set(pairs)  # fmt: skip
    # Checking again records nothing twice.
    assert conflicts_check_pending(tenant=tenant).conflicts == 0


def test_the_sweep_finds_conflicts_among_facts_stored_before(tenant, system_actor) -> None:
    _store(tenant, system_actor, "The demo is on Friday.", "The demo is on Thursday.",
           "Kevin likes spicy food.", "Kevin doesn't like spicy food.")  # fmt: skip
    result = conflicts_check_pending(tenant=tenant)
    assert result.conflicts == 2
    assert {c.reason for c in _pairs(tenant).values()} == {"date", "negation"}


def test_supersede_retires_the_older_fact_and_audits_both(tenant, system_actor, owner_actor):
    older, newer = _store(tenant, system_actor, "Bob lives in Berlin.", "Bob lives in Munich.")
    conflicts_check_pending(tenant=tenant)
    (conflict,) = _pairs(tenant).values()
    decided = conflict_resolve(tenant=tenant, conflict_id=conflict.pk, decision="supersede",
                               note="he moved in May", actor=owner_actor)  # fmt: skip
    assert (decided.status, decided.resolution, decided.note) == ("resolved", "supersede",
                                                                  "he moved in May")  # fmt: skip
    retired = fact_get(tenant=tenant, fact_id=older.pk)
    assert retired.status == "superseded" and retired.superseded_by_id == newer.pk
    assert retired.trust_score == pytest.approx(0.3)
    hits = recall_search(
        tenant=tenant, query=recall_query({"query": "Where does Bob live?", "min_trust": 0})
    ).hits
    assert [h.fact.pk for h in hits] == [newer.pk], "the older leaves recall"
    with tenant_scope(tenant):
        events = FactEvent.objects.for_tenant(tenant)
        assert events.filter(fact_id=older.pk, action="supersede", actor=str(owner_actor)).exists()
        assert events.filter(fact_id=newer.pk, action="conflict").count() == 1
        assert events.filter(fact_id=older.pk, action="conflict").count() == 1
    assert fact_contradictions(tenant=tenant) == []
    with pytest.raises(InvalidInput) as problem:
        conflict_resolve(tenant=tenant, conflict_id=conflict.pk, decision="dismiss",
                         actor=owner_actor)  # fmt: skip
    assert "decided already" in problem.value.message


def test_keep_both_and_dismiss_leave_the_facts_for_good(tenant, system_actor, owner_actor):
    _store(tenant, system_actor, "Carol is vegetarian.", "Carol is not vegetarian.",
           "The meeting room holds 12 people.", "The meeting room holds 20 people.")  # fmt: skip
    conflicts_check_pending(tenant=tenant)
    pairs = list(_pairs(tenant).values())
    assert len(pairs) == 2
    conflict_resolve(tenant=tenant, conflict_id=pairs[0].pk, decision="keep_both",
                     actor=owner_actor)  # fmt: skip
    conflict_resolve(tenant=tenant, conflict_id=pairs[1].pk, decision="dismiss",
                     actor=owner_actor)  # fmt: skip
    for c in pairs:
        assert fact_get(tenant=tenant, fact_id=c.fact_a_id).status == "active"
        assert fact_get(tenant=tenant, fact_id=c.fact_b_id).status == "active"
    with tenant_scope(tenant):  # the sweep starts over: every pair is judged again
        ConflictScan.objects.for_tenant(tenant).update(last_fact_id=0)
    conflicts_check_pending(tenant=tenant)
    assert len(conflict_list(tenant=tenant, status="open").conflicts) == 0, "decided stays decided"
    with pytest.raises(InvalidInput) as problem:
        conflict_decision("maybe")
    assert problem.value.field == "decision"


def test_a_tenant_may_let_clear_newer_statements_supersede_at_once(tenant, system_actor):
    tenant = tenant_update_settings(
        tenant=tenant, changes=settings_changes({"conflict_auto_supersede": 1}), actor=system_actor
    )
    (older,) = _store(tenant, system_actor, "The standup starts at 9:30.")
    conflicts_check_pending(tenant=tenant)
    (newer,) = _store(tenant, system_actor, "The standup starts at 10:00.")
    conflicts_check_pending(tenant=tenant)
    (conflict,) = _pairs(tenant).values()
    assert conflict.status == "resolved" and conflict.resolution == "supersede"
    assert conflict.resolved_by == "job:conflicts"
    assert fact_get(tenant=tenant, fact_id=older.pk).status == "superseded"
    assert fact_get(tenant=tenant, fact_id=newer.pk).status == "active"


def test_a_near_duplicate_joins_the_stored_fact(tenant, system_actor) -> None:
    (first,) = _store(tenant, system_actor, "Marcus is allergic to peanuts.", tags=["health"],
                      scope="user:marcus")  # fmt: skip
    joined = fact_add(
        tenant=tenant,
        actor=system_actor,
        draft=fact_draft(
            {"content": "Marcus is allergic to peanuts!!", "tags": ["food"], "scope": "user:marcus"}
        ),
    )
    assert joined.status == "joined" and joined.fact.pk == first.pk
    assert joined.similarity is not None and joined.similarity > 0.95
    fact = fact_get(tenant=tenant, fact_id=first.pk)
    assert fact.mention_count == 2 and fact.tags == ["health", "food"]
    paraphrase = fact_add(
        tenant=tenant,
        actor=system_actor,
        draft=fact_draft({"content": "Marcus has an allergy to peanuts", "scope": "user:marcus"}),
    )
    assert (paraphrase.status, paraphrase.fact.pk) == ("joined", first.pk)
    assert fact_get(tenant=tenant, fact_id=first.pk).mention_count == 3
    with tenant_scope(tenant):
        join = FactEvent.objects.for_tenant(tenant).filter(fact_id=first.pk, action="join")
        assert join.count() == 2
    # Not joined: a statement that disagrees, another scope, a turn.
    assert (
        fact_add(
            tenant=tenant,
            actor=system_actor,
            draft=fact_draft(
                {"content": "Marcus is not allergic to peanuts.", "scope": "user:marcus"}
            ),
        ).status
        == "added"
    )
    assert (
        fact_add(
            tenant=tenant,
            actor=system_actor,
            draft=fact_draft({"content": "Marcus is allergic to peanuts!!", "scope": "user:other"}),
        ).status
        == "added"
    )
    # Agents numbered in their names: each one's note is its own fact.
    notes = [f"agent{a} wrote note number {n} about the harbour" for a in (1, 2) for n in (1, 2)]
    stored = _store(tenant, system_actor, *notes, scope="user:marcus")
    assert len({fact.pk for fact in stored}) == 4
    turn = fact_add(
        tenant=tenant,
        actor=system_actor,
        draft=fact_draft(
            {
                "content": "Marcus is allergic to peanuts.",
                "kind": "turn",
                "session_id": "s1",
                "scope": "user:marcus",
            }
        ),
    )
    assert turn.status == "added" and turn.fact.pk != first.pk


def test_the_threshold_is_the_tenants_and_entities_of_a_join_are_linked(tenant, system_actor):
    (first,) = _store(tenant, system_actor, "Jenny works at Google in Zurich.")
    strict = tenant_update_settings(
        tenant=tenant, changes=settings_changes({"duplicate_threshold": 1.0}), actor=system_actor
    )
    assert (
        fact_add(
            tenant=strict,
            actor=system_actor,
            draft=fact_draft({"content": "Jenny is employed by Google in Zurich."}),
        ).status
        == "added"
    )
    loose = tenant_update_settings(
        tenant=tenant, changes=settings_changes({"duplicate_threshold": 0.9}), actor=system_actor
    )
    joined = fact_add(
        tenant=loose,
        actor=system_actor,
        draft=fact_draft({"content": "Jenny Wu works at Google in Zurich."}),
    )
    assert joined.status == "joined" and joined.fact.pk == first.pk
    assert "Jenny Wu" in {e.name for e in fact_entities(tenant=tenant, fact_id=first.pk)}


def test_an_import_is_joined_later_by_the_worker(tenant, system_actor) -> None:
    (first,) = _store(tenant, system_actor, "Diego speaks fluent German.")
    conflicts_check_pending(tenant=tenant)
    report = fact_import(tenant=tenant, lines=['{"content": "Diego speaks German fluently."}'],
                         actor=system_actor)  # fmt: skip
    assert report.counts["added"] == 1
    _worker(tenant)
    copy = fact_get(tenant=tenant, fact_id=report.lines[0].fact_id)
    assert copy.status == "superseded" and copy.superseded_by_id == first.pk
    assert fact_get(tenant=tenant, fact_id=first.pk).mention_count == 2


def test_facts_that_share_a_rare_entity_are_compared_without_their_vectors(
    tenant, other_tenant, system_actor, monkeypatch
) -> None:
    """Before a vector exists (or when the vectors are far apart) the facts that name the same
    entity are still compared; an entity named by very many facts (a speaker) pairs nothing.
    Another tenant's facts about an entity of the same name are never a partner."""
    texts = ("Alice Chen prefers green tea.", "Alice Chen prefers black coffee.")
    oolong = fact_draft({"content": "Alice Chen prefers oolong tea."})
    theirs = [fact_add(tenant=other_tenant, actor=system_actor, draft=oolong).fact]
    mine = [
        fact_add(tenant=tenant, actor=system_actor, draft=fact_draft({"content": t})).fact
        for t in texts
    ]
    monkeypatch.setattr(conflicts, "ENTITY_MAX_FACTS", 1)
    assert conflicts_check(tenant=tenant, fact_ids=[f.pk for f in mine]).conflicts == 0
    monkeypatch.setattr(conflicts, "ENTITY_MAX_FACTS", 200)
    result = conflicts_check(tenant=tenant, fact_ids=[f.pk for f in mine + theirs])
    assert (result.checked, result.conflicts) == (2, 1)
    assert set(_pairs(tenant)) == {frozenset(texts)}
    assert _pairs(other_tenant) == {}


@pytest.mark.django_db(transaction=True)
def test_two_workers_checking_one_tenant_at_once_check_each_fact_once(
    tenant, system_actor, monkeypatch
) -> None:
    import threading

    from django.db import connection

    texts = ("The demo is on Friday.", "The demo is on Thursday.", "Kevin likes spicy food.",
             "Kevin doesn't like spicy food.")  # fmt: skip
    _store(tenant, system_actor, *texts)
    real, first_in = conflicts.conflicts_check, threading.Event()

    def slow(**kwargs):  # the first worker is still checking when the second comes
        first_in.set()
        threading.Event().wait(0.5)
        return real(**kwargs)

    monkeypatch.setattr(conflicts, "conflicts_check", slow)
    results = {}

    def worker(name: str) -> None:
        try:
            results[name] = conflicts_check_pending(tenant=tenant)
        finally:
            connection.close()

    first = threading.Thread(target=worker, args=("first",))
    first.start()
    assert first_in.wait(10)
    second = threading.Thread(target=worker, args=("second",))
    second.start()
    first.join(30)
    second.join(30)
    assert results["first"].checked == 4 and results["first"].conflicts == 2
    assert results["second"].checked == 0, "the second waited and found the facts checked"
    assert len(_pairs(tenant)) == 2


def test_a_fact_embedded_after_newer_ones_is_still_checked(tenant, system_actor) -> None:
    """Two workers commit their embedding batches in any order; the scan does not pass a fact
    that is still waiting for its vector."""
    from facts.models import Fact

    _store(tenant, system_actor, "The demo is on Friday.")
    conflicts_check_pending(tenant=tenant)
    # In another scope, so that the request does not record the conflict itself.
    late, early = _store(tenant, system_actor, "The demo is on Thursday.", "Kevin likes tea.",
                         scope="team:x")  # fmt: skip
    with tenant_scope(tenant):  # `late`'s batch is still being embedded by another worker
        rows = Fact.objects.for_tenant(tenant)
        model = rows.get(pk=early.pk).embedding_model
        rows.filter(pk=late.pk).update(embedding_model="")
    assert conflicts_check_pending(tenant=tenant).checked == 0, "it waits for the hole"
    with tenant_scope(tenant):
        Fact.objects.for_tenant(tenant).filter(pk=late.pk).update(embedding_model=model)
    result = conflicts_check_pending(tenant=tenant)
    assert (result.checked, result.conflicts) == (2, 1)
    assert set(_pairs(tenant)) == {
        frozenset(("The demo is on Friday.", "The demo is on Thursday."))
    }


def test_the_scan_gets_through_facts_stored_faster_than_it_checks(tenant, system_actor) -> None:
    """Facts stored after a check began are not "changed since" once the scan has passed
    them: the scan goes on to the newer ones instead of checking the same batch again."""
    _store(tenant, system_actor, "The demo is on Friday.")
    conflicts_check_pending(tenant=tenant)
    _store(tenant, system_actor, "Kevin likes tea.", "Dana runs the Berlin office.",
           "The demo is on Thursday.")  # fmt: skip
    passes = [conflicts_check_pending(tenant=tenant, limit=2) for _ in range(3)]
    assert [p.checked for p in passes] == [2, 1, 0]
    assert tenants_with_unchecked_facts() == []
    assert set(_pairs(tenant)) == {
        frozenset(("The demo is on Friday.", "The demo is on Thursday."))
    }


def test_the_scan_gets_through_more_changed_facts_than_a_batch(tenant, system_actor) -> None:
    """Facts the scan passed and that changed since are checked again, in the order they
    changed, a batch at a time; more of them than a batch holds does not make it check the same
    batch forever, not even when they all changed at one moment."""
    from django.utils import timezone

    from facts.models import Fact

    stored = _store(tenant, system_actor, "The demo is on Friday.", "Kevin likes tea.",
                    "Dana runs the Berlin office.", "Lee drives a blue car.")  # fmt: skip
    conflicts_check_pending(tenant=tenant)
    with tenant_scope(tenant):
        for fact in stored[1:]:  # changed one after the other
            Fact.objects.for_tenant(tenant).filter(pk=fact.pk).update(updated_at=timezone.now())
    passes = [conflicts_check_pending(tenant=tenant, limit=2).checked for _ in range(4)]
    # Each full batch moves on to the last moment it covered whole: 2 and 3, then 3 and 4, then 4.
    assert passes == [2, 2, 1, 0]
    with tenant_scope(tenant):  # changed all at once, in bulk
        Fact.objects.for_tenant(tenant).update(updated_at=timezone.now())
    passes = [conflicts_check_pending(tenant=tenant, limit=2).checked for _ in range(3)]
    assert passes == [2, 0, 0]


def test_an_outsider_sees_and_decides_no_conflict(tenant, other_tenant, system_actor, owner_actor):
    _store(tenant, system_actor, "Bob lives in Berlin.", "Bob lives in Munich.")
    conflicts_check_pending(tenant=tenant)
    _store(other_tenant, system_actor, "Bob lives in Berlin.")
    conflicts_check_pending(tenant=other_tenant)
    (conflict,) = _pairs(tenant).values()
    assert conflict_list(tenant=other_tenant, status=None).conflicts == []
    with pytest.raises(NotFound):
        conflict_resolve(tenant=other_tenant, conflict_id=conflict.pk, decision="dismiss",
                         actor=owner_actor)  # fmt: skip
    assert fact_contradictions(tenant=other_tenant) == []


def test_the_api_tells_the_caller_which_fact_it_joined_and_decides_conflicts(
    tenant, system_actor, owner
) -> None:
    from tenants.services import apikey_create
    from tests.api_fixtures import bearer, signed_in

    key = bearer(apikey_create(tenant=tenant, name="hermes", actor=system_actor).token)
    stored = key.post("/api/v1/facts", {"content": "Tom drives a Tesla."}, format="json").json()
    _worker(tenant)
    again = key.post("/api/v1/facts", {"content": "tom drives a tesla"}, format="json")
    assert again.status_code == 200
    body = again.json()
    assert body["status"] == "joined" and body["fact"]["id"] == stored["fact"]["id"]
    assert body["fact"]["mention_count"] == 2 and body["similarity"] > 0.95
    key.post("/api/v1/facts", {"content": "Tom drives a Volvo."}, format="json")
    _worker(tenant)
    queue = key.get("/api/v1/conflicts").json()["results"]
    assert [(c["fact_a"]["content"], c["fact_b"]["content"], c["reason"]) for c in queue] == [
        ("Tom drives a Tesla.", "Tom drives a Volvo.", "value")
    ]
    refused = key.post(f"/api/v1/conflicts/{queue[0]['id']}/resolve",
                       {"decision": "supersede"}, format="json")  # fmt: skip
    assert refused.status_code == 403, "deciding is an admin's job"
    admin = signed_in(owner)
    bad = admin.post(f"/api/v1/tenants/acme/conflicts/{queue[0]['id']}/resolve",
                     {"decision": "both"}, format="json")  # fmt: skip
    assert bad.status_code == 400 and bad.json()["field"] == "decision"
    url = f"/api/v1/tenants/acme/conflicts/{queue[0]['id']}/resolve"
    decided = admin.post(url, {"decision": "supersede", "note": "sold the Tesla"}, format="json")
    assert decided.status_code == 200
    assert decided.json()["resolution"] == "supersede"
    assert decided.json()["fact_a"]["status"] == "superseded"
    assert key.get("/api/v1/conflicts").json()["results"] == []
    history = key.get(f"/api/v1/facts/{stored['fact']['id']}/history").json()
    assert {"create", "join", "supersede", "conflict"} == {e["action"] for e in history}


def _embed(tenant) -> None:
    while facts_embed_batch(tenant=tenant):
        pass


# Pairs that disagree (a comparison turned round, a negation, another number, a frequency)
# yet whose vectors are close enough for a near-duplicate: stored one after the other, the
# second must never be joined into the first.
DISAGREEING = [
    ("user:alice", "Alice prefers green tea over coffee.", "Alice prefers coffee over green tea.",
     "order"),
    ("user:carol", "Carol is vegetarian.", "Carol is not vegetarian.", "negation"),
    ("", "The server has 64 GB of memory.", "The server has 128 GB of memory.", "number"),
    ("", "The launch is on the 3rd.", "The launch slipped to the 10th.", "number"),
    ("user:alice", "爱丽丝喜欢绿茶胜过咖啡。", "爱丽丝喜欢咖啡胜过绿茶。", "order"),
    ("", "李娜吃素。", "李娜不吃素。", "negation"),
    ("", "服务器内存是64G。", "服务器内存是128G。", "number"),
    ("", "李明每天骑车上班。", "李明从不骑车。", "negation"),
    ("team:web", "Bob prefers React over Vue.", "Bob prefers Vue over React.", "order"),
    ("", "王芳喜欢喝茶胜过咖啡。", "王芳喜欢喝咖啡胜过茶。", "order"),
    ("user:zhang", "张伟最爱吃火锅。", "张伟最爱吃烧烤。", "value"),
    ("", "Dana always takes the train.", "Dana never takes the train.", "negation"),
]  # fmt: skip


def test_green_tea_over_coffee_then_coffee_over_green_tea_is_a_conflict_not_a_join(
    tenant, system_actor
) -> None:
    from tenants.services import apikey_create
    from tests.api_fixtures import bearer

    key = bearer(apikey_create(tenant=tenant, name="hermes", actor=system_actor).token)
    draft = {"content": "Alice prefers green tea over coffee.", "scope": "user:alice"}
    first = key.post("/api/v1/facts", draft, format="json").json()
    _embed(tenant)
    draft = {"content": "Alice prefers coffee over green tea.", "scope": "user:alice"}
    second = key.post("/api/v1/facts", draft, format="json")
    assert second.status_code == 201, second.json()
    body = second.json()
    assert body["status"] == "added" and body["fact"]["id"] != first["fact"]["id"]
    listed = key.get("/api/v1/facts", {"scope": "user:alice"}).json()["results"]
    assert {f["content"] for f in listed} == {
        "Alice prefers green tea over coffee.",
        "Alice prefers coffee over green tea.",
    }
    # Recorded when the second was stored, before any worker ran.
    queue = key.get("/api/v1/conflicts").json()["results"]
    assert [(c["fact_a"]["content"], c["fact_b"]["content"], c["reason"]) for c in queue] == [
        ("Alice prefers green tea over coffee.", "Alice prefers coffee over green tea.", "order")
    ]


@pytest.mark.parametrize(("scope", "older", "newer", "reason"), DISAGREEING)
def test_a_statement_that_disagrees_is_stored_beside_the_older_with_a_conflict(
    tenant, system_actor, scope, older, newer, reason
) -> None:
    from tenants.services import apikey_create
    from tests.api_fixtures import bearer

    key = bearer(apikey_create(tenant=tenant, name="hermes", actor=system_actor).token)
    first = key.post("/api/v1/facts", {"content": older, "scope": scope}, format="json")
    _embed(tenant)
    second = key.post("/api/v1/facts", {"content": newer, "scope": scope}, format="json")
    assert (first.status_code, second.status_code) == (201, 201), second.json()
    assert second.json()["status"] == "added"
    ids = {first.json()["fact"]["id"], second.json()["fact"]["id"]}
    assert len(ids) == 2
    for fact_id in ids:
        assert key.get(f"/api/v1/facts/{fact_id}").json()["status"] == "active"
    queue = key.get("/api/v1/conflicts").json()["results"]
    assert [(c["fact_a"]["content"], c["fact_b"]["content"], c["reason"]) for c in queue] == [
        (older, newer, reason)
    ]


def test_where_the_tenant_chose_it_the_newer_statement_supersedes_the_older_at_once(
    tenant, system_actor
) -> None:
    from tenants.services import apikey_create
    from tests.api_fixtures import bearer

    tenant = tenant_update_settings(
        tenant=tenant, changes=settings_changes({"conflict_auto_supersede": 1}), actor=system_actor
    )
    key = bearer(apikey_create(tenant=tenant, name="hermes", actor=system_actor).token)
    for lang, (scope, older, newer, _) in (("en", DISAGREEING[2]), ("zh", DISAGREEING[5])):
        first = key.post("/api/v1/facts", {"content": older, "scope": scope}, format="json")
        _embed(tenant)
        second = key.post("/api/v1/facts", {"content": newer, "scope": scope}, format="json")
        assert second.json()["status"] == "added", lang
        old = key.get(f"/api/v1/facts/{first.json()['fact']['id']}").json()
        assert old["status"] == "superseded", lang
        assert old["superseded_by"] == second.json()["fact"]["id"], lang


def test_opposites_from_the_lists_flip_a_statement_without_a_negation() -> None:
    # Opposites the first short list lacked, from WordNet and the written Chinese list, in the
    # forms people write them (loathes, failed, 涨价 / 降价).
    for a, b in [
        ("Priya loves the night shift.", "Priya loathes the night shift."),
        ("The nightly build passed.", "The nightly build failed."),
        ("The staging cluster is online.", "The staging cluster is offline."),
        ("这家店的咖啡涨价了。", "这家店的咖啡降价了。"),
        ("小林今年的基金盈利了。", "小林今年的基金亏损了。"),
        ("小区东门晚上开着。", "小区东门晚上关着。"),
    ]:
        assert pair_judge(a, b, similarity=0.93).label == "contradict", (a, b)
    # A character of an opposite inside an unrelated word is not one (开心 / 关心), and a span
    # with a verb of its own is another relation, not another value.
    assert pair_judge("小周很开心。", "小周很关心同事。", similarity=0.85).label != "contradict"
    assert pair_judge("Alice Chen prefers black coffee.", "Alice Chen has two cats.").label == (
        "compatible"
    )


def test_the_same_words_with_another_number_are_a_plain_conflict_unless_many_can_hold() -> None:
    verdict = pair_judge("The standup starts at 9:30.", "The standup starts at 10:00.")
    assert verdict.label == "contradict" and verdict.clear
    verdict = pair_judge("会议在周三。", "会议在周四。")
    assert verdict.label == "contradict" and verdict.clear
    # Visits in two years can both be true: never a plain conflict.
    assert not pair_judge("I visited Paris in 2019.", "I visited Paris in 2021.").clear
