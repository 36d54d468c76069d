"""Re-encrypt every stored credential with the first key of LADDER_CREDENTIAL_KEY (docs/DEPLOY.md).

Key rotation: put the new key first in LADDER_CREDENTIAL_KEY ("new,old") on every process, run this
once, then drop the old key. All or nothing: a credential that no configured key opens stops the run
before anything is written, and the ids are named (never the values).
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from ladder.models import Connection
from ladder.security.crypto import CredentialDecryptionError, rotate_credential


class Command(BaseCommand):
    help = "Re-encrypt every stored connection credential with the first key of LADDER_CREDENTIAL_KEY."

    def handle(self, *args: Any, **options: Any) -> None:
        stored = dict(
            Connection.objects.exclude(credential_ciphertext="").values_list("id", "credential_ciphertext")
        )
        rotated: dict[str, str] = {}
        unreadable: list[str] = []
        for connection_id, ciphertext in stored.items():
            try:
                rotated[connection_id] = rotate_credential(ciphertext)
            except CredentialDecryptionError:
                unreadable.append(connection_id)
        if unreadable:
            raise CommandError(
                f"no key of LADDER_CREDENTIAL_KEY opens the credential of {', '.join(sorted(unreadable))}; "
                "nothing was re-encrypted (keep the old key in the list)"
            )
        updated = 0
        with transaction.atomic():
            for connection_id, ciphertext in rotated.items():
                # Conditional: a credential an operator replaced meanwhile is already under the new key.
                updated += Connection.objects.filter(
                    pk=connection_id, credential_ciphertext=stored[connection_id]
                ).update(credential_ciphertext=ciphertext)
        self.stdout.write(f"re-encrypted {updated} credential(s) with the first key of LADDER_CREDENTIAL_KEY")
