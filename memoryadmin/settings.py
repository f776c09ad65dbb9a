"""Mnemosyne settings, read from the environment (every variable: docs/configuration.md)."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from kombu import Queue

from memoryadmin.embedded_db import server_for_home
from memoryadmin.env import (
    ConfigError,
    data_directory,
    env_bool,
    env_choice,
    env_int,
    env_list,
    env_path,
    env_rate,
    env_str,
    parse_database_url,
)
from memoryadmin.profile import production_settings
from memoryadmin.schedule import beat_schedule
from observability.logs import logging_config

BASE_DIR = Path(__file__).resolve().parent.parent

# The data directory: embedded database, generated secret key, broker folders, logs, archives.
MNEMOSYNE_HOME = data_directory()


def _secret_key(home: Path) -> str:
    """SECRET_KEY from the environment, else one generated once and kept in the data directory."""
    configured = env_str("SECRET_KEY")
    if configured:
        return configured
    key_file = home / "secret_key"
    if not key_file.exists():
        home.mkdir(parents=True, exist_ok=True)
        try:
            # O_EXCL: when two processes start at once, exactly one writes the key.
            fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass
        else:
            with os.fdopen(fd, "w") as handle:
                handle.write(secrets.token_urlsafe(50))
    key = key_file.read_text().strip()
    if len(key) < 32:
        raise ConfigError(f"{key_file} holds no usable secret key; delete it to generate a new one")
    return key


SECRET_KEY = _secret_key(MNEMOSYNE_HOME)
DEBUG = env_bool("DEBUG", False)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI and Redoc served from here, never from a CDN
    "django_celery_beat",
    "axes",  # sign-in throttling: failed attempts per account and per address
    "csp",  # Content-Security-Policy on every response
    "django_otp",  # optional TOTP two-factor sign-in
    "django_otp.plugins.otp_totp",
    "memoryadmin",
    "operations",
    "tenants",
    "indexing",
    "facts",
    "retrieval",
    "hermes_provider",
]

MIDDLEWARE = [
    # First: every request gets its id (X-Request-ID) and its time in /metrics.
    "memoryadmin.requestlog.RequestContextMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "surfaces.base.security.RequestLineLimitMiddleware",
    "surfaces.base.security.ScopeLimitMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    # Times in the viewer's time zone (the browser's, kept in a cookie by admin.js).
    "surfaces.base.security.ViewerTimeZoneMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django_otp.middleware.OTPMiddleware",
    "surfaces.base.security.NoStoreMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last, as django-axes asks: it turns a locked-out sign-in into the lockout page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "memoryadmin.urls"
WSGI_APPLICATION = "memoryadmin.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.tz",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# -- database ---------------------------------------------------------------------------------
# DATABASE_URL names a PostgreSQL server (with pgvector). Without it, the embedded PostgreSQL
# under MNEMOSYNE_HOME is used; `mnemosyne up` and manage.py commands start it when needed.
# Two roles (docs/database-roles.md): DATABASE_URL is the runtime role web
# processes, workers and beat use, which owns nothing; DATABASE_OWNER_URL the owner that
# `mnemosyne migrate` uses.
# Without DATABASE_OWNER_URL the runtime role is taken as the owner too (the previous release's
# single role): migrations run, and /healthz and `mnemosyne check` say what is wrong.
DATABASE_URL = env_str("DATABASE_URL")
DATABASE_OWNER_URL = env_str("DATABASE_OWNER_URL")
MNEMOSYNE_EMBEDDED_DB = not DATABASE_URL
if DATABASE_URL:
    _database = parse_database_url(DATABASE_URL)
    _owner = (
        parse_database_url(DATABASE_OWNER_URL, name="DATABASE_OWNER_URL")
        if DATABASE_OWNER_URL
        else dict(_database)
    )
    if _owner["NAME"] != _database["NAME"]:
        raise ConfigError("DATABASE_OWNER_URL must name the same database as DATABASE_URL")
else:
    if DATABASE_OWNER_URL:
        raise ConfigError("DATABASE_OWNER_URL needs DATABASE_URL (the embedded database has both)")
    _database = server_for_home(MNEMOSYNE_HOME).database_settings()
    _owner = server_for_home(MNEMOSYNE_HOME).database_settings(owner=True)
MNEMOSYNE_DATABASE_RUNTIME = dict(_database)
MNEMOSYNE_DATABASE_OWNER = _owner
_database["CONN_MAX_AGE"] = env_int("DB_CONN_MAX_AGE", 60, minimum=0)
_database["CONN_HEALTH_CHECKS"] = True
# A database that does not answer is reported (503) within seconds, not after a client's timeout.
_database.setdefault("OPTIONS", {}).setdefault("connect_timeout", 5)
# No JIT compilation in the application's sessions: its statements are short, and PostgreSQL
# compiles any whose estimated cost passes jit_above_cost, which adds tens of milliseconds to a
# recall that takes thirty (a URL's own `?options=` wins).
_database["OPTIONS"].setdefault("options", "-c jit=off")
DATABASES = {"default": _database}
# DATABASE_REPLICA_URL (optional): a streaming replica of that database, read by recall, context
# and the web admin's pages (memoryadmin/replica.py); reads fall back to the primary while it
# is down or more than MNEMOSYNE_REPLICA_MAX_LAG_SECONDS behind.
DATABASE_REPLICA_URL = env_str("DATABASE_REPLICA_URL")
MNEMOSYNE_REPLICA_MAX_LAG_SECONDS = env_int("MNEMOSYNE_REPLICA_MAX_LAG_SECONDS", 10, minimum=0)
if DATABASE_REPLICA_URL:
    _replica = parse_database_url(DATABASE_REPLICA_URL, name="DATABASE_REPLICA_URL")
    _replica.update(CONN_MAX_AGE=_database["CONN_MAX_AGE"], CONN_HEALTH_CHECKS=True)
    _replica["OPTIONS"].setdefault("connect_timeout", 2)
    _replica["OPTIONS"].setdefault("options", "-c jit=off")
    # Tests: the replica shows the primary's test database (it cannot make one of its own).
    _replica["TEST"] = {"MIRROR": "default"}
    DATABASES["replica"] = _replica
# Off: the replica is configured but not read (the test suite reads it only in its own tests).
MNEMOSYNE_REPLICA_READS = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    # Django's similarity check lets `alan1234` through for `alan`: refuse any password that
    # contains the username (or the e-mail's name) outright.
    {"NAME": "surfaces.base.security.NotContainingUsernameValidator"},
    {
        "NAME": "django.contrib.auth.password_validation.MinimumLengthValidator",
        "OPTIONS": {"min_length": env_int("MNEMOSYNE_PASSWORD_MIN_LENGTH", 10, minimum=8)},
    },
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# django-axes first: it refuses a locked-out account or address before the password is checked.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]

LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("zh-hans", "简体中文")]
# The web admin's translations (compiled .mo files are committed: no gettext tools needed).
LOCALE_PATHS = [BASE_DIR / "memoryadmin" / "locale"]
# The web admin keeps a person's language in this cookie (and in their preferences, applied
# when they sign in); without it the browser's Accept-Language decides.
LANGUAGE_COOKIE_AGE = 365 * 86400
LANGUAGE_COOKIE_SAMESITE = "Lax"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = MNEMOSYNE_HOME / "static"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # filled by collectstatic in production
# Serve static files straight from the apps, so a fresh clone needs no collectstatic step.
WHITENOISE_USE_FINDERS = True

# Invitations and password-reset links stay valid this long (Django's reset tokens too).
MNEMOSYNE_INVITE_DAYS = env_int("MNEMOSYNE_INVITE_DAYS", 7, minimum=1)
PASSWORD_RESET_TIMEOUT = env_int("MNEMOSYNE_PASSWORD_RESET_HOURS", 24, minimum=1) * 3600
# Mail is optional: without EMAIL_HOST, invitations and reset links are shown to the admin.
EMAIL_HOST = env_str("EMAIL_HOST")
EMAIL_PORT = env_int("EMAIL_PORT", 587, minimum=1)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", True)
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "mnemosyne@localhost")
MNEMOSYNE_MAIL_ENABLED = bool(EMAIL_HOST)
OTP_TOTP_ISSUER = "Mnemosyne"

LOGIN_URL = "web:login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "web:login"

# -- REST API ---------------------------------------------------------------------------------
# Limits: request bodies (JSON Lines imports may be larger), and requests per API key, per
# signed-in user and per address (anonymous: only the schema pages). Page sizes are capped at
# 200 and recall queries at 2000 characters by the endpoints themselves.
MNEMOSYNE_API_MAX_BODY_BYTES = env_int("MNEMOSYNE_API_MAX_BODY_BYTES", 1024 * 1024, minimum=1024)
MNEMOSYNE_API_MAX_IMPORT_BYTES = env_int(
    "MNEMOSYNE_API_MAX_IMPORT_BYTES", 16 * 1024 * 1024, minimum=1024
)
# Django's own cap on request.body must not cut an import short; the API checks its limits first.
# A bundle uploaded to `bundle/import` (a tar, spooled to disk as it arrives).
MNEMOSYNE_API_MAX_BUNDLE_BYTES = env_int(
    "MNEMOSYNE_API_MAX_BUNDLE_BYTES", 2 * 1024 * 1024 * 1024, minimum=1024
)
DATA_UPLOAD_MAX_MEMORY_SIZE = max(MNEMOSYNE_API_MAX_BODY_BYTES, MNEMOSYNE_API_MAX_IMPORT_BYTES)
MNEMOSYNE_API_RATES = {
    "key": env_rate("MNEMOSYNE_API_RATE_KEY", "1200/minute"),
    "user": env_rate("MNEMOSYNE_API_RATE_USER", "600/minute"),
    "anon": env_rate("MNEMOSYNE_API_RATE_ANON", "60/minute"),
}

REST_FRAMEWORK = {
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["surfaces.base.parsers.StorableJSONParser"],
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "surfaces.base.auth.ApiKeyAuthentication",
        # Also counts requests with no credentials against the per-address rate.
        "surfaces.base.auth.SessionOrAddressAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_THROTTLE_CLASSES": ["surfaces.base.throttling.ApiRateThrottle"],
    "EXCEPTION_HANDLER": "surfaces.base.errors.api_exception_handler",
    "DEFAULT_SCHEMA_CLASS": "surfaces.base.schema.ApiSchema",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Mnemosyne API",
    "DESCRIPTION": (
        "Long-term memory for AI agents: facts, recall, context, entities, tenants, members, "
        "API keys, retention and the audit log.\n\n"
        "Authenticate with an API key (`Authorization: Bearer mnm_...`) or a signed-in session. "
        "Tenant endpoints live under `/api/v1/tenants/{tenant}/`; with an API key the same "
        "endpoints also answer at `/api/v1/`, for the key's tenant. Errors are JSON: "
        "`{message, field, code, errors}`."
    ),
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SERVE_AUTHENTICATION": ["rest_framework.authentication.SessionAuthentication"],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    # The sidecar's Redoc, served by surfaces.api.urls.redoc_script without its CDN logo.
    "REDOC_DIST": "/api/schema/redoc-dist",
    "COMPONENT_SPLIT_REQUEST": True,
    # Our base classes' docstrings describe the base, not each input: not inherited.
    "GET_LIB_DOC_EXCLUDES": "surfaces.base.schema.doc_excludes",
    "ENUM_NAME_OVERRIDES": {
        "FactStatusEnum": "facts.models.Status",
        "FactStatusFilterEnum": "surfaces.api.facts.STATUS_FILTER",
        "AddStatusEnum": "surfaces.api.facts.ADD_STATUSES",
        "ImportLineStatusEnum": "surfaces.api.facts.IMPORT_STATUSES",
    },
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "surfaces.base.schema.add_error_responses",
    ],
}

# -- Celery -----------------------------------------------------------------------------------
# The database is the truth; a task message is only a nudge. A lost message delays work, it
# never loses it: periodic sweeps (beat) pick up anything still pending.
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL")
MNEMOSYNE_BROKER_DIR = MNEMOSYNE_HOME / "broker"
if not CELERY_BROKER_URL:
    # kombu's filesystem transport: no server, one host. Every process must use the same
    # absolute folders, control folder included (its default is a relative path).
    CELERY_BROKER_URL = "filesystem://localhost//"  # the host part is unused
    # "filesystem" names our variant of kombu's transport (memoryadmin/broker.py, registered
    # in memoryadmin/celery.py): it takes messages by a rename into `processed`.
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(MNEMOSYNE_BROKER_DIR / "queue"),
        "data_folder_out": str(MNEMOSYNE_BROKER_DIR / "queue"),
        "control_folder": str(MNEMOSYNE_BROKER_DIR / "control"),
        "processed_folder": str(MNEMOSYNE_BROKER_DIR / "processed"),
        "store_processed": False,
        # How long an idle worker waits before looking at the folder again (kombu: 1 s).
        "polling_interval": 0.2,
    }
    # kombu creates none of these itself; messages are readable by this user alone.
    for _folder in ("queue", "control", "processed"):
        (MNEMOSYNE_BROKER_DIR / _folder).mkdir(mode=0o700, parents=True, exist_ok=True)
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SOFT_TIME_LIMIT = env_int("CELERY_TASK_SOFT_TIME_LIMIT", 300, minimum=1)
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 360, minimum=1)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TIMEZONE = TIME_ZONE
CELERY_BEAT_SCHEDULER = "memoryadmin.beat:HeartbeatScheduler"
MNEMOSYNE_HEARTBEAT_SECONDS = env_int("MNEMOSYNE_HEARTBEAT_SECONDS", 15, minimum=1)
# How often a web process sends the retrieval counts it added up (one task per tenant).
MNEMOSYNE_RETRIEVAL_FLUSH_SECONDS = env_int("MNEMOSYNE_RETRIEVAL_FLUSH_SECONDS", 10, minimum=0)
# Heartbeats and embedding have queues of their own, which a worker serves in turn with the
# main one: a heartbeat never waits behind a backlog of work (/healthz would call a busy worker
# dead), and new facts get their vectors while conflict checks and retention runs queue up.
CELERY_TASK_DEFAULT_QUEUE = "celery"
CELERY_TASK_QUEUES = (Queue("celery"), Queue("heartbeat"), Queue("embed"))
CELERY_TASK_ROUTES = {"facts.tasks.facts_embed_pending": {"queue": "embed"}}
CELERY_BEAT_SCHEDULE = beat_schedule(MNEMOSYNE_HEARTBEAT_SECONDS)
# Active facts from which a tenant gets its own full-text and vector indexes (retrieval.indexes).
MNEMOSYNE_TENANT_INDEX_FACTS = env_int("MNEMOSYNE_TENANT_INDEX_FACTS", 50_000, minimum=1)
# Dotted path of the entity extractor `(text) -> list[facts.entities.FoundEntity]`; empty: none.
MNEMOSYNE_ENTITY_EXTRACTOR = env_str("MNEMOSYNE_ENTITY_EXTRACTOR", "facts.extract.extract_entities")

# -- Mnemosyne --------------------------------------------------------------------------------
# Which sentence embedder turns text into vectors ("default", "e5", "use", "onnx:/dir",
# "ollama:model@http://127.0.0.1:11434"); models come inside packages, never from a hub.
MNEMOSYNE_EMBEDDER = env_str("MNEMOSYNE_EMBEDDER", "default")
# Where prepared model files are kept (e5 is converted from its package once, ~20 s).
MNEMOSYNE_MODEL_DIR = env_path("MNEMOSYNE_MODEL_DIR", str(MNEMOSYNE_HOME / "models"))
# Retention's archive bundles (one folder per tenant id); purges rewrite them without the
# purged facts.
MNEMOSYNE_ARCHIVE_DIR = env_path("MNEMOSYNE_ARCHIVE_DIR", str(MNEMOSYNE_HOME / "archives"))
# A retention run's claim on a worker; a run whose worker died is taken up again after it.
MNEMOSYNE_RETENTION_LEASE_SECONDS = env_int("MNEMOSYNE_RETENTION_LEASE_SECONDS", 120, minimum=1)
# A heartbeat older than this marks the worker or beat as down in /healthz.
MNEMOSYNE_HEARTBEAT_STALE_SECONDS = env_int(
    "MNEMOSYNE_HEARTBEAT_STALE_SECONDS", MNEMOSYNE_HEARTBEAT_SECONDS * 4, minimum=1
)

# The cache keeps the replica's read-your-writes positions (request rates: operations.rates).
# Without CACHE_URL it is a table of the database (made by the migrations), so every web and
# worker process shares it: a position one process wrote, another reads. Context blocks
# (`blocks`) are keyed by the tenant's write generation, so a process may keep its own: in its
# memory without CACHE_URL (a database round trip per prefetch would cost more than it saves),
# in Redis with it.
CACHE_TABLE = "mnemosyne_cache"
_REDIS_CACHE = {
    "BACKEND": "django.core.cache.backends.redis.RedisCache",
    "LOCATION": env_str("CACHE_URL"),
}
CACHES = {
    "default": (
        _REDIS_CACHE
        if env_str("CACHE_URL")
        else {
            "BACKEND": "django.core.cache.backends.db.DatabaseCache",
            "LOCATION": CACHE_TABLE,
            # Django's default (300 entries) would drop rate counts as soon as many addresses
            # or keys are counted at once.
            "OPTIONS": {"MAX_ENTRIES": 20000},
        }
    ),
    "blocks": (
        _REDIS_CACHE
        if env_str("CACHE_URL")
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "blocks"}
    ),
}

# MNEMOSYNE_LOG_FORMAT=json: one JSON object a line (time, level, logger, message, request_id,
# tenant and what the line adds), for a log collector; plain (the default) for people.
MNEMOSYNE_LOG_FORMAT = env_choice("MNEMOSYNE_LOG_FORMAT", "plain", ("plain", "json"))
LOGGING = logging_config(
    json_lines=MNEMOSYNE_LOG_FORMAT == "json",
    level=env_str("LOG_LEVEL", "INFO").upper(),
    # A refused request (403, 404, ...) is one line in the log, never a traceback.
    extra_filters=["one_line_4xx"],
)
LOGGING["filters"]["one_line_4xx"] = {"()": "surfaces.base.security.OneLineClientErrors"}
# The MCP SDK logs every request it processes at INFO.
LOGGING["loggers"] = {"mcp": {"level": "WARNING"}}
# /metrics answers requests from this machine; from elsewhere, those that bring this token
# (`Authorization: Bearer ...`). Empty: nobody else.
MNEMOSYNE_METRICS_TOKEN = env_str("MNEMOSYNE_METRICS_TOKEN")

# -- HTTP security ------------------------------------------------------------------------------
# MNEMOSYNE_PROFILE=production: served over HTTPS behind a proxy (docs/production.md). Every
# profile gets HttpOnly and SameSite cookies, a strict Content-Security-Policy, `no-store` on
# dynamic answers, framing refused and sign-in throttling; production adds Secure cookies, HSTS
# and trusts the proxy's X-Forwarded-Proto.
MNEMOSYNE_PROFILE = env_choice("MNEMOSYNE_PROFILE", "local", ("local", "production"))
PRODUCTION = MNEMOSYNE_PROFILE == "production"
# How many proxies stand in front of the web processes: the client's address is then taken
# from X-Forwarded-For (that many entries from its end), for sign-in throttling, the API's
# per-address rate and /healthz. 0: the connection's own address.
MNEMOSYNE_PROXY_COUNT = env_int("MNEMOSYNE_PROXY_COUNT", 1 if PRODUCTION else 0, minimum=0)
SESSION_COOKIE_AGE = env_int("MNEMOSYNE_SESSION_HOURS", 12, minimum=1) * 3600
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_HTTPONLY = True  # pages carry the token in their forms and htmx headers
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
if PRODUCTION:
    globals().update(production_settings())

# Nothing from another host, no inline script or style: every page's scripts and styles are
# files of our own (the API's Redoc page alone gets inline styles, see memoryadmin/api/urls.py).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'none'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}

# -- sign-in throttling (django-axes) ---------------------------------------------------------
# Failed sign-ins are counted per account and, separately, per address; past the limit that
# account or address is refused (429, with the lockout page) until the cool-off ends, even with
# the right password. Both the web admin's sign-in and /admin/ go through it. Superusers see
# and clear lockouts in /admin/ ("Access attempts"); `mnemosyne axes_reset` clears them all.
AXES_FAILURE_LIMIT = env_int("MNEMOSYNE_SIGNIN_FAILURE_LIMIT", 10, minimum=1)
AXES_COOLOFF_TIME = env_int("MNEMOSYNE_SIGNIN_LOCKOUT_MINUTES", 15, minimum=1) / 60
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]
AXES_LOCKOUT_CALLABLE = "surfaces.pages.accounts.lockout_response"
AXES_CLIENT_IP_CALLABLE = "surfaces.base.security.client_ip"
AXES_RESET_ON_SUCCESS = False
AXES_VERBOSE = False
