"""Model fields of the app's own."""

from typing import Any

from django.db import models

from .. import keys


class SealedCharField(models.CharField):
    """Text stored sealed (suspensions/keys.py) and read back open: the database never holds it in clear.

    Sealing is not deterministic, so the column cannot be searched or filtered
    on; nothing does. Raw SQL reads the sealed text and opens it with keys.unseal.
    """

    def get_prep_value(self, value: Any) -> Any:
        value = super().get_prep_value(value)
        return keys.seal(value) if value else value

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        return keys.unseal(value) if value else value
