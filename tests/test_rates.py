"""The shared request rate (operations.rates): a sliding estimate over two windows, and a
Retry-After a client can trust."""

from __future__ import annotations

import random

import pytest

from operations.rates import rate_hit

pytestmark = pytest.mark.django_db


def test_the_limit_holds_and_each_bucket_is_its_own() -> None:
    start = 1_000_000 * 60.0
    answers = [rate_hit("key:1:1", limit=3, duration=60, now=start + i) for i in range(4)]
    assert [a.allowed for a in answers] == [True, True, True, False]
    assert 0 < answers[3].wait_s <= 120
    assert rate_hit("key:1:2", limit=3, duration=60, now=start + 5).allowed


def test_a_burst_at_a_windows_end_does_not_double_the_rate() -> None:
    """Three at the end of one window, then at the start of the next the previous window still
    weighs: a fixed window would allow three more at once."""
    start = 2_000_000 * 60.0
    assert all(rate_hit("b", limit=3, duration=60, now=start + 59).allowed for _ in range(3))
    assert not rate_hit("b", limit=3, duration=60, now=start + 61).allowed


@pytest.mark.parametrize("seed", range(6))
def test_after_the_wait_it_says_the_next_request_is_allowed(seed: int) -> None:
    rng = random.Random(seed)  # noqa: S311 - a test sequence
    limit, duration = rng.choice([(1, 1), (3, 60), (10, 60), (5, 3600)])
    now = 3_000_000 * 3600.0 + rng.uniform(0, duration)
    bucket = f"seed-{seed}"
    refused = 0
    for _ in range(60):
        answer = rate_hit(bucket, limit=limit, duration=duration, now=now)
        if not answer.allowed:
            refused += 1
            assert answer.wait_s > 0
            later = rate_hit(bucket, limit=limit, duration=duration, now=now + answer.wait_s + 0.01)
            assert later.allowed, (limit, duration, answer)
            now += answer.wait_s + 0.01
        now += rng.uniform(0, duration / limit) * rng.choice([0.1, 1, 3])
    assert refused > 0
