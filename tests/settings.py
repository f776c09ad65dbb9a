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
