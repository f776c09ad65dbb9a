"""Health of each part Mnemosyne needs: database, broker, worker, beat, embedder."""

from __future__ import annotations

import tempfile
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from celery import current_app as celery_app
from django.conf import settings
from django.db import DatabaseError, connection
from django.utils import timezone

from operations.models import ServiceHeartbeat
from operations.roles import role_problems

Check = dict[str, Any]


def check_database() -> Check:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SHOW server_version")
            version = cursor.fetchone()[0]
            cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            row = cursor.fetchone()
            problems = role_problems(cursor)
            cursor.execute("SELECT proleakproof FROM pg_proc WHERE oid = 'ts_match_vq'::regproc")
            fulltext_indexed = cursor.fetchone()[0]
    except DatabaseError as error:
        return {"ok": False, "detail": f"unreachable: {str(error).strip()[:300]}"}
    if row is None:
        return {"ok": False, "postgresql": version, "detail": "the vector extension is missing"}
    if problems:
        return {"ok": False, "postgresql": version, "detail": "; ".join(problems)}
    return {
        "ok": True,
        "postgresql": version,
        "pgvector": row[0],
        "embedded": settings.MNEMOSYNE_EMBEDDED_DB,
        # False: full-text search works but scans whole tenants (docs/production.md).
        "fulltext_index_usable": fulltext_indexed,
    }


def check_broker() -> Check:
    url = celery_app.conf.broker_url
    transport = url.split("://", 1)[0]
    if transport == "filesystem":
        options = celery_app.conf.broker_transport_options or {}
        queue = Path(options.get("data_folder_in", "."))
        try:
            # A message is a file in this folder: prove a file can be written there now.
            with tempfile.NamedTemporaryFile(dir=queue, prefix=".healthz-"):
                pass
        except OSError as error:
            return {"ok": False, "transport": transport, "detail": f"{queue}: {error.strerror}"}
        return {"ok": True, "transport": transport, "folder": str(queue)}
    try:
        with celery_app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=2)
    except Exception as error:  # noqa: BLE001 - any transport error means "down"; we report it
        return {"ok": False, "transport": transport, "detail": str(error)[:300]}
    return {"ok": True, "transport": transport}


def _heartbeat(prefix: str, exact: bool) -> Check:
    stale_after = timedelta(seconds=settings.MNEMOSYNE_HEARTBEAT_STALE_SECONDS)
    beats = ServiceHeartbeat.objects.filter(
        **({"name": prefix} if exact else {"name__startswith": prefix})
    )
    try:
        latest = beats.order_by("-seen_at").first()
    except DatabaseError:
        # Not known, not failing: /healthz names the database, the part that is down.
        return {"ok": None, "detail": "unknown: the database is unreachable"}
    if latest is None:
        return {"ok": False, "detail": "never seen"}
    age = (timezone.now() - latest.seen_at).total_seconds()
    check: Check = {"ok": age <= stale_after.total_seconds(), "last_seen_s": round(age, 1)}
    if not check["ok"]:
        check["detail"] = f"no heartbeat for {age:.0f} s"
    if not exact:
        check["name"] = latest.name.removeprefix(prefix)
    return check


def check_worker() -> Check:
    return _heartbeat("worker:", exact=False)


def check_beat() -> Check:
    return _heartbeat("beat", exact=True)


_embedder_lock = threading.Lock()
_embedder_result: tuple[float, Check] | None = None
_EMBEDDER_RECHECK_S = 60.0


def check_embedder() -> Check:
    """Load the configured embedder (once per process), embed a probe sentence, and check it
    agrees with what is recorded of its model (a changed dimension under the same name)."""
    global _embedder_result
    with _embedder_lock:
        if _embedder_result and time.monotonic() - _embedder_result[0] < _EMBEDDER_RECHECK_S:
            return _embedder_result[1]
        try:
            from indexing.embedders import EmbedderError, embedder_health, get_embedder
        except ImportError as error:
            result: Check = {"ok": False, "detail": f"embedder code missing: {error}"}
        else:
            try:
                embedder = get_embedder(settings.MNEMOSYNE_EMBEDDER, settings.MNEMOSYNE_MODEL_DIR)
                result = embedder_health(embedder)
                if result["ok"]:
                    result["serving"] = _serving_model()
            except EmbedderError as error:
                result = {"ok": False, "spec": settings.MNEMOSYNE_EMBEDDER, "detail": str(error)}
        _embedder_result = (time.monotonic(), result)
        return result


def _serving_model() -> str | None:
    from indexing.vectors import configured_embedder, serving_space

    try:
        configured_embedder()  # raises when its model is recorded with another dimension
        serving = serving_space()
    except DatabaseError:
        return None  # the database check names that
    return serving.name if serving else None


CHECKS = {
    "database": check_database,
    "broker": check_broker,
    "worker": check_worker,
    "beat": check_beat,
    "embedder": check_embedder,
}


def health_report() -> dict[str, Any]:
    from operations.replica import check_replica, replica_configured

    checks = {name: check() for name, check in CHECKS.items()}
    failing = [name for name, result in checks.items() if result["ok"] is False]
    status = "ok" if not failing else "unavailable"
    report: dict[str, Any] = {"status": status, "failing": failing, "checks": checks}
    if replica_configured():
        # A replica that is down or behind costs read capacity, not service: reads go to the
        # primary, so the node still serves (200), "degraded".
        checks["replica"] = check_replica()
        report["degraded"] = [] if checks["replica"]["ok"] else ["replica"]
        if status == "ok" and report["degraded"]:
            report["status"] = "degraded"
    return report
