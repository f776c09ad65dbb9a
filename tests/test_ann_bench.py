"""bench.ann: it reads the three data formats, and on a real PostgreSQL with pgvector its recall
figures are the share of each tenant's exact neighbours its query found, and only its own."""

from __future__ import annotations

import json

import numpy as np
import pytest
from django.db import connection, transaction

from bench.ann import INSERTS, KS, load_texts, measure, mixes, recall
from operations.roles import as_owner


def test_the_three_formats_give_texts_and_questions_once_each(tmp_path):
    locomo = tmp_path / "locomo.json"
    locomo.write_text(
        json.dumps(
            [
                {
                    "conversation": {
                        "speaker_a": "Ann",
                        "session_1": [
                            {"speaker": "Ann", "text": "I adopted a cat."},
                            {"speaker": "Bo", "text": "Lovely!"},
                        ],
                        "session_1_date_time": "1 May 2023",
                        "session_2": [{"speaker": "Ann", "text": "I adopted a cat."}],
                    },
                    "qa": [
                        {"question": "What did Ann adopt?"},
                        {"question": "What did Ann adopt?"},
                    ],
                }
            ]
        )
    )
    cmrc = tmp_path / "cmrc.json"
    cmrc.write_text(
        json.dumps(
            [
                {
                    "context_id": "c1",
                    "context_text": "长城很长。",
                    "qas": [{"query_text": "长城怎么样？"}],
                }
            ],
            ensure_ascii=False,
        )
    )
    squad = tmp_path / "squad.json"
    squad.write_text(
        json.dumps(
            {
                "data": [
                    {
                        "paragraphs": [
                            {
                                "context": "Paris is in France.",
                                "qas": [{"question": "Where is Paris?"}],
                            }
                        ]
                    }
                ]
            }
        )
    )
    assert load_texts(locomo) == (["Ann: I adopted a cat.", "Bo: Lovely!"], ["What did Ann adopt?"])
    assert load_texts(cmrc) == (["长城很长。"], ["长城怎么样？"])
    assert load_texts(squad) == (["Paris is in France."], ["Where is Paris?"])


def test_recall_is_the_share_of_the_exact_neighbours_found():
    assert recall([4, 1, 9], np.array([1, 2, 4])) == pytest.approx(2 / 3)
    assert recall([], np.array([1])) == 0.0


def test_mixes_are_unit_vectors_near_their_sources():
    rng = np.random.default_rng(3)
    sources = np.eye(8, dtype=np.float32)
    mixed = mixes(rng, sources, 50)
    assert mixed.shape == (50, 8)
    assert np.allclose(np.linalg.norm(mixed, axis=1), 1.0, atol=1e-5)
    # Each is mostly one source: its largest component is at least twice any other.
    top2 = np.sort(mixed, axis=1)[:, -2:]
    assert (top2[:, 1] >= 2 * top2[:, 0] - 1e-6).all()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("kind", ["vector", "halfvec", "bit"])
def test_a_small_collection_is_found_exactly_and_each_tenant_gets_only_its_own(kind):
    rng = np.random.default_rng(11)
    base = rng.normal(size=(400, 8)).astype(np.float32)
    base /= np.linalg.norm(base, axis=1, keepdims=True)
    tenants = np.array([1] * 300 + [2] * 100)
    rng.shuffle(tenants)
    tenants[0], tenants[-1] = 1, 2
    extra = rng.normal(size=(INSERTS, 8)).astype(np.float32)
    queries = rng.normal(size=(5, 8)).astype(np.float32)
    # A tiny graph, searched with ef_search 100 and an iterative scan, is searched exhaustively:
    # every exact neighbour is found. A query that let another tenant's rows through, or cut
    # the small tenant's scan short, would miss some of them.
    with as_owner(), transaction.atomic(), connection.cursor() as cursor:
        figures = measure(
            cursor,
            m=16,
            ef_construction=64,
            base=base,
            tenants=tenants,
            extra=extra,
            queries=queries,
            kind=kind,
            # The signs of 8 dimensions tell few vectors apart: a bit index's scan reads every
            # row of the tenant here (2,300 in the large one), so the full vectors' order makes
            # it exact.
            rerank=len(base) + INSERTS if kind == "bit" else max(KS),
        )
        cursor.execute("SELECT to_regclass('bench_ann')")
        assert cursor.fetchone() == (None,)  # the table is gone afterwards
    # halfvec: the scan orders by distances of 2-byte values, so where the 100th and 101st
    # nearest are within its rounding, it may keep the other one.
    least = 0.97 if kind == "halfvec" else 1.0
    assert figures["type"] == kind
    for k in KS:
        assert figures[f"recall_at_{k}_large"] >= least
        assert figures[f"recall_at_{k}_small"] >= least
    # Which scan the planner chose is reported for each tenant (either gives every neighbour
    # here; the HNSW scan is the one whose recall the options change).
    assert {type(figures["hnsw_large"]), type(figures["hnsw_small"])} == {bool}
    assert figures["insert_s"] > 0
    assert figures["build_s"] > 0
