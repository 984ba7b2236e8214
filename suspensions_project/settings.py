"""One env-driven settings file (12-factor). See .env.example for every variable."""

import base64
import copy
import hashlib
import re
from pathlib import Path
from urllib.parse import quote, urlsplit

import environ
from cryptography.fernet import Fernet
from django.core.exceptions import ImproperlyConfigured
from kombu import Queue

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = BASE_DIR / "var"

env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)


def env_int(name: str, default: int, minimum: int) -> int:
    """An integer setting, refused at start when it cannot work rather than failing every request later."""
    try:
        value = env.int(name, default=default)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, got {env.str(name)!r}") from None
    if value < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, got {value}")
    return value


DEBUG = env.bool("DJANGO_DEBUG", default=False)
SECRET_KEY = env.str("DJANGO_SECRET_KEY", default="")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("DJANGO_SECRET_KEY is required when DJANGO_DEBUG is off")
    SECRET_KEY = "insecure-development-key-only-for-debug"
# Webhook secrets are sealed and decision tokens hashed under these (suspensions/keys.py): Fernet keys,
# newest first (`python3 -c 'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())'`).
# Unset, one key is derived from SECRET_KEY, and `check --deploy` warns: rotating the secret key would then
# lose every webhook secret. Rotation: docs/deploy.md, "Secrets at rest".
DATA_ENCRYPTION_KEYS = env.list("DATA_ENCRYPTION_KEYS", default=[])
DATA_KEYS_DERIVED = not DATA_ENCRYPTION_KEYS
if DATA_KEYS_DERIVED:
    DATA_ENCRYPTION_KEYS = [
        base64.urlsafe_b64encode(hashlib.sha256(b"suspensions data key\0" + SECRET_KEY.encode()).digest()).decode()
    ]
for _key in DATA_ENCRYPTION_KEYS:
    try:
        Fernet(_key)
    except ValueError:
        raise ImproperlyConfigured("DATA_ENCRYPTION_KEYS must be Fernet keys (32 url-safe base64 bytes)") from None
# The audit checkpoints' Ed25519 signing key (docs/auditors.md, "What is recorded"): base64 of a 32-byte private seed.
# `make run` writes one into .env; elsewhere make one as the message below says.
# In debug without it a development key is derived from SECRET_KEY (its checkpoints prove nothing to anyone).
AUDIT_SIGNING_KEY = env.str("AUDIT_SIGNING_KEY", default="")
if not AUDIT_SIGNING_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "AUDIT_SIGNING_KEY is required when DJANGO_DEBUG is off: base64 of 32 random bytes, e.g. "
            "python3 -c 'import base64, os; print(base64.b64encode(os.urandom(32)).decode())'"
        )
    AUDIT_SIGNING_KEY = base64.b64encode(
        hashlib.sha256(b"suspensions audit key\0" + SECRET_KEY.encode()).digest()
    ).decode()
try:
    _audit_seed = base64.b64decode(AUDIT_SIGNING_KEY, validate=True)
except ValueError:
    _audit_seed = b""
if len(_audit_seed) != 32:
    raise ImproperlyConfigured("AUDIT_SIGNING_KEY must be base64 of exactly 32 bytes (an Ed25519 private seed)")
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "testserver"])
CSRF_TRUSTED_ORIGINS = env.list("DJANGO_CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "suspensions",
]

MIDDLEWARE = [
    # Outermost: every answer (refusals included) carries X-Request-ID, is timed and logged; it reads no body.
    "suspensions.observability.middleware.RequestObservabilityMiddleware",
    # Next, so every answer (refusals included) leaves with it; it reads no body.
    "suspensions.middleware.NoStoreMiddleware",
    # Next, so every HTML page (refusal pages included) leaves with a Content-Security-Policy.
    "suspensions.middleware.ContentSecurityPolicyMiddleware",
    # Next, so an oversized body is refused before anything reads it.
    "suspensions.middleware.RequestSizeLimitMiddleware",
    # Next: a path, query string or form body that is not UTF-8 is a 400 before any view reads it.
    "suspensions.middleware.Utf8RequestMiddleware",
    "suspensions.middleware.DatabaseUnavailableMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # Serves /static/ from STATIC_ROOT (collectstatic) in the web process itself, before sessions or auth.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Right after: a person signed in by the identity provider is re-checked there every OIDC_RENEW_SECONDS.
    "suspensions.oidc.RecheckMiddleware",
    # With a read replica only: a browser that just wrote reads the primary for a moment (suspensions/replicas.py).
    "suspensions.replicas.PrimaryAfterWriteMiddleware",
    # After CSRF: a forged sign-in is refused as such before it counts against anyone.
    "suspensions.middleware.LoginLockoutMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "suspensions_project.urls"
WSGI_APPLICATION = "suspensions_project.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "suspensions.console.context.operator_nav",
                "suspensions.console.context.sign_in",
            ],
        },
    },
]

# PostgreSQL everywhere (docs/decisions.md, "The plain core"). DATABASE_URL is required with DEBUG off, like the secret;
# with DEBUG on and none set it is the embedded server of this checkout, which `make run` and
# `make db` start with its data and socket under var/postgres (bin/localdb.py).
EMBEDDED_DATABASE_URL = f"postgres://postgres@/suspensions?host={quote(str(VAR_DIR / 'postgres'))}"
DATABASE_URL = env.str("DATABASE_URL", default="")
if not DATABASE_URL:
    if not DEBUG:
        raise ImproperlyConfigured(
            "DATABASE_URL is required when DJANGO_DEBUG is off, e.g. postgres://user@host:5432/dbname"
        )
    DATABASE_URL = EMBEDDED_DATABASE_URL
DATABASES = {"default": env.db_url_config(DATABASE_URL)}
if DATABASES["default"].get("ENGINE") != "django.db.backends.postgresql":
    raise ImproperlyConfigured(f"DATABASE_URL must be a postgres:// URL, not {DATABASE_URL.split(':')[0]}://")
# Sized for the web threads and the race tests (16 racers plus the test's own
# connection): the pool default of 4 would make racers queue on the pool
# instead of racing on the row.
# psycopg_pool refuses these only when the first request opens the pool: every
# database request would then be a 500. Refuse them at start instead.
_pool_min = env_int("DB_POOL_MIN", default=2, minimum=0)
_pool_max = env_int("DB_POOL_MAX", default=40, minimum=1)
if _pool_max < _pool_min:
    raise ImproperlyConfigured(f"DB_POOL_MAX ({_pool_max}) must be at least DB_POOL_MIN ({_pool_min})")
_POOLED = {
    # No server-side prepared statements (docs/deploy.md, "PgBouncer"), so PgBouncer in transaction mode needs nothing
    # set: Django's psycopg cursors bind parameters on the client (server_side_binding stays off),
    # which prepares nothing whatever prepare_threshold says (None says it too), and a transition's
    # writes are several statements in one execute (services/sql/rows.py, Writes.send), which only
    # client-side binding allows. tests/services/test_sql.py holds the "prepares nothing".
    "prepare_threshold": None,
    "pool": {
        "min_size": _pool_min,
        "max_size": _pool_max,
        "timeout": env_int("DB_POOL_TIMEOUT", default=10, minimum=1),
    },
}
# The URL's own parameters (sslmode, host for a socket directory, ...) are kept.
DATABASES["default"]["OPTIONS"] = {**DATABASES["default"].get("OPTIONS", {}), **_POOLED}
# DB_PREPARED_STATEMENTS=1 turned prepared statements on while the hot path had server-binding cursors of its
# own; since issue 31 removed them it prepared none, so it is refused rather than silently ignored.
if env.bool("DB_PREPARED_STATEMENTS", default=False):
    raise ImproperlyConfigured(
        "DB_PREPARED_STATEMENTS=1 is not supported: the service binds parameters on the client and prepares no "
        "statement (docs/deploy.md, PgBouncer); unset it"
    )
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
# QuerySet.iterator() (Django's ModelChoiceField uses it: the admin's user and group pages)
# would DECLARE a WITH HOLD cursor on one server connection and FETCH from it on the next
# transaction, which behind PgBouncer in transaction mode is another one: 'portal
# "_django_curs_..." does not exist', a 500 (tests/ops/test_pgbouncer.py). The service
# streams no large result, so every read is fetched whole.
DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Reads that may lag (the lists, the inbox, the dashboard, the audit export) go to a PostgreSQL streaming replica
# when DATABASE_REPLICA_URL is set (docs/deploy.md, "Read replicas"; suspensions/replicas.py); everything else, and
# a browser's pages for REPLICA_FRESH_SECONDS after it wrote, reads the primary. Its connections are pooled like
# the primary's. In tests the alias mirrors the primary's test database.
DATABASE_REPLICA_URL = env.str("DATABASE_REPLICA_URL", default="")
REPLICA_FRESH_SECONDS = env_int("REPLICA_FRESH_SECONDS", default=10, minimum=1)
if DATABASE_REPLICA_URL:
    _replica = env.db_url_config(DATABASE_REPLICA_URL)
    if _replica.get("ENGINE") != "django.db.backends.postgresql":
        raise ImproperlyConfigured("DATABASE_REPLICA_URL must be a postgres:// URL")
    DATABASES["replica"] = {
        **_replica,
        "OPTIONS": {**_replica.get("OPTIONS", {}), **copy.deepcopy(_POOLED)},
        "CONN_HEALTH_CHECKS": True,
        "DISABLE_SERVER_SIDE_CURSORS": True,
        "TEST": {"MIRROR": "default"},
    }
    DATABASE_ROUTERS = ["suspensions.replicas.ReplicaRouter"]

# Sign-in failure counts and API throttles, shared by every web process: by default Django's database
# cache (its table is made by migration 0010), so the documented command line is safe as it stands;
# CACHE_URL=redis://host:6379/1 moves them to Redis (`locmemcache://` counts per process).
CACHES = {"default": env.cache_url("CACHE_URL", default="dbcache://suspensions_cache")}

# The filesystem transport ignores the host; naming one spares kombu's "No hostname was supplied" warning.
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default="filesystem://localhost//")
CELERY_BROKER_TRANSPORT_OPTIONS = (
    {
        "data_folder_in": str(VAR_DIR / "broker"),
        "data_folder_out": str(VAR_DIR / "broker"),
        "processed_folder": str(VAR_DIR / "broker-processed"),
        "store_processed": False,
        # The worker's and beat's control exchange (pidbox); kombu's default is ./control in the checkout.
        "control_folder": str(VAR_DIR / "broker-control"),
    }
    if CELERY_BROKER_URL.startswith("filesystem")
    else {}
)
# redis:// brokers: kombu's Redis transport keeping one client per channel (suspensions_project/broker.py).
if CELERY_BROKER_URL.startswith("redis://"):
    CELERY_BROKER_TRANSPORT = "suspensions_project.broker:Transport"
CELERY_TASK_ALWAYS_EAGER = env.bool("CELERY_TASK_ALWAYS_EAGER", default=False)
# Four queues: `sweep` for the expiry sweep alone; `celery` for reminders, the webhook sweep and the other beat
# tasks; `fanout` for fan-outs; `delivery` for webhook deliveries. The sweep has a worker of its own
# (`-Q sweep`, docs/deploy.md, "The sweep's worker"): a worker takes from its queues in turn, but a process busy
# with one slow delivery takes nothing else, so a sweep that shared processes with push stood behind every
# delivery task (issue 50, item 11: nine minutes). Other workers take `-Q celery,fanout,delivery`.
CELERY_TASK_DEFAULT_QUEUE = "celery"
CELERY_TASK_QUEUES = tuple(Queue(name, routing_key=name) for name in ("sweep", "celery", "fanout", "delivery"))
CELERY_TASK_ROUTES = {
    "suspensions.tasks.sweep_expired": {"queue": "sweep"},
    "suspensions.tasks.fan_out_outbox": {"queue": "fanout"},
    "suspensions.tasks.deliver_endpoint": {"queue": "delivery"},
    # Notifications are deliveries too (approver emails, Slack messages): the same queue, their own tasks.
    "suspensions.tasks.deliver_notifications": {"queue": "delivery"},
    "suspensions.tasks.notification_sweep": {"queue": "delivery"},
}

# Per token, e.g. "100/min" (s, min, hour, day); empty: no throttle.
API_THROTTLE_RATE = env.str("API_THROTTLE_RATE", default="") or None
# DRF parses the rate on every throttled request: a bad one would make every API call a 500.
if API_THROTTLE_RATE and not re.fullmatch(r"[1-9][0-9]*/[smhd][a-z]*", API_THROTTLE_RATE):
    raise ImproperlyConfigured(f"API_THROTTLE_RATE must look like 100/min (s, min, hour, day): {API_THROTTLE_RATE!r}")

SUSPENSION_TTL_SECONDS = env_int("SUSPENSION_TTL_SECONDS", default=86400, minimum=0)
# docs/api.md §4: how many Idempotency-Keys younger than 24 hours one principal may hold; a new one past it is 429.
IDEMPOTENCY_KEYS_PER_PRINCIPAL = env_int("IDEMPOTENCY_KEYS_PER_PRINCIPAL", default=10000, minimum=1)
SWEEP_INTERVAL_SECONDS = env_int("SWEEP_INTERVAL_SECONDS", default=60, minimum=1)
SWEEP_BATCH_SIZE = env_int("SWEEP_BATCH_SIZE", default=1000, minimum=1)
SWEEP_TIME_LIMIT_SECONDS = env_int("SWEEP_TIME_LIMIT_SECONDS", default=300, minimum=1)
# The console lists a start as uncertain once it is this old: a younger one is most likely still working.
UNCERTAIN_AFTER_SECONDS = env_int("UNCERTAIN_AFTER_SECONDS", default=300, minimum=0)
CELERY_BEAT_SCHEDULE = {
    "sweep-expired": {
        "task": "suspensions.tasks.sweep_expired",
        "schedule": SWEEP_INTERVAL_SECONDS,
        # A sweep still queued when the next one is due is dropped: the next covers it.
        "options": {"expires": SWEEP_INTERVAL_SECONDS},
    },
}

# Idempotency-Keys answer for 24 hours (docs/api.md, "4. Claims and recovery"); past that a key is free again
# (services/idempotency.take) and this deletes the rows.
CELERY_BEAT_SCHEDULE["forget-idempotency-keys"] = {
    "task": "suspensions.tasks.forget_idempotency_keys",
    "schedule": 3600,
    "options": {"expires": 3600},
}
# Signed audit checkpoints (docs/auditors.md, "What is recorded"): how often, and how far back a checkpoint looks for
# runs whose chain changed (an event committed after a checkpoint may carry an earlier time: its transaction's clock).
AUDIT_CHECKPOINT_SECONDS = env_int("AUDIT_CHECKPOINT_SECONDS", default=300, minimum=1)
AUDIT_CHECKPOINT_GRACE_SECONDS = env_int("AUDIT_CHECKPOINT_GRACE_SECONDS", default=600, minimum=0)
CELERY_BEAT_SCHEDULE["audit-checkpoint"] = {
    "task": "suspensions.tasks.audit_checkpoint",
    "schedule": AUDIT_CHECKPOINT_SECONDS,
    "options": {"expires": AUDIT_CHECKPOINT_SECONDS},
}
# The events table's monthly partitions (docs/deploy.md, "The events table's partitions"): created this many months
# ahead, hourly. Retention (docs/auditors.md, "Retention and legal holds"): events older than AUDIT_RETENTION_DAYS
# are pruned a whole month at a time, after a signed checkpoint seals what goes; 0 (the default) keeps every event.
AUDIT_PARTITIONS_AHEAD = env_int("AUDIT_PARTITIONS_AHEAD", default=2, minimum=1)
AUDIT_RETENTION_DAYS = env_int("AUDIT_RETENTION_DAYS", default=0, minimum=0)
CELERY_BEAT_SCHEDULE["audit-partitions"] = {
    "task": "suspensions.tasks.audit_partitions",
    "schedule": 3600,
    "options": {"expires": 3600},
}

# Approver emails (docs/notifications.md, "Email"). Production: EMAIL_URL (smtp://user:pass@host:587, smtp+tls://,
# smtp+ssl://); without it EMAIL_BACKEND/EMAIL_FILE_PATH, which `make run` points at a file backend under var/mail.
if env.str("EMAIL_URL", default=""):
    vars().update(env.email_url("EMAIL_URL"))
else:
    EMAIL_BACKEND = env.str("EMAIL_BACKEND", default="django.core.mail.backends.smtp.EmailBackend")
    EMAIL_FILE_PATH = env.str("EMAIL_FILE_PATH", default=str(VAR_DIR / "mail"))
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="suspensions@localhost")
# A slow mail server must not hold a worker for minutes (Django's default is no timeout).
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT", default=10, minimum=1)
# The public origin of the console, for links that leave the site (emails, Slack messages).
# A pause's callback URL (docs/api.md, "Callback URLs: `POST /callbacks/{token}`") uses it too, unless it is left at
# this default: then the request's own host.
CONSOLE_BASE_URL_DEFAULT = "http://127.0.0.1:8000"
CONSOLE_BASE_URL = env.str("CONSOLE_BASE_URL", default=CONSOLE_BASE_URL_DEFAULT).rstrip("/")
# Slack approvals (docs/notifications.md, "Slack"): on only with both the bot token (xoxb-...) and the app's signing
# secret. SLACK_API_URL moves the Web API's base (the tests point it at a local fake).
SLACK_BOT_TOKEN = env.str("SLACK_BOT_TOKEN", default="")
SLACK_SIGNING_SECRET = env.str("SLACK_SIGNING_SECRET", default="")
SLACK_API_URL = env.str("SLACK_API_URL", default="https://slack.com/api/").rstrip("/") + "/"
# 1: an email's one-click Approve/Deny link asks its approver to sign in first (docs/notifications.md, "Email"); 0: the
# link is the key.
EMAIL_LINKS_REQUIRE_LOGIN = env.bool("EMAIL_LINKS_REQUIRE_LOGIN", default=False)
# How often beat looks for approvals due their one reminder (80% of the time to deadline).
REMINDER_INTERVAL_SECONDS = env_int("REMINDER_INTERVAL_SECONDS", default=60, minimum=1)
CELERY_BEAT_SCHEDULE["remind-approvers"] = {
    "task": "suspensions.tasks.remind_approvers",
    "schedule": REMINDER_INTERVAL_SECONDS,
    "options": {"expires": REMINDER_INTERVAL_SECONDS},
}

# Webhook delivery (docs/api.md, "Retries and guarantees"). Private, loopback and link-local receivers are refused
# unless this is on (`make run` and the tests turn it on: their receivers listen on 127.0.0.1). Cloud metadata addresses
# always are.
WEBHOOK_ALLOW_PRIVATE = env.bool("WEBHOOK_ALLOW_PRIVATE", default=False)
# Seconds to wait after each failed attempt; past the last one the message is failed (dead, redeliverable).
_retry_schedule = env.str("WEBHOOK_RETRY_SCHEDULE", default="5,30,120,600,3600,14400,43200,86400")
try:
    WEBHOOK_RETRY_SCHEDULE = [float(wait) for wait in _retry_schedule.split(",")]
except ValueError:
    raise ImproperlyConfigured(f"WEBHOOK_RETRY_SCHEDULE must be seconds like 5,30,120: {_retry_schedule!r}") from None
if any(wait <= 0 for wait in WEBHOOK_RETRY_SCHEDULE):
    raise ImproperlyConfigured(f"WEBHOOK_RETRY_SCHEDULE waits must be positive: {_retry_schedule!r}")
# A claimed message is not claimed again for this long (a live worker extends it while sending): a worker that
# died mid-send has it sent again once it ends, so it bounds how long a dead worker holds up a run's messages.
WEBHOOK_LEASE_SECONDS = env_int("WEBHOOK_LEASE_SECONDS", default=20, minimum=1)
# A process wakes the fan-out at most once this many milliseconds, with every outbox id it committed
# meanwhile (services/wakeups.py); 0 sends one task per commit, at the commit. 200: each task costs a worker
# about 4 ms of CPU however few ids it carries, and 40 of them a second were a fifth of a core (issue 33).
FAN_OUT_WINDOW_MS = env_int("FAN_OUT_WINDOW_MS", default=200, minimum=0)
# How often beat fans out outbox rows whose task was lost and hands endpoints with messages due (retries,
# expired leases) to delivery tasks timed for them.
WEBHOOK_SWEEP_SECONDS = env_int("WEBHOOK_SWEEP_SECONDS", default=10, minimum=1)
CELERY_BEAT_SCHEDULE["webhook-sweep"] = {
    "task": "suspensions.tasks.webhook_sweep",
    "schedule": WEBHOOK_SWEEP_SECONDS,
    "options": {"expires": WEBHOOK_SWEEP_SECONDS},
}
# Notifications (approver emails, Slack messages) retry on the webhooks' schedule; beat picks up the due ones.
CELERY_BEAT_SCHEDULE["notification-sweep"] = {
    "task": "suspensions.tasks.notification_sweep",
    "schedule": WEBHOOK_SWEEP_SECONDS,
    "options": {"expires": WEBHOOK_SWEEP_SECONDS},
}
# Delegates are told when a delegation starts (docs/identity.md, "Delegation"): beat finds those starting later.
CELERY_BEAT_SCHEDULE["announce-delegations"] = {
    "task": "suspensions.tasks.announce_delegations",
    "schedule": 60,
    "options": {"expires": 60},
}

# docs/api.md, "5. Digests and bounds": retained inputs up to 8 MiB, bodies up to 8 MiB + 64 KiB.
MAX_INPUT_BYTES = 8 * 1024 * 1024
MAX_REQUEST_BYTES = MAX_INPUT_BYTES + 64 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = MAX_REQUEST_BYTES
# What one run may hold of unexpired early results, in number and in bytes
# (docs/api.md, "`POST /runs/{id}/early-results` — a result before its pause").
EARLY_RESULTS_PER_RUN = env_int("EARLY_RESULTS_PER_RUN", default=64, minimum=1)
EARLY_RESULT_BYTES_PER_RUN = env_int("EARLY_RESULT_BYTES_PER_RUN", default=MAX_INPUT_BYTES, minimum=1)

# Django's ModelBackend plus the sign-in lockout (docs/decisions.md, "Trust boundaries"), for the console and the admin
# alike.
AUTHENTICATION_BACKENDS = ["suspensions.logins.LockoutBackend"]
# The sign-in lockout counts per client address: REMOTE_ADDR, or behind a proxy the META
# name of the header it sets (e.g. HTTP_X_FORWARDED_FOR; its last entry is used).
CLIENT_ADDRESS_HEADER = env.str("DJANGO_CLIENT_ADDRESS_HEADER", default="")
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "console:login"
LOGIN_REDIRECT_URL = "console:dashboard"
LOGOUT_REDIRECT_URL = "console:login"

# Single sign-on by OpenID Connect (docs/identity.md, "Sign-in settings"): off unless OIDC_ISSUER is set, so `make run`
# needs no provider. The provider's endpoints and keys are found by discovery from the issuer (suspensions/oidc.py).
OIDC_ISSUER = env.str("OIDC_ISSUER", default="").rstrip("/")
OIDC_CLIENT_ID = env.str("OIDC_CLIENT_ID", default="")
OIDC_CLIENT_SECRET = env.str("OIDC_CLIENT_SECRET", default="")
OIDC_PROVIDER_NAME = env.str("OIDC_PROVIDER_NAME", default="single sign-on")
OIDC_SCOPES = env.str("OIDC_SCOPES", default="openid email profile")
OIDC_GROUPS_CLAIM = env.str("OIDC_GROUPS_CLAIM", default="groups")
OIDC_SIGN_ALGO = env.str("OIDC_SIGN_ALGO", default="RS256")
# A signed-in person is re-checked at the provider at most this often (a disabled one is out within it).
OIDC_RENEW_SECONDS = env_int("OIDC_RENEW_SECONDS", default=900, minimum=1)
# 0 in production with single sign-on: passwords kept here sign in superusers only.
PASSWORD_SIGN_IN = env.bool("PASSWORD_SIGN_IN", default=True)
if OIDC_ISSUER:
    AUTHENTICATION_BACKENDS = [*AUTHENTICATION_BACKENDS, "suspensions.oidc.ProviderBackend"]
# mozilla-django-oidc's own names for what it reads; the endpoints come from discovery, not from settings.
OIDC_RP_CLIENT_ID = OIDC_CLIENT_ID
OIDC_RP_CLIENT_SECRET = OIDC_CLIENT_SECRET
OIDC_RP_SCOPES = OIDC_SCOPES
OIDC_RP_SIGN_ALGO = OIDC_SIGN_ALGO
OIDC_USE_PKCE = True
OIDC_USE_NONCE = True
OIDC_TIMEOUT = 10
# The client authenticates to the token endpoint with HTTP Basic (client_secret_basic, the OAuth 2.0 default every
# provider supports); 0 sends the secret in the form body instead (client_secret_post).
OIDC_TOKEN_USE_BASIC_AUTH = env.bool("OIDC_TOKEN_USE_BASIC_AUTH", default=True)
OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS = OIDC_RENEW_SECONDS

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True
# The admin writes times as the console does: "30 Nov 2026, 17:51:50 UTC" (suspensions/timefmt.py).
FORMAT_MODULE_PATH = ["suspensions.formats"]

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
# `manage.py collectstatic` fills it; WhiteNoise serves it. With DEBUG off the names are
# hashed and compressed (cached for a year by browsers), so collectstatic must run before
# the web process starts: a template naming a file missing from the manifest is an error.
STATIC_ROOT = Path(env.str("DJANGO_STATIC_ROOT", default=str(VAR_DIR / "staticfiles")))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}

X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SESSION_COOKIE_HTTPONLY = True
# A console or admin sign-in lasts a working day, not Django's two weeks (issue 32): a session cookie
# left on a shared machine or copied off one opens nothing the next morning.
SESSION_COOKIE_AGE = env_int("DJANGO_SESSION_AGE_SECONDS", default=8 * 3600, minimum=60)
SESSION_COOKIE_SECURE = env.bool("DJANGO_SECURE_COOKIES", default=not DEBUG)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
# TLS, all off by default (a laptop serves plain HTTP); docs/deploy.md lists the production values.
SECURE_SSL_REDIRECT = env.bool("DJANGO_SECURE_SSL_REDIRECT", default=False)
# Load balancers probe over plain HTTP; a redirect would read as "down".
# /metrics too: a scraper that followed a redirect would already have sent its token in clear.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"]
SECURE_HSTS_SECONDS = env_int("DJANGO_SECURE_HSTS_SECONDS", default=0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS", default=False)
SECURE_HSTS_PRELOAD = env.bool("DJANGO_SECURE_HSTS_PRELOAD", default=False)
# "HTTP_X_FORWARDED_PROTO,https": only behind a proxy that sets that header itself
# and strips it from clients, or any client can claim HTTPS.
_proxy_ssl_header = env.list("DJANGO_SECURE_PROXY_SSL_HEADER", default=[])
if _proxy_ssl_header and len(_proxy_ssl_header) != 2:
    raise ImproperlyConfigured(
        "DJANGO_SECURE_PROXY_SSL_HEADER must be a header and a value, e.g. HTTP_X_FORWARDED_PROTO,https"
    )
SECURE_PROXY_SSL_HEADER = (_proxy_ssl_header[0], _proxy_ssl_header[1]) if _proxy_ssl_header else None

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # Bearer first: DRF takes the 401 challenge from the first class.
        "suspensions.api.authentication.BearerTokenAuthentication",
        "suspensions.api.authentication.StaffSessionAuthentication",
    ],
    "DEFAULT_THROTTLE_CLASSES": ["suspensions.api.throttling.TokenRateThrottle"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PARSER_CLASSES": ["suspensions.api.parsers.StrictJSONParser"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_FILTER_BACKENDS": ["suspensions.api.filtering.StrictFilterBackend"],
    "DEFAULT_PAGINATION_CLASS": "suspensions.api.pagination.IdCursorPagination",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    # OPTIONS without DRF's serializer-built `actions`: the bodies are the wire's models (api/metadata.py).
    "DEFAULT_METADATA_CLASS": "suspensions.api.metadata.PlainMetadata",
    "EXCEPTION_HANDLER": "suspensions.api.errors.problem_exception_handler",
    "UNAUTHENTICATED_USER": None,
    "PAGE_SIZE": 50,
}

SPECTACULAR_SETTINGS = {
    "TITLE": "suspensions",
    "DESCRIPTION": "Holds paused AI-agent runs and resumes each one exactly once.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    # Show each operation's id (register_run, suspend_run...): the names clients generated from the schema use.
    "SWAGGER_UI_SETTINGS": {"displayOperationId": True},
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    # The same values as a request's choices (with their labels) and as an answer's Literal (suspensions/wire):
    # one name each, not a name per component.
    "ENUM_NAME_OVERRIDES": {
        "FormatEnum": "suspensions.models.WebhookFormat",
        "KindEnum": "suspensions.models.NotificationChannel",
        "WebhookFormatEnum": ["standard", "slack"],
        "NotificationChannelEnum": ["email", "slack"],
    },
    # The waits are Django async views, not DRF's: listed beside them (suspensions/api/schema.py).
    "PREPROCESSING_HOOKS": ["suspensions.api.schema.long_lived_endpoints"],
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "suspensions.api.schema.problem_responses",
    ],
}

# docs/deploy.md, "Logs": one JSON object per line on stderr, each with the request id,
# principal and run id of the request or task that wrote it. Django's own
# loggers lose their text handlers and go through the same one.
LOG_LEVEL = env.str("LOG_LEVEL", default="INFO").upper()
# `make run` sets LOG_DIR: the JSON lines then go to LOG_DIR/<LOG_NAME>.log (supervise.py names each
# process: web, worker, beat, setup), and the terminal gets short lines for people: warnings and
# errors, each request's access line, and whatever else reaches TERMINAL_LOG_LEVEL (INFO shows the
# transitions, sweeps and webhook attempts too).
LOG_DIR = env.str("LOG_DIR", default="")
LOG_NAME = env.str("LOG_NAME", default="manage")
TERMINAL_LOG_LEVEL = env.str("TERMINAL_LOG_LEVEL", default="WARNING").upper()
_JSON_HANDLER = {"formatter": "json", "filters": ["context"]}
_HANDLERS = (
    {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "text",
            "filters": ["terminal"],
        },
        "file": {"class": "logging.FileHandler", "filename": str(Path(LOG_DIR) / f"{LOG_NAME}.log"), **_JSON_HANDLER},
    }
    if LOG_DIR
    else {"console": {"class": "logging.StreamHandler", **_JSON_HANDLER}}
)
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {
        "context": {"()": "suspensions.observability.logs.ContextFilter"},
        "terminal": {"()": "suspensions.observability.logs.TerminalFilter", "level": TERMINAL_LOG_LEVEL},
    },
    "formatters": {
        "json": {"()": "suspensions.observability.logs.JsonFormatter"},
        "text": {
            "()": "suspensions.observability.logs.TextFormatter",
            "fmt": f"%(asctime)s {LOG_NAME:<6} %(levelname)s %(name)s: %(message)s",
            "datefmt": "%H:%M:%S",
        },
    },
    "handlers": _HANDLERS,
    "root": {"handlers": list(_HANDLERS), "level": LOG_LEVEL},
    "loggers": {
        "django": {"handlers": [], "level": LOG_LEVEL, "propagate": True},
        # runserver's request lines: the access line of suspensions.requests says the same, with the request id.
        "django.server": {"handlers": [], "level": "WARNING", "propagate": True},
        # At DEBUG, Django's template engine logs every failed variable lookup with the whole context, and
        # the admin's token page holds a new token's secret there (issue 32): never below INFO.
        "django.template": {"handlers": [], "level": "INFO" if LOG_LEVEL == "DEBUG" else LOG_LEVEL, "propagate": True},
        # httpx logs each request's full URL at INFO, and a receiver's URL may carry its token.
        "httpx": {"handlers": [], "level": "WARNING", "propagate": True},
        # Celery's own lines (task received, succeeded, beat sending): `make run` keeps them to warnings
        # so its terminal shows the service's lines; the service's task logs are under suspensions.*.
        "celery": {"handlers": [], "level": env.str("CELERY_LOG_LEVEL", default=LOG_LEVEL), "propagate": True},
    },
}

# GET /metrics wants `Authorization: Bearer <METRICS_TOKEN>` when set; open when empty (docs/api.md, "7.11 Metrics").
METRICS_TOKEN = env.str("METRICS_TOKEN", default="")

# SCIM 2.0 provisioning at /scim/v2/ (docs/identity.md, "Provisioning (SCIM) and leavers"): django-scim2's views over
# this project's adapters, filters and token check.
SCIM_SERVICE_PROVIDER = {
    "USER_MODEL_GETTER": "suspensions.scim.filters.scim_users",
    "GROUP_MODEL": "suspensions.models.ScimGroup",
    "USER_ADAPTER": "suspensions.scim.adapters.User",
    "GROUP_ADAPTER": "suspensions.scim.adapters.Group",
    "USER_FILTER_PARSER": "suspensions.scim.filters.UserFilterQuery",
    "GROUP_FILTER_PARSER": "suspensions.scim.filters.GroupFilterQuery",
    "SERVICE_PROVIDER_CONFIG_MODEL": "suspensions.scim.config.ServiceProviderConfig",
    "BASE_LOCATION_GETTER": "suspensions.scim.config.base_location",
    "AUTH_CHECK_MIDDLEWARE": "suspensions.scim.auth.ProvisionerCheck",
    "NETLOC": urlsplit(CONSOLE_BASE_URL).netloc,
    "AUTHENTICATION_SCHEMES": [
        {
            "type": "oauthbearertoken",
            "name": "Bearer token",
            "description": "An API token holding the provisioner role (manage.py createtoken --roles provisioner).",
            "primary": True,
        }
    ],
}
