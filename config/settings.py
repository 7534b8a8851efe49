"""Settings for the Agent console: one module, driven by environment variables.

Every variable is listed in the README with its default. With neither DATABASE_URL nor
REDIS_URL set, the service runs on the embedded default: SQLite, an in-process cache and a
Celery broker on the filesystem, so `make run` works on a bare laptop.
"""

import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from kombu import Exchange, Queue

from config.env import env_bool, env_choice, env_float_list, env_int, env_list, env_str
from config.storage import default_storage_settings

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("VAR_DIR", str(BASE_DIR / "var")))

DEBUG = env_bool("DEBUG", False)
_DEV_SECRET = "insecure-development-key-change-me-in-production-0123456789"
SECRET_KEY = env_str("SECRET_KEY", _DEV_SECRET)
if SECRET_KEY == _DEV_SECRET and not DEBUG and env_bool("REQUIRE_SECRET_KEY", False):
    raise ImproperlyConfigured("SECRET_KEY must be set in production (REQUIRE_SECRET_KEY=1)")
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "template_partials",
    "apps.common",
    "apps.operations",
    "apps.api",
    "apps.workspaces",
    "apps.activity",
    "apps.knowledge",
    "apps.webhooks",
    "apps.usage",
    "apps.scores",
    "apps.tools",
    "oauth2_provider",
    "apps.mcp_server",
    "apps.retention",
    # Composes every app above (the demo seed); no app imports it.
    "apps.demo",
]

MIDDLEWARE = [
    # /healthz, /readyz and /metrics answer here, before host checks, sessions, request logs
    # and rate limits; every other request is counted and timed.
    "apps.operations.middleware.OperationsMiddleware",
    "apps.api.middleware.RequestIdMiddleware",
    # Every transaction a request opens may wait or idle at most DATABASE_REQUEST_TIMEOUT_SECONDS.
    "apps.common.statement_timeout.StatementTimeoutMiddleware",
    "apps.api.middleware.HttpEdgesMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "apps.api.middleware.ApiErrorMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "apps.common.security.ContentSecurityPolicyMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Console pages answer a styled 503 while the database is unreachable (the API does its own).
    "apps.workspaces.middleware.DatabaseUnavailablePageMiddleware",
    # Who is making a change, for the audit log (apps.workspaces.audit); reads cost nothing.
    "apps.workspaces.audit.AuditRequestMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            # {% partialdef %} everywhere without a {% load %} in each template.
            "builtins": ["template_partials.templatetags.partials"],
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "apps.workspaces.context_processors.console",
                "apps.usage.context_processors.credit_limit",
            ],
        },
    },
]

# --- Database -----------------------------------------------------------------------------
DATABASE_URL = env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'db.sqlite3'}")
# Seconds a connection is kept for the next request of its thread; 0 closes it after each
# request (`make run`'s development server: a thread per client connection, none reused).
DATABASES = {
    "default": dj_database_url.parse(
        DATABASE_URL, conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 60, minimum=0)
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL and a busy timeout let web, worker and beat share the file on the embedded default.
    DATABASES["default"]["OPTIONS"] = {
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "timeout": 20,
        "transaction_mode": "IMMEDIATE",
    }
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    # SQLite ignores a covering index's INCLUDE columns (PostgreSQL uses them): harmless for
    # the embedded default, and the first thing `make run` printed.
    SILENCED_SYSTEM_CHECKS = ["models.W040"]
else:
    DATABASES["default"].setdefault("OPTIONS", {})["connect_timeout"] = env_int(
        "DATABASE_CONNECT_TIMEOUT", 3, minimum=1
    )
# A persistent connection is checked before a request reuses it: after a PostgreSQL restart
# each web thread would otherwise answer one 503 from its dead connection.
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
IS_POSTGRES = DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql"
# "transaction" when the processes reach PostgreSQL through a pooler in transaction mode
# (PgBouncer `pool_mode = transaction`, docs/operations.md "Scale-out"): each transaction may
# run on another server connection, so nothing may outlive one — no server-side cursors (a
# `.iterator()` outside a transaction), no prepared statements, and a setting the code needs is
# SET LOCAL inside the transaction that needs it, never a session SET.
DATABASE_POOLER = env_choice("DATABASE_POOLER", "", ("", "transaction"))
if DATABASE_POOLER == "transaction" and IS_POSTGRES:
    DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = True
    DATABASES["default"]["OPTIONS"]["prepare_threshold"] = None
# A web request's transactions: a statement running longer is cancelled, a transaction idle
# longer is ended (apps.common.statement_timeout); 0 turns the limit off. Not for Celery.
DATABASE_REQUEST_TIMEOUT_SECONDS = env_int("DATABASE_REQUEST_TIMEOUT_SECONDS", 30, minimum=0)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Redis: cache, rate limits, Celery broker ---------------------------------------------
REDIS_URL = env_str("REDIS_URL", "")
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "OPTIONS": {"socket_connect_timeout": 2, "socket_timeout": 2},
        }
    }
    RATE_LIMIT_STORAGE_URL = REDIS_URL
    CELERY_BROKER_URL = REDIS_URL
    CELERY_BROKER_TRANSPORT_OPTIONS: dict = {
        "visibility_timeout": 3600,
        "socket_connect_timeout": 2,
        # No retries when a publish or a queue-depth check opens its connection: kombu otherwise
        # retried a refused connection for CELERY_BROKER_CONNECTION_TIMEOUT (2 s), so during a
        # broker outage every request that queues work waited 2 s. Each such caller commits its
        # row first and a sweeper queues it later. The workers' own reconnection has its
        # settings (broker_connection_max_retries), which this does not touch.
        "max_retries": 0,
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    RATE_LIMIT_STORAGE_URL = "memory://"
    _broker_dir = VAR_DIR / "broker"
    # kombu's filesystem transport does not create these folders: config/celery.py makes them
    # when the Celery app is configured (importing settings creates nothing).
    CELERY_BROKER_URL = "filesystem://"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir / "queue"),
        "data_folder_out": str(_broker_dir / "queue"),
        "processed_folder": str(_broker_dir / "processed"),
        # Broadcasts (control commands) would otherwise land in ./control of the cwd.
        "control_folder": str(_broker_dir / "control"),
        "store_processed": False,
    }

# --- Celery ------------------------------------------------------------------------------
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SOFT_TIME_LIMIT = env_int("CELERY_TASK_SOFT_TIME_LIMIT", 120, minimum=1)
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 180, minimum=1)
# Three queues, each with worker processes of its own (README, "Running in production"): the
# interactive queue holds what someone is waiting for or what keeps work moving (extraction,
# refreshes, the sweepers; config.celery.INTERACTIVE_TASKS), the webhook queue deliveries and
# their dispatcher (config.celery.WEBHOOK_TASKS), the default queue the bulk work (embedding).
# So a small upload never waits behind a large one's embedding or behind deliveries.
# Tasks a task sends (knowledge.embed queues itself) follow the same routes.
CELERY_TASK_DEFAULT_QUEUE = env_str("CELERY_TASK_DEFAULT_QUEUE", "celery")
CELERY_INTERACTIVE_QUEUE = env_str("CELERY_INTERACTIVE_QUEUE", "interactive")
# Webhook deliveries and their dispatcher have a queue and workers of their own: 3,000 deliveries
# to a dead endpoint (5-15 s each) once sat ahead of three small uploads (issue 34).
CELERY_WEBHOOK_QUEUE = env_str("CELERY_WEBHOOK_QUEUE", "webhooks")
CELERY_TASK_ROUTES = ["config.celery.route_task"]
# A worker started without -Q serves every queue (one process for everything still works).
# Each queue has its own exchange and routing key: sharing Celery's default ones would bind both
# queues to one key, and every task would land on each.
CELERY_TASK_QUEUES = [
    Queue(name, Exchange(name), routing_key=name)
    for name in (CELERY_TASK_DEFAULT_QUEUE, CELERY_INTERACTIVE_QUEUE, CELERY_WEBHOOK_QUEUE)
]
CELERY_WORKER_CONCURRENCY = env_int("CELERY_WORKER_CONCURRENCY", 2, minimum=1)
# A worker child whose peak resident memory passed this (KB) when a task ends is replaced by a
# fresh one (130 MB), so the embedding model (up to about 245 MB while it loads) never lands on
# an ingestion's leftovers: any ingestion passes 150 MB. At 250 MB a small document's child
# was kept and went to 448 MB when it embedded (benchmarks/worker_memory.py).
CELERY_WORKER_MAX_MEMORY_PER_CHILD = env_int(
    "CELERY_WORKER_MAX_MEMORY_PER_CHILD", 150_000, minimum=50_000
)
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Publishing from a web request must fail fast when the broker is down: the row is already
# committed and a beat sweeper picks it up, so a long retry would only hold the request.
CELERY_TASK_PUBLISH_RETRY_POLICY = {
    "max_retries": 1,
    "interval_start": 0,
    "interval_step": 0.2,
    "interval_max": 0.2,
}
CELERY_BROKER_CONNECTION_TIMEOUT = 2
CELERY_TIMEZONE = "UTC"

# --- API ---------------------------------------------------------------------------------
API_RATE_LIMIT = env_str("API_RATE_LIMIT", "600/minute")
API_KEY_PREFIX = "ack"
API_MAX_JSON_BODY_BYTES = env_int("API_MAX_JSON_BODY_BYTES", 1024 * 1024, minimum=1024)
API_MAX_INGEST_BODY_BYTES = env_int("API_MAX_INGEST_BODY_BYTES", 8 * 1024 * 1024, minimum=1024)
# Objects and arrays nested deeper than this in a request body are a 400 (apps.api.parsing).
API_MAX_JSON_DEPTH = env_int("API_MAX_JSON_DEPTH", 64, minimum=2)
KNOWLEDGE_MAX_UPLOAD_BYTES = 10 * 1024 * 1024
# Scanned PDF pages are read by OCR (Debian's tesseract) unless this is off.
KNOWLEDGE_OCR = env_bool("KNOWLEDGE_OCR", True)
# Recovery of interrupted work (docs/faults.md): a worker's claim lasts this long unless its
# heartbeat renews it; the sweeper runs this often; a queued task never claimed is queued again
# after the grace period (a task that could not be queued at all is picked up by the next sweep).
KNOWLEDGE_CLAIM_LEASE_SECONDS = env_int("KNOWLEDGE_CLAIM_LEASE_SECONDS", 30, minimum=3)
KNOWLEDGE_RECOVER_INTERVAL_SECONDS = env_int("KNOWLEDGE_RECOVER_INTERVAL_SECONDS", 15, minimum=1)
KNOWLEDGE_QUEUE_GRACE_SECONDS = env_int("KNOWLEDGE_QUEUE_GRACE_SECONDS", 300, minimum=10)
WEBHOOK_DISPATCH_INTERVAL_SECONDS = env_int("WEBHOOK_DISPATCH_INTERVAL_SECONDS", 5, minimum=1)
# At most this many `webhooks.deliver` messages wait on the webhook queue: past it a new
# delivery is not queued on its own, the dispatcher sends it (it is a due row either way).
WEBHOOK_QUEUE_LIMIT = env_int("WEBHOOK_QUEUE_LIMIT", 200, minimum=1)
# One webhook attempt stops after connect + read timeout; its claim lasts 10 s longer.
WEBHOOK_CONNECT_TIMEOUT = env_int("WEBHOOK_CONNECT_TIMEOUT", 5, minimum=1)
WEBHOOK_READ_TIMEOUT = env_int("WEBHOOK_READ_TIMEOUT", 10, minimum=1)
# Seconds before each automatic retry of a failed delivery; after the last one it fails for good.
WEBHOOK_RETRY_SCHEDULE = env_float_list(
    "WEBHOOK_RETRY_SCHEDULE", ["5", "300", "1800", "7200", "18000", "36000"]
)
# A webhook pauses after this many deliveries in a row used up their whole retry schedule.
WEBHOOK_PAUSE_AFTER_FAILURES = env_int("WEBHOOK_PAUSE_AFTER_FAILURES", 5, minimum=1)
# Embedding (apps.knowledge.embeddings): CPU threads per process, chunks per batch, and batches
# per run of knowledge.embed before it queues itself again (320 chunks). Batches of 4 embed as
# fast per chunk as batches of 8 but never raise the process above its size with the model
# loaded; 8 took a worker child to 448 MB (benchmarks/worker_memory.py, docs/knowledge.md).
KNOWLEDGE_EMBED_THREADS = env_int("KNOWLEDGE_EMBED_THREADS", 1, minimum=1)
KNOWLEDGE_EMBED_BATCH_SIZE = env_int("KNOWLEDGE_EMBED_BATCH_SIZE", 4, minimum=1)
# The sentence embedding model: empty for the packaged default (all-MiniLM-L6-v2), else a
# directory or an installed package holding model.onnx and tokenizer.json (docs/knowledge.md).
KNOWLEDGE_EMBEDDING_MODEL = env_str("KNOWLEDGE_EMBEDDING_MODEL", "")
KNOWLEDGE_EMBED_BATCHES_PER_TASK = 80
# Unanswered questions (apps.knowledge.gaps): how often beat sweeps the new retrieval steps, and
# how old a step must be before it is read (its recording transaction has surely committed).
KNOWLEDGE_GAPS_INTERVAL_SECONDS = env_int("KNOWLEDGE_GAPS_INTERVAL_SECONDS", 60, minimum=1)
KNOWLEDGE_GAPS_SETTLE_SECONDS = env_int("KNOWLEDGE_GAPS_SETTLE_SECONDS", 60, minimum=0)

# A run of knowledge.embed stops starting batches after this many seconds and hands the rest to
# a follow-up task at once, so it never meets the soft time limit however loaded the CPU is (at
# load 20-32, runs of 80 batches passed 120 s and failed; issue 34). Capped at a quarter of the
# soft limit. Longer runs pay the model's load (a fresh pool child, 2-10 s) less often.
KNOWLEDGE_EMBED_TASK_SECONDS = min(
    env_int("KNOWLEDGE_EMBED_TASK_SECONDS", 30, minimum=1), CELERY_TASK_SOFT_TIME_LIMIT // 4 or 1
)
# Multipart uploads stream to disk past this size instead of sitting in memory.
FILE_UPLOAD_MAX_MEMORY_SIZE = 256 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = API_MAX_INGEST_BODY_BYTES
MEDIA_ROOT = Path(env_str("MEDIA_ROOT", str(VAR_DIR / "media")))
MEDIA_URL = "/media/"

# Test-only: lets URL fetches and webhook deliveries reach 127.0.0.1/::1 so tests can use a
# local server. Private, link-local and metadata addresses stay refused even when it is on.
NETGUARD_ALLOW_LOOPBACK = env_bool("NETGUARD_ALLOW_LOOPBACK_FOR_TESTS", False)

# --- The Agents MCP server and its OAuth authorization server (apps.mcp_server) -----------
# django-oauth-toolkit does the OAuth 2.1 protocol: metadata (RFC 8414), dynamic client
# registration (RFC 7591), authorization code with PKCE, refresh tokens, revocation, resource
# indicators (RFC 8707). docs/mcp.md walks through it.
MCP_ACCESS_TOKEN_SECONDS = env_int("MCP_ACCESS_TOKEN_SECONDS", 3600, minimum=60)
# The resource-bound API token the MCP server mints from an access token for its /v1 calls.
MCP_RESOURCE_TOKEN_SECONDS = env_int("MCP_RESOURCE_TOKEN_SECONDS", 300, minimum=30)
# Browser-based MCP clients send an Origin: /mcp serves its own origin and these (exact
# "scheme://host[:port]" values); any other Origin is 403 (DNS rebinding, MCP transport spec).
MCP_ALLOWED_ORIGINS = env_list("MCP_ALLOWED_ORIGINS", [])
# Per client address: dynamic registrations, and requests to the token endpoint.
OAUTH_REGISTRATION_RATE_LIMIT = env_str("OAUTH_REGISTRATION_RATE_LIMIT", "20/hour")
OAUTH_TOKEN_RATE_LIMIT = env_str("OAUTH_TOKEN_RATE_LIMIT", "60/minute")
# Named here because our models point at the toolkit's (migrations resolve the names).
OAUTH2_PROVIDER_APPLICATION_MODEL = "oauth2_provider.Application"
OAUTH2_PROVIDER_ACCESS_TOKEN_MODEL = "oauth2_provider.AccessToken"
OAUTH2_PROVIDER_REFRESH_TOKEN_MODEL = "oauth2_provider.RefreshToken"
OAUTH2_PROVIDER_GRANT_MODEL = "oauth2_provider.Grant"
OAUTH2_PROVIDER_ID_TOKEN_MODEL = "oauth2_provider.IDToken"
OAUTH2_PROVIDER = {
    "SCOPES_BACKEND_CLASS": "apps.mcp_server.oauth.AgentScopes",
    "OAUTH2_VALIDATOR_CLASS": "apps.mcp_server.oauth.AgentGrantValidator",
    "ACCESS_TOKEN_GENERATOR": "apps.mcp_server.oauth.access_token_generator",
    "REFRESH_TOKEN_GENERATOR": "apps.mcp_server.oauth.refresh_token_generator",
    "ACCESS_TOKEN_EXPIRE_SECONDS": MCP_ACCESS_TOKEN_SECONDS,
    "REFRESH_TOKEN_EXPIRE_SECONDS": 30 * 24 * 3600,
    "AUTHORIZATION_CODE_EXPIRE_SECONDS": 120,
    "ROTATE_REFRESH_TOKEN": True,
    "PKCE_REQUIRED": True,
    "REFRESH_TOKEN_REUSE_PROTECTION": True,
    # Only the authorization code flow (with PKCE, S256) and refresh, as OAuth 2.1 and the MCP
    # authorization specification ask; tokens are stored hashed (RFC 9700).
    "OAUTH2_RESPONSE_TYPES_SUPPORTED": ["code"],
    "OAUTH2_GRANT_TYPES_SUPPORTED": ["authorization_code", "refresh_token"],
    # Public clients (PKCE, no secret) register with "none", as MCP clients do.
    "OAUTH2_TOKEN_ENDPOINT_AUTH_METHODS_SUPPORTED": [
        "none",
        "client_secret_basic",
        "client_secret_post",
    ],
    "COMPLIANT_BCP_RFC9700_IMPLICIT_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PASSWORD_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,
    "COMPLIANT_BCP_RFC9700_ACCESS_TOKEN_TRANSPORT": True,
    "COMPLIANT_BCP_RFC9700_AUTHZ_RESPONSE_ISS": True,
    "COMPLIANT_BCP_RFC9700_TOKEN_STORAGE": True,
    "REQUEST_APPROVAL_PROMPT": "force",
    # MCP clients register themselves (RFC 7591) without an account, as the MCP
    # authorization specification expects; a client can do nothing until a member consents.
    "DCR_ENABLED": True,
    "DCR_REGISTRATION_PERMISSION_CLASSES": ("oauth2_provider.dcr.AllowAllDCRPermission",),
    "OAUTH2_PROTECTED_RESOURCE_NAME": "Agent console MCP server",
}

# --- Tool servers (apps.tools) ----------------------------------------------------------
# Auth headers of MCP tool servers are encrypted at rest with a Fernet key derived (HKDF) from
# this value; empty derives it from SECRET_KEY. Set it to keep the headers readable when
# SECRET_KEY rotates (changing it makes stored headers unreadable: owners enter them again).
TOOLS_ENCRYPTION_KEY = env_str("TOOLS_ENCRYPTION_KEY", "")
# Bounds of one discovery (seconds, bytes from the server, tools listed).
TOOLS_DISCOVERY_CONNECT_TIMEOUT = 5.0
TOOLS_DISCOVERY_READ_TIMEOUT = 15.0
TOOLS_DISCOVERY_TOTAL_TIMEOUT = 45.0
TOOLS_DISCOVERY_MAX_BYTES = 4 * 1024 * 1024
TOOLS_DISCOVERY_MAX_TOOLS = 500

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["apps.api.authentication.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["apps.api.permissions.HasScope"],
    "DEFAULT_RENDERER_CLASSES": ["apps.api.rendering.OrjsonRenderer"],
    "DEFAULT_PARSER_CLASSES": ["apps.api.parsing.StrictJsonParser"],
    "DEFAULT_THROTTLE_CLASSES": ["apps.api.throttling.ApiKeyRateThrottle"],
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "apps.api.rendering.FirstRendererNegotiation",
    "EXCEPTION_HANDLER": "apps.api.errors.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "apps.api.openapi.ScopedAutoSchema",
    "UNAUTHENTICATED_USER": None,
    # No OPTIONS metadata: a method a path does not serve is 400 with `Allow`, OPTIONS included.
    "DEFAULT_METADATA_CLASS": None,
    "DEFAULT_VERSIONING_CLASS": None,
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Agent Activity and Knowledge Management API",
    "DESCRIPTION": (
        "Agent activity (users, conversations, messages, runs), knowledge documents and "
        "webhook deliveries of one Agent. Operations marked `x-extension: true` extend the "
        "published contract."
    ),
    "VERSION": "1.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "SCHEMA_PATH_PREFIX": r"/v1",
    "SCHEMA_COERCE_PATH_PK_SUFFIX": False,
    "TAGS": [
        {"name": "Users"},
        {"name": "Conversations"},
        {"name": "Runs"},
        {"name": "Knowledge"},
        {"name": "Webhooks"},
        {"name": "Tools"},
        {"name": "Connection"},
        {"name": "Ingest"},
        {"name": "API keys"},
        {"name": "Browser tokens"},
    ],
    "ENUM_NAME_OVERRIDES": {},
    "DISABLE_ERRORS_AND_WARNINGS": True,
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "apps.api.openapi.contract_parameter_names",
    ],
}

# --- Console -----------------------------------------------------------------------------
LOGIN_URL = "workspaces:login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "workspaces:login"
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # htmx reads the token from the page, not the cookie
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True

# Team invitations (apps.workspaces.services.invitations, docs/team.md): a link works this many
# days, once. An invitation with an address is also sent by e-mail through Django's mail API:
# the console backend (printed to the web process's output) unless an SMTP server is given.
TEAM_INVITATION_DAYS = env_int("TEAM_INVITATION_DAYS", 7, minimum=1)
EMAIL_BACKEND = env_str("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
EMAIL_HOST = env_str("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 25, minimum=1)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT", 10, minimum=1)
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "Agent console <console@localhost>")

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"
# Uploaded files (knowledge documents): MEDIA_ROOT, or an S3-compatible bucket with
# STORAGE_BACKEND=s3 (config/storage.py lists its variables; docs/operations.md "Scale-out").
DEFAULT_FILE_STORAGE_SETTINGS = default_storage_settings(
    os.environ, memory_limit=FILE_UPLOAD_MAX_MEMORY_SIZE
)
STORAGES = {
    "default": DEFAULT_FILE_STORAGE_SETTINGS,
    "staticfiles": {
        "BACKEND": (
            "whitenoise.storage.CompressedManifestStaticFilesStorage"
            if env_bool("STATIC_MANIFEST", False)
            else "django.contrib.staticfiles.storage.StaticFilesStorage"
        )
    },
}

# --- Logging: one JSON line per request; keys never appear (see apps.api.middleware) -------
LOG_LEVEL = env_str("LOG_LEVEL", "INFO")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"json": {"()": "apps.api.logging.JsonFormatter"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "json"}},
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        "django.request": {"level": "ERROR"},
        "django.server": {"level": "WARNING"},
        # httpx2 logs every request URL at INFO; tool-server URLs may carry tokens in queries.
        "httpx2": {"level": "WARNING"},
        # The MCP SDK logs a session manager's start and stop: each /mcp request has one.
        "mcp.server.streamable_http_manager": {"level": "WARNING"},
    },
}

# --- Operations: health, readiness, metrics (apps.operations, docs/operations.md) ----------
# Every process writes its metric samples here and /metrics adds up those of the machine; it
# must be emptied when the machine's processes start (scripts/run_all.py does, the README says
# how in production). prometheus-client reads the variable itself, at import.
PROMETHEUS_MULTIPROC_DIR = Path(env_str("PROMETHEUS_MULTIPROC_DIR", str(VAR_DIR / "prometheus")))
os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(PROMETHEUS_MULTIPROC_DIR)
# /metrics answers requests from these networks, or carrying `Authorization: Bearer <token>`.
METRICS_TOKEN = env_str("METRICS_TOKEN", "")
METRICS_ALLOWED_NETWORKS = env_list("METRICS_ALLOWED_NETWORKS", ["127.0.0.0/8", "::1/128"])
# A worker on a machine without a web process serves the same /metrics on this port (0: off).
WORKER_METRICS_PORT = env_int("WORKER_METRICS_PORT", 0)
# Beat touches this file on every tick; `manage.py beat_check` says whether it is recent.
BEAT_HEARTBEAT_FILE = Path(env_str("BEAT_HEARTBEAT_FILE", str(VAR_DIR / "beat-heartbeat")))
CELERY_BEAT_SCHEDULER = "apps.operations.beat:HeartbeatScheduler"
# Beat wakes at least this often, so its heartbeat is never older than this while it lives.
CELERY_BEAT_MAX_LOOP_INTERVAL = 30

# --- Retention (apps.retention, docs/operations.md) -----------------------------------------
# Days of activity a workspace without a policy of its own keeps (0: forever). A workspace's
# owner chooses 30, 90 or 365 days or forever (`manage.py retention_set`).
RETENTION_DEFAULT_ACTIVITY_DAYS = env_int("RETENTION_DEFAULT_ACTIVITY_DAYS", 0)
# Days the audit log keeps an entry (docs/audit-log.md); 0 keeps entries forever. Applied by
# the same hourly retention task.
AUDIT_RETENTION_DAYS = env_int("AUDIT_RETENTION_DAYS", 365)

# --- Client addresses -------------------------------------------------------------------------
# Reverse proxies in front of the web processes that append to X-Forwarded-For (0: none, the
# client is REMOTE_ADDR). The audit log records the address the outermost proxy saw.
TRUSTED_PROXY_COUNT = env_int("TRUSTED_PROXY_COUNT", 0)

# --- OpenTelemetry (apps.activity.tracing, docs/activity-recording.md) ------------------------
# A span whose parent has not arrived after this many seconds stops waiting: it is recorded as a
# top-level step of its trace's run when the run exists, else dropped (and counted).
OTLP_PENDING_SPAN_TTL_SECONDS = env_int("OTLP_PENDING_SPAN_TTL_SECONDS", 3600, minimum=60)
# Bytes of OTLP bodies one web process decodes and records at once; past it, 503 + Retry-After
# (apps.activity.otlp.in_flight). One body alone is always admitted.
OTLP_BYTES_IN_FLIGHT = env_int("OTLP_BYTES_IN_FLIGHT", 2 * 1024 * 1024, minimum=1024)

# Beat runs a few sweepers over due rows; delays live in the database (STYLE.md, Celery).
CELERY_BEAT_SCHEDULE = {
    # Spans whose parent never arrived, in bounded batches.
    "activity-expire-pending-spans": {"task": "activity.expire_pending_spans", "schedule": 300.0},
    "knowledge-refresh-due": {"task": "knowledge.refresh_due", "schedule": 60.0},
    "knowledge-recover-stalled": {
        "task": "knowledge.recover_stalled",
        "schedule": float(KNOWLEDGE_RECOVER_INTERVAL_SECONDS),
    },
    "webhooks-dispatch-due": {
        "task": "webhooks.dispatch_due",
        "schedule": float(WEBHOOK_DISPATCH_INTERVAL_SECONDS),
    },
    "knowledge-embed-stalled": {"task": "knowledge.embed_stalled", "schedule": 300.0},
    # Unanswered questions: new retrieval steps read and their questions grouped by meaning.
    "knowledge-gaps-sweep": {
        "task": "knowledge.gaps_sweep",
        "schedule": float(KNOWLEDGE_GAPS_INTERVAL_SECONDS),
    },
    # Daily rediscovery of tool servers is a due time per server (next_discovery_at).
    "tools-discover-due": {"task": "tools.discover_due", "schedule": 60.0},
    # Expired activity and superseded knowledge versions, in bounded batches (bulk queue).
    "retention-apply": {"task": "retention.apply", "schedule": 3600.0},
    # The latency tier of closed months that long usage periods read (apps.usage.tiers).
    "usage-seal-months": {"task": "usage.seal_months", "schedule": 3600.0},
    "mcp-server-clear-expired-tokens": {
        "task": "mcp_server.clear_expired_tokens",
        "schedule": 3600.0,
    },
}
