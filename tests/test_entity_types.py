"""Entity types a person would accept, and stored entities that follow a new extractor's types
unless an admin set the type by hand."""

from __future__ import annotations

import pytest

from facts import curation, relink
from facts.extract import extract_entities
from facts.inputs import fact_draft
from facts.models import RelinkJob
from facts.selectors.entities import entity_get, entity_list
from facts.services import fact_add
from tenants.scope import tenant_scope


def _types(text: str) -> dict[str, str]:
    return {e.name: e.type for e in extract_entities(text)}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # A given name, a city of the gazetteer, a version number after a tool's name.
        ("Alice moved to Berlin.", {"Alice": "person", "Berlin": "place"}),
        ("We upgraded Kubernetes to 1.30 last night.", {"Kubernetes": "product"}),
        # Context words: works at / joined (an organisation), said (a person).
        ("My cousin works at Northwind.", {"Northwind": "organization"}),
        ("Tunde said the shipment left.", {"Tunde": "person"}),
        # Shapes: capitals inside a word, a listed company.
        ("Ordered an iPhone for Mum.", {"iPhone": "product"}),
        ("Sent the invoice to Microsoft.", {"Microsoft": "organization"}),
        # Chinese: a tag jieba gives (nr) is not a person without a surname.
        ("我喜欢喝乌龙茶。", {"乌龙茶": "other"}),
        ("下周去凤凰玩。", {"凤凰": "place"}),
        ("小周在京东上班。", {"小周": "person", "京东": "organization"}),
        ("钟南山院士提醒注意流感。", {"钟南山": "person"}),
        ("每次合并都会用Jenkins构建镜像。", {"Jenkins": "product"}),
        # Names in one list are of one kind: Sofia is a person here, not Bulgaria's capital.
        ("Attendance: Lena, Matteo, Sofia.", {"Lena": "person", "Sofia": "person"}),
    ],
)
def test_names_get_the_type_a_person_would_give_them(text: str, expected: dict[str, str]):
    found = _types(text)
    assert {name: found.get(name) for name in expected} == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Who someone is to the writer, a family title, a list of people.
        ("My sister Ottilie flew to Lisbon on Friday.", {"Ottilie": "person", "Lisbon": "place"}),
        ("Aunt Bea sent photos from the farm.", {"Aunt Bea": "person"}),
        ("Attendees: Ilse, Bruno, Florence.", {"Ilse": "person", "Florence": "person"}),
        # An employer, a company that announces, a club one is a fan of.
        ("Renata got an interview at Klarna next week.", {"Klarna": "organization"}),
        (
            "Northwind Analytics announced layoffs in Dublin.",
            {"Northwind Analytics": "organization", "Dublin": "place"},
        ),
        ("Lars is a huge fan of Ajax.", {"Lars": "person", "Ajax": "organization"}),
        # Things one installs, upgrades, buys.
        ("I installed Obsidian on the work laptop.", {"Obsidian": "product"}),
        ("We upgraded Grafana to 10.2 last night.", {"Grafana": "product"}),
        (
            "Bought a used Kindle Oasis from Gunnar.",
            {"Kindle Oasis": "product", "Gunnar": "person"},
        ),
        # Films watched, pets, events: "other".
        ("Watched Arrival again with Tobias.", {"Arrival": "other", "Tobias": "person"}),
        ("Our cat Mochi knocked over the plant.", {"Mochi": "other"}),
        ("Signed up for the Lisbon Marathon in October.", {"Lisbon Marathon": "other"}),
        # Chinese: where one goes, where one works, what crashes, who speaks.
        ("周末去苏州玩了两天。", {"苏州": "place"}),
        ("刘敏下个月入职阿里巴巴。", {"刘敏": "person", "阿里巴巴": "organization"}),
        ("马可在美团实习。", {"马可": "person", "美团": "organization"}),
        ("国家电网今年又在招聘。", {"国家电网": "organization"}),
        ("新装的钉钉一打开就闪退。", {"钉钉": "product"}),
        ("我老婆天天刷小红书。", {"小红书": "product"}),
        ("张磊说明天的会改到下午。", {"张磊": "person"}),
        ("参会人员：王芳、李军、陈晨。", {"王芳": "person", "李军": "person", "陈晨": "person"}),
        ("这周在读《活着》，很压抑。", {"活着": "other"}),
        # Latin names in Chinese text.
        ("数据库从Oracle迁到了PostgreSQL。", {"Oracle": "product", "PostgreSQL": "product"}),
        (
            "Sophie在Shopify上班，住在多伦多。",
            {"Sophie": "person", "Shopify": "organization", "多伦多": "place"},
        ),
    ],
)
def test_everyday_sentences_in_both_languages_get_the_types_a_reader_expects(
    text: str, expected: dict[str, str]
):
    found = _types(text)
    assert {name: found.get(name) for name in expected} == expected


def test_the_fitted_model_ships_with_weights_for_every_type():
    from facts.entity_types import TYPES, model

    fitted = model()
    for stage in ("own", "final"):
        assert len(fitted[stage]["bias"]) == len(TYPES)
        assert all(len(row) == len(TYPES) for row in fitted[stage]["weights"].values())
    # A cue the tuning sentences never show keeps the weight it was given by hand.
    assert max(fitted["own"]["weights"]["en_amp"]) == fitted["own"]["weights"]["en_amp"][2]


def _add(tenant, actor, text: str):
    return fact_add(tenant=tenant, actor=actor, draft=fact_draft({"content": text})).fact


def _entity(tenant, name: str):
    return next(e for e in entity_list(tenant=tenant, query=name).entities if e.name == name)


@pytest.mark.django_db
def test_a_new_extractor_retypes_stored_entities_but_not_one_typed_by_hand(
    tenant, system_actor, owner_actor, settings
):
    # Stored under an extractor that calls every capitalised word a person.
    settings.MNEMOSYNE_ENTITY_EXTRACTOR = "tests.extractors.capitalised_people"
    _add(tenant, system_actor, "Alice moved to Berlin in May.")
    _add(tenant, system_actor, "The Kubernetes cluster runs the staging deploy.")
    _add(tenant, system_actor, "Oslo has a new office.")
    assert {_entity(tenant, n).type for n in ("Alice", "Berlin", "Kubernetes", "Oslo")} == {
        "person"
    }
    assert relink.relink_sweep() == [], "the first sweep records the extractor it found"
    oslo = _entity(tenant, "Oslo")
    curation.entity_set_type(tenant=tenant, entity_id=oslo.pk, type="other", actor=owner_actor)

    settings.MNEMOSYNE_ENTITY_EXTRACTOR = "facts.extract.extract_entities"
    todo = relink.relink_sweep()
    job_id = next(job for tenant_id, job in todo if tenant_id == tenant.pk)
    for _ in range(20):
        job = relink.relink_run(tenant=tenant, job_id=job_id)
        if job is not None and job.status == "done":
            break
    with tenant_scope(tenant):
        assert RelinkJob.objects.for_tenant(tenant).get(pk=job_id).status == "done"
    assert _entity(tenant, "Alice").type == "person"
    assert _entity(tenant, "Berlin").type == "place"
    assert _entity(tenant, "Kubernetes").type == "product"
    # The admin's choice stands, and the entity's history still shows only theirs.
    assert entity_get(tenant=tenant, entity_id=oslo.pk).type == "other"
    history = curation.entity_history(tenant=tenant, entity_id=oslo.pk)
    assert [(e.action, e.actor) for e in history] == [("retype", str(owner_actor))]


def test_the_fit_reads_names_and_their_labels_and_never_the_evaluation_sets(monkeypatch):
    from bench import entity_types_fit as fit
    from facts.entity_types import TYPES

    items = [
        {"text": "My sister Ottilie flew to Lisbon.", "lang": "en",
         "entities": [{"name": "Ottilie", "type": "person"}, {"name": "Lisbon", "type": "place"}]},
        {"text": "马可在美团实习。", "lang": "zh",
         "entities": [{"name": "马可", "type": "person"},
                      {"name": "美团", "type": "organization"}]},
    ]  # fmt: skip
    rows = fit.examples(items)
    assert {(r["name"], r["label"]) for r in rows} >= {
        ("Ottilie", "person"),
        ("美团", "organization"),
    }
    names = fit.Design(rows).names
    fitted = fit.fit_both([dict(r) for r in rows], 0.01, names)
    predicted = fit.predict([dict(r) for r in rows], fitted)
    assert [TYPES[i] for i in predicted] == [r["label"] for r in rows]

    monkeypatch.setattr(
        "sys.argv", ["entity_types_fit", "--data", "bench/data/entities_styles_eval.jsonl"]
    )
    with pytest.raises(SystemExit, match="evaluation set"):
        fit.main()
