"""Curating entities (rename, type, aliases, merge, split), the user dictionary that extraction
uses, and links that stay true: edited facts and dictionary changes re-link."""

from __future__ import annotations

import pytest

from facts import curation, relink
from facts.entities import Dictionary, entities_found
from facts.extract import extract_entities
from facts.graph import entities_reason, entity_related
from facts.inputs import clean_entity_name, clean_entity_type, fact_changes, fact_draft, graph_hops
from facts.models import Entity, EntityEvent, RelinkJob
from facts.selectors.entities import entity_get, entity_list
from facts.selectors.facts import fact_entities
from facts.services import fact_add, fact_update
from tenants.errors import InvalidInput, NotFound
from tenants.models import TenantEvent
from tenants.scope import tenant_scope

pytestmark = pytest.mark.django_db


def _add(tenant, actor, text: str, **kwargs):
    return fact_add(tenant=tenant, actor=actor, draft=fact_draft({"content": text, **kwargs})).fact


def _entity(tenant, name: str) -> Entity:
    found = entity_list(tenant=tenant, query=name).entities
    assert found, f"no entity {name!r}"
    return next((e for e in found if e.name == name), found[0])


def _names(tenant, fact) -> set[str]:
    return {e.name for e in fact_entities(tenant=tenant, fact_id=fact.pk)}


def _history(tenant, entity_id: int) -> list[str]:
    return [e.action for e in curation.entity_history(tenant=tenant, entity_id=entity_id)]


def _relink(tenant, job) -> RelinkJob:
    """What the worker does: run the job until it is done."""
    for _ in range(20):
        job = relink.relink_run(tenant=tenant, job_id=job.pk)
        if job.status == "done":
            return job
    raise AssertionError("the relink job never finished")


def test_old_wang_and_boss_wang_become_one_entity_by_a_merge(tenant, system_actor, owner_actor):
    first = _add(tenant, system_actor, "老王下周去上海出差。")
    second = _add(tenant, system_actor, "王总说预算要再砍一成。")
    lao, boss = _entity(tenant, "老王"), _entity(tenant, "王总")
    assert lao.pk != boss.pk, "two entities until someone says they are one"

    result = curation.entity_merge(tenant=tenant, entity_id=lao.pk, other_id=boss.pk,
                                   actor=owner_actor)  # fmt: skip
    assert result.relinked == 1
    merged = entity_get(tenant=tenant, entity_id=lao.pk)
    assert merged.aliases == ["王总"] and merged.fact_count == 2
    assert _names(tenant, first) == _names(tenant, second) | {"上海"} and "老王" in _names(
        tenant, second
    )
    with pytest.raises(NotFound):
        entity_get(tenant=tenant, entity_id=boss.pk)
    # Both histories tell the story, the merged entity's under its old id.
    assert _history(tenant, lao.pk) == ["merge"]
    assert _history(tenant, boss.pk) == ["merged"]
    merge = curation.entity_history(tenant=tenant, entity_id=lao.pk)[0]
    assert merge.actor == str(owner_actor) and merge.after["merged"]["name"] == "王总"
    with tenant_scope(tenant):
        assert TenantEvent.objects.for_tenant(tenant).filter(action="entity_merge").exists()
    # A new fact saying 王总 links to the merged entity: the alias works from now on.
    later = _add(tenant, system_actor, "王总明天请假。")
    assert _names(tenant, later) == {"老王"}
    # The graph walks the merged entity: 老王 and 上海 are reasoned about together.
    assert [h.fact.pk for h in entities_reason(tenant=tenant, names=["王总", "上海"])] == [first.pk]


def test_rename_keeps_the_old_name_as_an_alias_and_type_changes(tenant, system_actor, owner_actor):
    fact = _add(tenant, system_actor, "Northstar ships on Friday.")
    northstar = _entity(tenant, "Northstar")
    name = clean_entity_name("name", "  Northstar \n Platform ")
    assert name == "Northstar Platform"
    renamed = curation.entity_rename(tenant=tenant, entity_id=northstar.pk, name=name,
                                     actor=owner_actor)  # fmt: skip
    assert renamed.name == "Northstar Platform" and renamed.aliases == ["northstar"]
    # Extraction typed it a product (a name with no other clue); the admin says otherwise.
    retyped = curation.entity_set_type(tenant=tenant, entity_id=northstar.pk, type="other",
                                       actor=owner_actor)  # fmt: skip
    assert retyped.type == "other"
    assert _names(tenant, fact) == {"Northstar Platform"}
    again = _add(tenant, system_actor, "Northstar needs a new logo.")
    assert _names(tenant, again) == {"Northstar Platform"}
    assert _history(tenant, northstar.pk) == ["retype", "rename"]
    with pytest.raises(InvalidInput) as problem:
        clean_entity_type("planet")
    assert problem.value.field == "type"
    for nameless in ("   ", None, "x" * 201):
        with pytest.raises(InvalidInput) as problem:
            clean_entity_name("name", nameless)
        assert problem.value.field == "name"


def test_an_alias_links_the_facts_that_say_it_and_a_taken_name_is_refused(
    tenant, system_actor, owner_actor
):
    _add(tenant, system_actor, "Bob reviews releases.")
    bob = _entity(tenant, "Bob")
    curation.entity_alias_add(tenant=tenant, entity_id=bob.pk, alias="Bobby", actor=owner_actor)
    later = _add(tenant, system_actor, "Bobby fixed the login bug.")
    assert _names(tenant, later) == {"Bob"}
    _add(tenant, system_actor, "Alice owns Atlas.")
    alice = _entity(tenant, "Alice")
    with pytest.raises(InvalidInput) as problem:
        curation.entity_alias_add(tenant=tenant, entity_id=alice.pk, alias="bob",
                                  actor=owner_actor)  # fmt: skip
    assert problem.value.field == "alias" and "merge" in problem.value.message
    with pytest.raises(InvalidInput):
        curation.entity_rename(tenant=tenant, entity_id=alice.pk, name="Bob", actor=owner_actor)
    removed = curation.entity_alias_remove(tenant=tenant, entity_id=bob.pk, alias="bobby",
                                           actor=owner_actor)  # fmt: skip
    assert removed.aliases == []


def test_a_wrongly_merged_alias_is_split_off_with_its_facts(tenant, system_actor, owner_actor):
    zhang = _add(tenant, system_actor, "Zhang Wei leads the data team.")
    other = _add(tenant, system_actor, "Zhang Min joined the design team.")
    wei, min_ = _entity(tenant, "Zhang Wei"), _entity(tenant, "Zhang Min")
    curation.entity_merge(tenant=tenant, entity_id=wei.pk, other_id=min_.pk, actor=owner_actor)
    assert _names(tenant, other) == {"Zhang Wei"}
    result = curation.entity_split(tenant=tenant, entity_id=wei.pk, alias="zhang min",
                                   actor=owner_actor)  # fmt: skip
    assert result.relinked == 1 and result.split.name == "zhang min"
    assert _names(tenant, other) == {"zhang min"}
    assert _names(tenant, zhang) == {"Zhang Wei"}
    assert _history(tenant, wei.pk) == ["split", "merge"]
    assert _history(tenant, result.split.pk) == ["split_from"]
    with pytest.raises(InvalidInput):
        curation.entity_split(tenant=tenant, entity_id=wei.pk, alias="nobody", actor=owner_actor)


def test_the_user_dictionary_shapes_extraction_in_both_languages() -> None:
    dictionary = Dictionary(terms=(("北极星计划", "product"), ("王建国", "person"),
                                   ("Helix Ops", "product")))  # fmt: skip
    text = "王建国负责北极星计划，helix ops 也归他。Helix Operations 不是。"
    found = {e.name: e.type for e in extract_entities(text, dictionary=dictionary)}
    assert found["王建国"] == "person" and found["北极星计划"] == "product"
    assert found["Helix Ops"] == "product"
    assert "Helix Operations" in found, "a term is found as whole words only"
    # Without the dictionary, jieba does not see the project name as one word.
    assert "北极星计划" not in {e.name for e in extract_entities("王建国负责北极星计划")}


def test_an_extractor_that_knows_no_dictionary_still_gets_its_terms(settings) -> None:
    settings.MNEMOSYNE_ENTITY_EXTRACTOR = "tests.extractors.capitalised_people"
    dictionary = Dictionary(terms=(("Blue Harbor", "place"),))
    found = {
        e.name: e.type for e in entities_found("Ana sails to Blue Harbor", dictionary=dictionary)
    }
    assert found == {"Blue Harbor": "place", "Ana": "person"}


def test_a_dictionary_change_relinks_existing_facts_in_a_job_with_progress(
    tenant, system_actor, owner_actor
):
    facts = [_add(tenant, system_actor, f"第{i}次评审：北极星计划进展顺利。") for i in range(5)]
    assert all("北极星计划" not in _names(tenant, f) for f in facts)
    entry, job = curation.dictionary_add(tenant=tenant, term="北极星计划", type="product",
                                         actor=owner_actor)  # fmt: skip
    assert job.status == "queued" and job.total == 5 and job.done == 0
    # The worker runs it in batches and counts its progress.
    monkey_batch = relink.RELINK_BATCH
    relink.RELINK_BATCH = 2
    try:
        half = relink.relink_run(tenant=tenant, job_id=job.pk, seconds=0.0)
        assert half.status == "queued" and half.done == 2 and half.percent == 40
        done = _relink(tenant, half)
    finally:
        relink.RELINK_BATCH = monkey_batch
    assert done.done == 5 and done.percent == 100 and done.finished_at is not None
    assert all("北极星计划" in _names(tenant, f) for f in facts)
    assert _entity(tenant, "北极星计划").type == "product"
    # Removing the term re-links again: the project is no longer one word.
    job = curation.dictionary_remove(tenant=tenant, term="北极星计划", actor=owner_actor)
    _relink(tenant, job)
    assert all("北极星计划" not in _names(tenant, f) for f in facts)
    with tenant_scope(tenant):
        actions = set(TenantEvent.objects.for_tenant(tenant).values_list("action", flat=True))
    assert {"dictionary_add", "dictionary_remove"} <= actions


def test_editing_a_fact_relinks_its_entities(tenant, system_actor, owner_actor) -> None:
    fact = _add(tenant, system_actor, "Alice reviews the Atlas budget.")
    assert _names(tenant, fact) == {"Alice", "Atlas"}
    fact_update(
        tenant=tenant,
        fact_id=fact.pk,
        actor=owner_actor,
        changes=fact_changes({"content": "Carol reviews the Atlas budget."}),
    )
    assert _names(tenant, fact) == {"Carol", "Atlas"}


def test_a_changed_extractor_relinks_every_tenant(tenant, other_tenant, system_actor, settings):
    fact = _add(tenant, system_actor, "Mia met Noah in Lisbon.")
    _add(other_tenant, system_actor, "Ivo met Ana.")
    assert relink.relink_sweep() == [], "the first sweep records the extractor it found"
    settings.MNEMOSYNE_ENTITY_EXTRACTOR = "tests.extractors.capitalised_people"
    todo = relink.relink_sweep()
    assert {tenant_id for tenant_id, _ in todo} == {tenant.pk, other_tenant.pk}
    job = next(RelinkJob.objects.for_tenant(tenant).filter(pk=j) for t, j in todo if t == tenant.pk)
    with tenant_scope(tenant):
        _relink(tenant, job.get())
    assert _names(tenant, fact) == {"Mia", "Noah", "Lisbon"}
    assert relink.relink_sweep() == [], "nothing changed since"


def test_related_walks_one_and_two_hops_by_entity_id(tenant, system_actor) -> None:
    _add(tenant, system_actor, "Alice Chen leads the Northstar project")
    _add(tenant, system_actor, "Bob Li reviews every Northstar release")
    alice = _entity(tenant, "Alice Chen")
    one = entity_related(tenant=tenant, entity_id=alice.pk, hops=1)
    two = entity_related(tenant=tenant, entity_id=alice.pk, hops=2)
    assert [h.fact.content for h in one] == ["Alice Chen leads the Northstar project"]
    assert {h.fact.content for h in two} == {
        "Alice Chen leads the Northstar project",
        "Bob Li reviews every Northstar release",
    }
    with pytest.raises(InvalidInput, match="hops"):
        graph_hops(3)  # what every surface parses `hops` with, before the graph is asked


def test_an_outsider_cannot_curate_or_see_the_history(
    tenant, other_tenant, system_actor, owner_actor
):
    _add(tenant, system_actor, "Alice owns Atlas.")
    alice = _entity(tenant, "Alice")
    _add(other_tenant, system_actor, "Bob owns Orion.")
    bob = _entity(other_tenant, "Bob")
    for call in (
        lambda: curation.entity_rename(tenant=other_tenant, entity_id=alice.pk, name="Eve",
                                       actor=owner_actor),
        lambda: curation.entity_history(tenant=other_tenant, entity_id=alice.pk),
        lambda: curation.entity_merge(tenant=tenant, entity_id=alice.pk, other_id=bob.pk,
                                      actor=owner_actor),
        lambda: entity_related(tenant=other_tenant, entity_id=alice.pk),
    ):  # fmt: skip
        with pytest.raises(NotFound):
            call()
    with tenant_scope(tenant):
        assert not EntityEvent.objects.for_tenant(tenant).exists()
    assert entity_get(tenant=tenant, entity_id=alice.pk).name == "Alice"
