"""Hybrid recall and context assembly, as an agent would notice them."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest
from django.conf import settings
from django.core.cache import caches
from django.db import connection, transaction
from django.utils import timezone

from facts import services
from facts.embedding import facts_embed_batch
from facts.inputs import fact_draft
from facts.models import Fact, FactVector
from facts.selectors.facts import fact_get
from indexing.embedders import get_embedder
from indexing.tokens import count_tokens
from indexing.vectors import index_name
from operations.roles import as_owner
from retrieval import channels, search
from retrieval.context import context_build, context_cached
from retrieval.inputs import recall_query
from retrieval.search import recall_search
from tenants.errors import InvalidInput
from tenants.inputs import tenant_draft
from tenants.scope import tenant_scope
from tenants.services import tenant_create

pytestmark = pytest.mark.django_db

FACTS = [
    "Alice prefers green tea over coffee in the morning",
    "The Northstar project ships its beta on Friday",
    "Bob is allergic to peanuts",
    "老王下周三去上海出差",
    "团队每周一上午十点开站会",
    "The staging database runs PostgreSQL 18 with pgvector",
]


def _store(tenant, actor, texts=FACTS, embed=True, **kw) -> list[Fact]:
    facts = [
        services.fact_add(tenant=tenant, actor=actor, draft=fact_draft({"content": t, **kw})).fact
        for t in texts
    ]
    if embed:
        while facts_embed_batch(tenant=tenant):
            pass
    return facts


def _top(tenant, query: str, **kw) -> list[str]:
    return [
        h.fact.content
        for h in recall_search(tenant=tenant, query=recall_query({"query": query, **kw})).hits
    ]


def test_english_and_chinese_questions_find_their_facts(tenant, system_actor) -> None:
    _store(tenant, system_actor)
    assert _top(tenant, "what does Alice like to drink?")[0] == FACTS[0]
    assert _top(tenant, "When does Northstar ship?")[0] == FACTS[1]
    assert _top(tenant, "老王什么时候去上海")[0] == FACTS[3]
    assert _top(tenant, "站会是几点")[0] == FACTS[4]


def test_a_fact_is_found_by_full_text_before_it_is_embedded(tenant, system_actor) -> None:
    _store(tenant, system_actor, embed=False)
    hits = recall_search(tenant=tenant, query=recall_query({"query": "peanuts allergy"})).hits
    assert hits[0].fact.content == FACTS[2]
    assert hits[0].channels["fts"] == 1.0 and hits[0].channels["vec"] == 0.0


def test_a_word_first_stored_after_the_statistics_is_found_at_once(tenant, system_actor):
    _store(tenant, system_actor, embed=False)
    recall_search(
        tenant=tenant, query=recall_query({"query": "tea"})
    )  # computes the tenant's full-text statistics
    services.fact_add(
        tenant=tenant,
        actor=system_actor,
        draft=fact_draft({"content": "A quokka lives on Rottnest"}),
    )
    hits = recall_search(
        tenant=tenant,
        query=recall_query({"query": "Where does the quokka live?", "channels": ["fts"]}),
    ).hits
    assert [h.fact.content for h in hits] == ["A quokka lives on Rottnest"]


def test_common_words_still_put_the_fact_that_has_them_all_first(
    tenant, system_actor, monkeypatch
) -> None:
    from retrieval import channels

    texts = [f"note {i}: the release is ready" for i in range(8)]
    texts += [f"note {i}: Orion team meeting" for i in range(8)]
    texts += [f"note {i}: who owns this?" for i in range(8)]
    _store(tenant, system_actor, texts=[*texts, "Dana owns the Orion release"], embed=False)
    # As if the tenant were large: more facts share a word with the query than one query may
    # read, so candidates come from the facts that share the most of the query's words.
    monkeypatch.setattr(channels, "FTS_EXACT", 5)
    monkeypatch.setattr(channels, "FTS_TOUCH", 5)
    hits = recall_search(
        tenant=tenant,
        query=recall_query({"query": "Who owns the Orion release?", "channels": ["fts"]}),
    )
    assert hits.hits[0].fact.content == "Dana owns the Orion release"
    assert len(hits.hits) > 1, "the cascade goes on to facts that share fewer words"


def test_a_large_tenants_statistics_are_refreshed_off_the_read_path(
    tenant, system_actor, monkeypatch
) -> None:
    from retrieval import stats
    from retrieval.tasks import retrieval_refresh_corpus_stats

    monkeypatch.setattr(stats, "INLINE_LIMIT", 0)
    monkeypatch.setattr(stats, "STALE_MIN_WRITES", 1)
    sent: list[int] = []
    monkeypatch.setattr(retrieval_refresh_corpus_stats, "delay", sent.append)
    _store(tenant, system_actor, embed=False)
    with tenant_scope(tenant) as tenant_id:
        assert stats.corpus_stats(tenant_id=tenant_id).documents == len(FACTS)
    _store(tenant, system_actor, texts=["one more", "and another one"], embed=False)
    with tenant_scope(tenant) as tenant_id:
        # Stale, and the tenant counts as large: recall goes on with the old figures...
        assert stats.corpus_stats(tenant_id=tenant_id).documents == len(FACTS)
        assert stats.corpus_stats(tenant_id=tenant_id).documents == len(FACTS)
    assert sent == [tenant.pk], "...and asks a worker once"
    assert retrieval_refresh_corpus_stats(tenant.pk) == len(FACTS) + 2
    with tenant_scope(tenant) as tenant_id:
        assert stats.corpus_stats(tenant_id=tenant_id).documents == len(FACTS) + 2


def test_english_questions_find_chinese_memories_by_meaning(tenant, system_actor) -> None:
    # No shared word: only the vector channel can make these matches.
    _store(tenant, system_actor)
    assert _top(tenant, "business trip to Shanghai", channels=["vec"])[0] == FACTS[3]
    assert _top(tenant, "team stand-up meeting time", channels=["vec"])[0] == FACTS[4]


BILINGUAL = [
    "Bob is allergic to peanuts",
    "The printer on the third floor is out of toner",
    "Our cat is called Mochi and she sleeps on the printer",
    "老王下周三去上海出差",
    "团队每周一上午十点开站会",
    "我女儿的生日是三月十二日",
]


def test_questions_find_memories_written_in_the_other_language(tenant, system_actor) -> None:
    # The default channels, a bilingual tenant: a Chinese question must not settle for Chinese
    # memories about other things, nor an English one for English memories that share a word.
    _store(tenant, system_actor, texts=BILINGUAL)
    assert _top(tenant, "鲍勃对什么过敏？")[0] == BILINGUAL[0]
    assert _top(tenant, "三楼的打印机怎么了？")[0] == BILINGUAL[1]
    assert _top(tenant, "When is my daughter's birthday?")[0] == BILINGUAL[5]
    assert _top(tenant, "Who is going on a business trip to Shanghai?")[0] == BILINGUAL[3]
    assert _top(tenant, "What time is the team's weekly meeting?")[0] == BILINGUAL[4]


def test_the_entity_channel_pulls_in_facts_about_the_people_asked_about(tenant, system_actor):
    _store(
        tenant,
        system_actor,
        texts=["Alice's laptop is a ThinkPad", "Yesterday Bob fixed it", "tea"],
    )
    hits = recall_search(
        tenant=tenant, query=recall_query({"query": "What did Bob do?", "channels": ["entity"]})
    ).hits
    assert [h.fact.content for h in hits] == ["Yesterday Bob fixed it"]
    assert hits[0].channels == {"entity": 1.0}


@pytest.mark.parametrize(
    "query",
    ["'\"", "a & | ! ( ) :* <-> \\", "DROP TABLE facts_fact; --", "%_%", "''''", "😀", "ñ" * 3000],
)
def test_no_query_text_can_break_recall(tenant, system_actor, query) -> None:
    _store(tenant, system_actor, embed=False)
    result = recall_search(tenant=tenant, query=recall_query({"query": query}))
    assert isinstance(result.hits, list)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"query": "  "}, "query"),
        ({"query": None}, "query"),
        ({"query": "tea", "k": 0}, "k"),
        ({"query": "tea", "k": 1000}, "k"),
        ({"query": "tea", "channels": ["magic"]}, "channels"),
        ({"query": "tea", "kind": "note"}, "kind"),
        ({"query": "tea", "min_trust": 2}, "min_trust"),
    ],
)
def test_bad_recall_arguments_are_named(tenant, kwargs, field) -> None:
    with pytest.raises(InvalidInput) as error:
        recall_search(tenant=tenant, query=recall_query({**kwargs}))
    assert error.value.field == field


def test_filters_trust_and_status(tenant, system_actor) -> None:
    work = services.fact_add(
        tenant=tenant,
        actor=system_actor,
        draft=fact_draft(
            {
                "content": "the deploy key lives in the vault",
                "scope": "user:alice/project:beta",
                "category": "project",
            }
        ),
    ).fact
    services.fact_add(
        tenant=tenant,
        actor=system_actor,
        draft=fact_draft({"content": "the deploy key of my blog", "scope": "user:bob"}),
    )
    doubtful = services.fact_add(
        tenant=tenant,
        actor=system_actor,
        draft=fact_draft({"content": "the deploy key is on a sticky note", "trust": 0.2}),
    ).fact
    removed = services.fact_add(
        tenant=tenant, actor=system_actor, draft=fact_draft({"content": "the deploy key is in git"})
    ).fact
    services.fact_remove(tenant=tenant, fact_id=removed.pk, actor=system_actor)
    all_ids = {
        h.fact.pk
        for h in recall_search(tenant=tenant, query=recall_query({"query": "deploy key"})).hits
    }
    assert removed.pk not in all_ids, "a removed fact leaves retrieval"
    assert doubtful.pk not in all_ids, "below the tenant's min_trust (0.3)"
    assert doubtful.pk in {
        h.fact.pk
        for h in recall_search(
            tenant=tenant, query=recall_query({"query": "deploy key", "min_trust": 0})
        ).hits
    }
    scoped = recall_search(
        tenant=tenant, query=recall_query({"query": "deploy key", "scope": "user:alice"})
    ).hits
    assert [h.fact.pk for h in scoped] == [work.pk]
    assert [
        h.fact.pk
        for h in recall_search(
            tenant=tenant, query=recall_query({"query": "deploy", "category": "project"})
        ).hits
    ] == [work.pk]


def test_trust_and_age_order_equally_relevant_facts(tenant, system_actor) -> None:
    old = services.fact_add(
        tenant=tenant,
        actor=system_actor,
        draft=fact_draft(
            {"content": "standup moved to ten", "created_at": timezone.now() - timedelta(days=180)}
        ),
    ).fact
    new = services.fact_add(
        tenant=tenant, actor=system_actor, draft=fact_draft({"content": "standup moved to 10"})
    ).fact
    decayed = recall_search(
        tenant=tenant, query=recall_query({"query": "standup moved", "half_life_days": 90})
    ).hits
    assert [h.fact.pk for h in decayed] == [new.pk, old.pk]
    assert decayed[1].factors["decay"] == pytest.approx(0.25, abs=0.01)
    for _ in range(6):
        services.fact_feedback(tenant=tenant, fact_id=old.pk, helpful=True, actor=system_actor)
    services.fact_feedback(tenant=tenant, fact_id=new.pk, helpful=False, actor=system_actor)
    trusted = recall_search(tenant=tenant, query=recall_query({"query": "standup moved"})).hits
    assert trusted[0].fact.pk == old.pk, "decay is off by default: the trusted fact leads"
    assert trusted[0].explain()["factors"]["trust"] == pytest.approx(0.8)


def test_conversation_turns_lift_their_neighbours(tenant, system_actor) -> None:
    lines = [
        ("Caroline", "Guess where I went last weekend!"),
        ("Melanie", "Where?"),
        ("Caroline", "Yosemite, we hiked to Half Dome"),
        ("Melanie", "Wow, sounds amazing"),
    ]
    for speaker, text in lines:
        services.fact_add(
            tenant=tenant,
            actor=system_actor,
            draft=fact_draft(
                {"content": text, "kind": "turn", "session_id": "s1", "speaker": speaker}
            ),
        )
    while facts_embed_batch(tenant=tenant):
        pass
    hits = recall_search(
        tenant=tenant,
        query=recall_query({"query": "Where did Caroline go hiking?", "kind": "turn"}),
    ).hits
    assert hits[0].fact.content == "Yosemite, we hiked to Half Dome"
    assert hits[0].factors["speaker"] > 0 and hits[0].factors["neighbour"] > 0


def test_the_turns_next_to_a_candidate_join_it_scored_by_every_channel(
    tenant, system_actor, monkeypatch
) -> None:
    lines = [
        ("Caroline", "Did you see the game last night?"),
        ("Melanie", "No, what happened?"),
        ("Caroline", "Guess where I went last weekend!"),
        ("Melanie", "Where?"),
        ("Caroline", "Yosemite, we hiked to Half Dome"),
        ("Melanie", "Wow, sounds amazing"),
    ]
    for position, (speaker, text) in enumerate(lines):
        services.fact_add(
            tenant=tenant,
            actor=system_actor,
            draft=fact_draft(
                {
                    "content": text,
                    "kind": "turn",
                    "session_id": "s1",
                    "position": position,
                    "speaker": speaker,
                }
            ),
        )
    while facts_embed_batch(tenant=tenant):
        pass
    monkeypatch.setattr(channels, "CANDIDATES", 1)  # each channel brings its single best turn
    hits = recall_search(
        tenant=tenant, query=recall_query({"query": "Yosemite Half Dome hike", "kind": "turn"})
    ).hits
    found = {h.fact.content: h for h in hits}
    assert hits[0].fact.content == lines[4][1]
    # The turns before and after it came in as neighbours, and both channels scored them.
    for neighbour in (lines[3][1], lines[5][1]):
        assert neighbour in found
        assert found[neighbour].factors["neighbour"] > 0
    assert all(set(h.channels) == {"fts", "vec"} for h in hits)
    assert lines[0][1] not in found, "a turn far from every candidate stays out"


def test_an_outsider_recalls_nothing_of_this_tenant(tenant, other_tenant, system_actor) -> None:
    _store(tenant, system_actor)
    _store(other_tenant, system_actor, texts=["Globex keeps its secrets in Springfield"])
    for query in FACTS:
        hits = recall_search(
            tenant=other_tenant, query=recall_query({"query": query, "min_trust": 0})
        ).hits
        assert {h.fact.tenant_id for h in hits} <= {other_tenant.pk}
    block = context_build(tenant=other_tenant, query="Alice tea Northstar 老王")
    assert "Alice" not in block.text and "老王" not in block.text


def _drop_tenant_indexes(cursor) -> None:
    """Leave the planner no tenant index and no sequential scan (the test's transaction is
    rolled back afterwards), so the plan shows whether the index under test can be used."""
    cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    for table in ("facts_fact", "facts_factvector"):
        cursor.execute(
            "SELECT conname FROM pg_constraint WHERE conrelid = %s::regclass AND contype = 'u'",
            [table],
        )
        for (name,) in cursor.fetchall():
            cursor.execute(f"ALTER TABLE {table} DROP CONSTRAINT {name} CASCADE")
        cursor.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = %s "
            "AND indexdef LIKE '%%USING btree%%' AND indexname NOT LIKE '%%_pkey'",
            [table],
        )
        for (name,) in cursor.fetchall():
            cursor.execute(f"DROP INDEX {name}")
    cursor.execute("SET LOCAL enable_seqscan = off")


@pytest.mark.django_db(transaction=True)
def test_full_text_search_uses_its_index_under_row_level_security(tenant, system_actor):
    from indexing import sql

    _store(tenant, system_actor, embed=False)
    # Dropping indexes is the owner's (row-level security binds the owner too); rolled back.
    with as_owner(), transaction.atomic():
        with connection.cursor() as cursor:
            _drop_tenant_indexes(cursor)
        with tenant_scope(tenant), connection.cursor() as cursor:
            cursor.execute(
                "EXPLAIN SELECT id FROM facts_fact WHERE tenant_id = %s "
                "AND search_vector @@ %s::tsquery",
                [tenant.pk, sql.tsquery_any([["tea"], ["peanut"]])],
            )
            plan = "\n".join(row[0] for row in cursor.fetchall())
        transaction.set_rollback(True)
    assert "fact_search_vector" in plan, plan


@pytest.mark.django_db(transaction=True)
def test_a_small_tenant_among_large_ones_still_gets_its_k_best(tenant, system_actor) -> None:
    big = tenant_create(actor=system_actor, draft=tenant_draft({"slug": "big", "name": "Big"}))
    mine = _store(tenant, system_actor, texts=[f"release checklist item {i}" for i in range(5)])
    embedder = get_embedder(settings.MNEMOSYNE_EMBEDDER, settings.MNEMOSYNE_MODEL_DIR)
    query_vector = embedder.embed(["release checklist"], purpose="query")[0]
    rng = np.random.default_rng(7)
    crowd = [
        Fact(
            tenant=big, content=f"crowd {i}", content_hash=f"{i:064d}", created_by="test",
            created_at=timezone.now(), embedding_model=embedder.name,
        )
        for i in range(1000)
    ]  # fmt: skip
    with tenant_scope(big):
        Fact.objects.bulk_create(crowd, batch_size=500)
        vectors = []
        for fact in crowd:
            # The big tenant's vectors all sit closer to the query than the small tenant's do.
            vector = query_vector + rng.normal(0, 0.01, query_vector.shape).astype(np.float32)
            vectors.append(
                FactVector(
                    tenant=big, fact=fact, model=embedder.name, dimension=384,
                    embedding=vector / np.linalg.norm(vector),
                )
            )  # fmt: skip
        FactVector.objects.bulk_create(vectors, batch_size=500)
    # Dropping indexes and ANALYZE are the owner's (row-level security binds the owner too);
    # rolled back at the end.
    with as_owner(), transaction.atomic():
        with connection.cursor() as cursor:
            # Leave the planner only the HNSW index (this test's transaction is rolled back): a
            # small tenant could otherwise be served by a tenant index and an exact sort.
            _drop_tenant_indexes(cursor)
            cursor.execute("ANALYZE facts_fact")
            cursor.execute("ANALYZE facts_factvector")
        plans: list[str] = []

        def explain(execute, sql, params, many, context):
            if "<=>" in sql and not plans:
                plans.append("")  # the EXPLAIN below comes through here too
                context["cursor"].execute("EXPLAIN " + sql, params)
                plans[0] = "\n".join(row[0] for row in context["cursor"].fetchall())
            return execute(sql, params, many, context)

        with connection.execute_wrapper(explain):
            hits = recall_search(
                tenant=tenant,
                query=recall_query({"query": "release checklist", "k": 5, "channels": ["vec"]}),
            ).hits
        assert index_name(embedder.name) in plans[0], plans[0]
        assert sorted(h.fact.pk for h in hits) == sorted(f.pk for f in mine)
        # The control: without iterative scans the index gives up early and the tenant gets less.
        with tenant_scope(tenant), connection.cursor() as cursor:
            cursor.execute("SET LOCAL hnsw.iterative_scan = off")
            cursor.execute(
                "SELECT count(*) FROM (SELECT v.id FROM facts_factvector v JOIN facts_fact f "
                "ON f.tenant_id = v.tenant_id AND f.id = v.fact_id WHERE v.tenant_id = %s "
                "AND f.status = 'active' AND v.model = %s "
                "ORDER BY v.embedding::vector(384) <=> %s::vector(384) LIMIT 5) t",
                [tenant.pk, embedder.name, str(query_vector.tolist())],
            )
            assert cursor.fetchone()[0] < 5
        transaction.set_rollback(True)


# -- context ----------------------------------------------------------------------------------


def test_context_levels_are_deduplicated_and_fit_the_budget(tenant, system_actor) -> None:
    _store(tenant, system_actor)
    for text in ["Let's plan the Northstar beta", "Friday works for me"]:
        services.fact_add(
            tenant=tenant,
            actor=system_actor,
            draft=fact_draft(
                {"content": text, "kind": "turn", "session_id": "s9", "speaker": "Dana"}
            ),
        )
    block = context_build(
        tenant=tenant, query="When does Northstar ship?", session_id="s9", hot_restore=True
    )
    assert block.text.startswith("## Recent conversation\n")
    assert "Dana: Let's plan the Northstar beta" in block.text
    assert block.text.index("Let's plan") < block.text.index("Friday works")
    assert "## Known facts" in block.text
    assert len(block.fact_ids) == len(set(block.fact_ids)), "no fact appears twice"
    assert block.tokens == pytest.approx(count_tokens(block.text), abs=len(block.text.splitlines()))
    # A question: a one-word query can read as small talk to the relevance floor
    # (docs/relevance-floor.md).
    small = context_build(tenant=tenant, query="When does Northstar ship?", budget=60)
    assert 0 < count_tokens(small.text) <= 60


def test_the_prefetch_cache_is_invalidated_by_any_write(tenant, system_actor) -> None:
    caches["blocks"].clear()
    _store(tenant, system_actor, embed=False)
    first = context_cached(tenant=tenant, query="who likes tea?")
    assert context_cached(tenant=tenant, query="who likes tea?").text == first.text
    services.fact_add(
        tenant=tenant, actor=system_actor, draft=fact_draft({"content": "Carol likes tea too"})
    )
    assert "Carol likes tea too" in context_cached(tenant=tenant, query="who likes tea?").text


def test_retrieval_counts_are_kept(tenant, system_actor) -> None:
    from facts.tasks import facts_record_retrievals

    fact = _store(tenant, system_actor, embed=False)[0]
    now = timezone.now()
    assert facts_record_retrievals(tenant.pk, [fact.pk], now.isoformat()) == 1
    # The same message delivered again (its worker died before acknowledging it) counts once.
    assert facts_record_retrievals(tenant.pk, [fact.pk], now.isoformat()) == 0
    later = now + timedelta(seconds=1)
    assert facts_record_retrievals(tenant.pk, [fact.pk], later.isoformat()) == 1
    stored = fact_get(tenant=tenant, fact_id=fact.pk)
    assert stored.retrieval_count == 2 and stored.last_retrieved_at == later


def test_a_web_process_adds_up_retrievals_and_sends_them_once_per_interval(
    tenant, system_actor, settings, django_capture_on_commit_callbacks
) -> None:
    from memoryadmin.celery import app
    from retrieval.context import retrievals_record

    tea, coffee = _store(tenant, system_actor, embed=False)[:2]
    app.conf.task_always_eager = True
    try:
        settings.MNEMOSYNE_RETRIEVAL_FLUSH_SECONDS = 3600
        with django_capture_on_commit_callbacks(execute=True) as sent:
            retrievals_record(tenant=tenant, fact_ids=[tea.pk])  # starts the interval
            retrievals_record(tenant=tenant, fact_ids=[tea.pk, coffee.pk])
            retrievals_record(tenant=tenant, fact_ids=[tea.pk])
        assert sent == []  # nothing sent within the interval
        assert fact_get(tenant=tenant, fact_id=tea.pk).retrieval_count == 0
        settings.MNEMOSYNE_RETRIEVAL_FLUSH_SECONDS = 0
        with django_capture_on_commit_callbacks(execute=True) as sent:
            retrievals_record(tenant=tenant, fact_ids=[coffee.pk])
        assert len(sent) == 1  # one message for the tenant, with every count
    finally:
        app.conf.task_always_eager = False
    assert fact_get(tenant=tenant, fact_id=tea.pk).retrieval_count == 3
    assert fact_get(tenant=tenant, fact_id=coffee.pk).retrieval_count == 2


def _sessions(tenant, actor, sessions: dict[str, list[str]]) -> None:
    for session, texts in sessions.items():
        for position, text in enumerate(texts):
            services.fact_add(
                tenant=tenant,
                actor=actor,
                draft=fact_draft(
                    {
                        "content": text,
                        "kind": "turn",
                        "session_id": session,
                        "position": position,
                        "speaker": "Jon",
                    }
                ),
            )
    while facts_embed_batch(tenant=tenant):
        pass


TRIP_AND_WORK = {
    "trip": [
        "We booked the cabin for the weekend",
        "The lake was frozen solid",
        "I finally tried my new skis",
        "Jon said it was great",
    ],
    "work": [
        "The quarterly report is due on Friday",
        "Budget review moved to the lake room",
        "Printer on floor two is broken again",
        "Jon said it was great",
    ],
}
TRIP_QUESTION = "Did Jon ski near the frozen lake cabin?"


def test_a_session_whose_turns_together_match_the_question_lifts_its_turns(
    tenant, system_actor
) -> None:
    """The question's words are spread over the trip's turns: read as one document, that
    session matches; the work session shares only "lake" with it."""
    _sessions(tenant, system_actor, TRIP_AND_WORK)
    gathered = search.recall_gather(tenant=tenant, query=recall_query({"query": TRIP_QUESTION}))
    assert gathered.sessions == {"trip": 1.0, "work": 0.0}
    hits = recall_search(tenant=tenant, query=recall_query({"query": TRIP_QUESTION, "k": 8})).hits
    same = [h for h in hits if h.fact.content == "Jon said it was great"]
    assert [h.fact.session_id for h in same] == ["trip", "work"]
    assert same[0].factors["session"] > 0 and same[1].factors["session"] == 0


def test_another_tenants_session_of_the_same_name_does_not_count(
    tenant, other_tenant, system_actor
) -> None:
    _sessions(tenant, system_actor, TRIP_AND_WORK)
    before = search.recall_gather(tenant=tenant, query=recall_query({"query": TRIP_QUESTION}))
    # The outsider's "work" session holds every word of the question, many times over.
    _sessions(other_tenant, system_actor, {"work": [TRIP_QUESTION.rstrip("?")] * 6})
    after = search.recall_gather(tenant=tenant, query=recall_query({"query": TRIP_QUESTION}))
    assert after.sessions == before.sessions == {"trip": 1.0, "work": 0.0}
    # And the outsider, asking the same, sees only its own session.
    theirs = search.recall_gather(tenant=other_tenant, query=recall_query({"query": TRIP_QUESTION}))
    assert theirs.sessions is not None and set(theirs.sessions) == {"work"}
    assert {c.session_id for c in theirs.candidates.values()} == {"work"}


def test_a_session_is_read_only_up_to_its_first_turns(tenant, system_actor, monkeypatch) -> None:
    """The work per query is bounded: past SESSION_PRIOR_TURNS a session's later turns are not
    read. The question's words are in the trip's later turns only: read whole, the trip
    matches; read to its first turn, neither session does, and neither is preferred."""
    _sessions(tenant, system_actor, TRIP_AND_WORK)
    query = recall_query({"query": "frozen skis"})
    assert search.recall_gather(tenant=tenant, query=query).sessions == {"trip": 1.0, "work": 0.0}
    monkeypatch.setattr(channels, "SESSION_PRIOR_TURNS", 1)
    assert search.recall_gather(tenant=tenant, query=query).sessions == {"trip": 1.0, "work": 1.0}
    monkeypatch.setattr(channels, "SESSION_PRIOR_TURNS", 0)
    assert search.recall_gather(tenant=tenant, query=query).sessions is None
