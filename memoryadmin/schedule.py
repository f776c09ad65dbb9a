"""Beat's schedule: the heartbeat and the periodic sweeps (settings.CELERY_BEAT_SCHEDULE).

The database is the truth and a task message only a nudge: each sweep finds the work whose
message was lost. The intervals come from the environment (docs/configuration.md).
"""

from __future__ import annotations

from typing import Any

from memoryadmin.env import env_int


def beat_schedule(heartbeat_seconds: int) -> dict[str, dict[str, Any]]:
    """Every periodic task, by name. One dict, kept whole so the schedule reads in one place."""
    return {
        "heartbeat": {
            "task": "memoryadmin.tasks.heartbeat",
            "schedule": float(heartbeat_seconds),
            "options": {"expires": heartbeat_seconds * 2, "queue": "heartbeat"},
        },
        # Safety net for lost nudges: facts still without a vector get one.
        "embed-sweep": {
            "task": "facts.tasks.facts_embed_sweep",
            "schedule": float(env_int("MNEMOSYNE_EMBED_SWEEP_SECONDS", 60, minimum=1)),
            "options": {"expires": 60},
        },
        # Facts stored before conflicts were looked for, or whose check was lost, get checked.
        "conflicts-sweep": {
            "task": "facts.tasks.facts_conflicts_sweep",
            "schedule": 300.0,
            "options": {"expires": 300},
        },
        # Importance follows use and the clock (recency): recomputed for each tenant whose
        # policy's importance_every_hours has passed; feedback recomputes a fact at once.
        "importance-sweep": {
            "task": "facts.tasks.facts_importance_sweep",
            "schedule": float(env_int("MNEMOSYNE_IMPORTANCE_SWEEP_SECONDS", 300, minimum=1)),
            "options": {"expires": 300},
        },
        # Starts each tenant's retention run when its policy's interval has passed; sends again
        # runs whose message was lost or whose worker died.
        "retention-sweep": {
            "task": "facts.tasks.retention_sweep",
            "schedule": float(env_int("MNEMOSYNE_RETENTION_SWEEP_SECONDS", 60, minimum=1)),
            "options": {"expires": 60},
        },
        # The dashboard's and entity lists' counts stay cheap to read: fold what changed.
        "stats-sweep": {
            "task": "facts.tasks.facts_stats_sweep",
            "schedule": float(env_int("MNEMOSYNE_STATS_SWEEP_SECONDS", 30, minimum=1)),
            "options": {"expires": 30},
        },
        # A large tenant's own full-text and vector indexes (retrieval.indexes) made and dropped.
        "tenant-indexes-sweep": {
            "task": "retrieval.tasks.retrieval_tenant_indexes_sync",
            "schedule": float(env_int("MNEMOSYNE_TENANT_INDEX_SWEEP_SECONDS", 3600, minimum=1)),
            "options": {"expires": 3600},
        },
        # Each tenant's audit chain digest (count and head hash) to the log and the digest table,
        # when its chain moved: copies kept elsewhere prove later that nothing was rewritten.
        "audit-digest": {
            "task": "facts.tasks.audit_digest_sweep",
            "schedule": float(env_int("MNEMOSYNE_AUDIT_DIGEST_SECONDS", 3600, minimum=1)),
            "options": {"expires": 600},
        },
        # A changed extractor re-links every fact; lost relink jobs are sent again.
        "relink-sweep": {
            "task": "facts.tasks.entities_relink_sweep",
            "schedule": 60.0,
            "options": {"expires": 60},
        },
    }
