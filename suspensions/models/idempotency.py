"""Idempotency keys on creates (docs/api.md, "4. Claims and recovery"): the first answer to a keyed POST, kept 24 hours
per principal."""

from django.db import models

from .sealed import SealedCharField


class IdempotencyKey(models.Model):
    """One principal's `Idempotency-Key` and the answer its first request got (suspensions/api/idempotency.py).

    `principal` is who owns the key (services/idempotency.owner_of: the user,
    or the token when no user is linked), so two principals never share keys.
    `request_digest` binds the key to one request (method, path and body as
    JSON values); `status` and `body` are the 2xx answer replayed to the same
    request again. The row is written in the request's own transaction, so a
    refusal (rolled back) leaves no key behind, and a second request with the
    same key waits on the unique index until the first one's commit.
    `status` is null only inside that transaction, never in a committed row.
    The body is sealed: a create may answer a secret (a webhook's).
    Not in Django admin: it is not scoped and holds nothing an auditor reads.
    """

    id = models.BigAutoField(primary_key=True)
    principal = models.CharField(max_length=200)
    key = models.CharField(max_length=255)
    request_digest = models.CharField(max_length=64)
    # "POST /api/v1/runs": what a mismatch names.
    method_path = models.CharField(max_length=1000)
    status = models.PositiveSmallIntegerField(null=True)
    body = SealedCharField(max_length=None, blank=True, default="")
    created_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["principal", "key"], name="one_idempotency_key_per_principal")]
        # The sweep's deletion of keys past 24 hours.
        indexes = [models.Index(fields=["created_at"], name="idempotency_key_created")]

    def __str__(self) -> str:
        return f"idempotency key of {self.principal}"
