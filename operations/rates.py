"""Request rates shared by every web process: one statement a request.

Each bucket (an API key, a signed-in user, an address) counts its requests in the current
window of the rate's length and keeps the count of the window before; a request is allowed
while the sliding estimate (the previous window's count, weighted by how much of it still
overlaps the last `duration` seconds, plus this window's) stays within the rate. Refused
requests count too, so a client that keeps asking while refused stays refused.

One INSERT ... ON CONFLICT ... RETURNING on an UNLOGGED table (operations/migrations/0005): a
round trip and no WAL, where a cache's read-modify-write took six round trips and a logged
write (docs/benchmarks/load-and-scale.md).
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass

from django.db import connection

_COUNT = """
INSERT INTO mnemosyne_rate AS r (bucket, window_no, hits, previous) VALUES (%s, %s, 1, 0)
ON CONFLICT (bucket) DO UPDATE SET
  previous = CASE WHEN r.window_no = excluded.window_no THEN r.previous
                  WHEN r.window_no = excluded.window_no - 1 THEN r.hits
                  ELSE 0 END,
  hits = CASE WHEN r.window_no = excluded.window_no THEN r.hits + 1 ELSE 1 END,
  window_no = excluded.window_no
RETURNING hits, previous"""

# Buckets idle for a day are removed now and then (about one request in this many).
_SWEEP_ONE_IN = 1000
_SWEEP = "DELETE FROM mnemosyne_rate WHERE window_no < %s"


@dataclass(frozen=True)
class RateAnswer:
    allowed: bool
    wait_s: float  # until a request would be allowed again (0 when allowed)


def rate_hit(bucket: str, *, limit: int, duration: int, now: float | None = None) -> RateAnswer:
    """Count one request in `bucket` against `limit` requests per `duration` seconds."""
    now = time.time() if now is None else now
    window_no = int(now // duration)
    elapsed = (now - window_no * duration) / duration  # share of this window gone, 0..1
    with connection.cursor() as cursor:
        cursor.execute(_COUNT, [bucket, window_no])
        hits, previous = cursor.fetchone()
        if random.randrange(_SWEEP_ONE_IN) == 0:  # noqa: S311 - not a secret
            cursor.execute(_SWEEP, [int((now - 86400) // duration)])
    estimate = previous * (1 - elapsed) + hits
    if estimate <= limit:
        return RateAnswer(allowed=True, wait_s=0.0)
    return RateAnswer(allowed=False, wait_s=_wait(hits, previous, limit, elapsed, duration))


def _wait(hits: int, previous: int, limit: int, elapsed: float, duration: int) -> float:
    """Seconds until the estimate of the next request is within the limit, if nobody asks."""
    if hits + 1 > limit or previous == 0:
        # This window alone is over: wait for the next one, whose previous share then fades.
        over_next = (hits * 1.0 + 1 - limit) / max(hits, 1)
        return (1 - elapsed) * duration + max(0.0, over_next) * duration
    # previous * (1 - e) + hits + 1 <= limit  <=>  e >= 1 - (limit - hits - 1) / previous
    needed = 1 - (limit - hits - 1) / previous
    return max(1.0, math.ceil((needed - elapsed) * duration))


def rates_clear() -> None:
    """Forget every count (tests; an operator after changing the rates)."""
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM mnemosyne_rate")
