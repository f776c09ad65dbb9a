"""Who made a change: a user, an API key or a named job. Stored as one string in audit rows."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

    from tenants.models import ApiKey

ActorKind = Literal["user", "apikey", "job"]


@dataclass(frozen=True)
class Actor:
    kind: ActorKind
    ident: str
    label: str = ""

    def __str__(self) -> str:
        return f"{self.kind}:{self.ident}" + (f":{self.label}" if self.label else "")

    @classmethod
    def user(cls, user: AbstractBaseUser) -> Actor:
        return cls("user", str(user.pk), user.get_username())

    @classmethod
    def api_key(cls, key: ApiKey) -> Actor:
        return cls("apikey", str(key.pk), key.name)

    @classmethod
    def job(cls, name: str) -> Actor:
        return cls("job", name)
