"""Test settings: the real settings, a real PostgreSQL with pgvector, fast password hashing.

The database is the embedded PostgreSQL under `.mnemosyne-test/` by default, or the server named
by TEST_DATABASE_URL (the runtime role) and TEST_DATABASE_OWNER_URL (the owner, which creates,
migrates and drops a `test_<name>` database on it).
"""

import os
from pathlib import Path

_REPO = Path(__file__).resolve().parent.parent
os.environ.setdefault("MNEMOSYNE_HOME", str(_REPO / ".mnemosyne-test"))
# One prepared model folder for the run, shared with the processes tests start.
os.environ.setdefault("MNEMOSYNE_MODEL_DIR", str(_REPO / ".mnemosyne-test" / "models"))
os.environ.setdefault("SECRET_KEY", "tests-only-secret-key-0123456789abcdefghijklmnopqrstuvwxyz")
if os.environ.get("TEST_DATABASE_URL"):
    os.environ["DATABASE_URL"] = os.environ["TEST_DATABASE_URL"]
    if os.environ.get("TEST_DATABASE_OWNER_URL"):
        os.environ["DATABASE_OWNER_URL"] = os.environ["TEST_DATABASE_OWNER_URL"]
    else:
        os.environ.pop("DATABASE_OWNER_URL", None)
else:
    os.environ.pop("DATABASE_URL", None)
    os.environ.pop("DATABASE_OWNER_URL", None)
# A streaming replica of that server (tests/test_replica.py; .ci/replica.sh makes one).
if os.environ.get("TEST_DATABASE_URL") and os.environ.get("TEST_DATABASE_REPLICA_URL"):
    os.environ["DATABASE_REPLICA_URL"] = os.environ["TEST_DATABASE_REPLICA_URL"]
else:
    os.environ.pop("DATABASE_REPLICA_URL", None)

from memoryadmin.settings import *  # noqa: E402, F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "blocks": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "blocks"},
}
# No request rate in tests (the fuzzer alone sends a thousand requests with one key in half a
# minute); the throttling test sets its own rates.
MNEMOSYNE_API_RATES = {"key": None, "user": None, "anon": None}
# Only tests/test_replica.py reads from the replica: other tests' data is never committed, so
# a replica could not see it.
MNEMOSYNE_REPLICA_READS = False
# Retrieval counts sent with each recall, so tests read them at once (tests/test_recall.py
# checks the interval).
MNEMOSYNE_RETRIEVAL_FLUSH_SECONDS = 0

# Under pytest-xdist (`./scripts/test.sh --quick` runs on every core) each worker has its own test
# database (pytest-django names it after the worker) and its own broker and archive folders: a
# test that empties the queue or deletes a tenant's archives (named by the tenant's id, which two
# databases hand out alike) must not reach another worker's.
_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
if _WORKER:
    MNEMOSYNE_ARCHIVE_DIR = MNEMOSYNE_ARCHIVE_DIR / "workers" / _WORKER  # noqa: F405
    if CELERY_BROKER_URL.startswith("filesystem"):  # noqa: F405
        MNEMOSYNE_BROKER_DIR = MNEMOSYNE_BROKER_DIR / "workers" / _WORKER  # noqa: F405
        CELERY_BROKER_TRANSPORT_OPTIONS = {  # noqa: F405
            **CELERY_BROKER_TRANSPORT_OPTIONS,  # noqa: F405
            "data_folder_in": str(MNEMOSYNE_BROKER_DIR / "queue"),
            "data_folder_out": str(MNEMOSYNE_BROKER_DIR / "queue"),
            "control_folder": str(MNEMOSYNE_BROKER_DIR / "control"),
            "processed_folder": str(MNEMOSYNE_BROKER_DIR / "processed"),
        }
        for _folder in ("queue", "control", "processed"):
            (MNEMOSYNE_BROKER_DIR / _folder).mkdir(mode=0o700, parents=True, exist_ok=True)
