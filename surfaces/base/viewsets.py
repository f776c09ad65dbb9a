"""The one base of every tenant endpoint: it finds the tenant and the caller's rights in it.

The tenant comes from the URL (`/api/v1/tenants/<slug>/...`, for signed-in users and for keys of
that tenant) or from the API key (`/api/v1/...`, programs). A subclass cannot forget it: the
hooks that resolve it cannot be overridden (TypeError at import), handlers reach the tenant only
through `self.access`, and every read goes through a tenant-first selector. "Not a member" and
"no such tenant" are the same 404; a lookup inside the tenant that misses is a 404 too.
"""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any, cast

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy as _lazy
from rest_framework import exceptions, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from operations.replica import replica_note_write, replica_reads
from surfaces.base.access import Access, Need, key_access, person_access
from surfaces.base.parsers import FirstRenderer
from surfaces.base.terms import term
from tenants.actors import Actor
from tenants.errors import InvalidInput, NotFound
from tenants.models import ApiKey, Tenant


def _refusal(access: Access, need: Need) -> str:
    if need is Need.MANAGE and access.is_key:
        return _("only a signed-in admin can do this; API keys do not manage tenants")
    if need is Need.PEOPLE:
        return _("API keys do not see the tenant's members and keys; a signed-in person does")
    if need is Need.WHOLE_TENANT:
        return _(
            "this API key is limited to a scope; what spans the whole tenant (entities, the "
            "audit log, settings) needs a key without a scope limit"
        )
    if access.is_key:
        return _("this API key has no '%(need)s' scope") % {"need": need.value}
    return _("your role in %(tenant)s is %(role)s: it may not %(need)s") % {
        "tenant": access.tenant.slug,
        "role": term(access.role or ""),
        "need": term(need.value) if need.value in ("read", "write") else need.value,
    }


def resolve_access(request: Request, slug: str | None) -> Access:
    """Who is asking, in which tenant, with which rights. NotFound for a tenant not theirs."""
    key = request.auth if isinstance(request.auth, ApiKey) else None
    if key is not None:
        if slug is not None and slug != key.tenant.slug:
            raise NotFound("tenant", slug)
        return key_access(key)
    if slug is None:
        raise InvalidInput(
            "tenant", _("signed in as a person, name the tenant: /api/v1/tenants/<slug>/...")
        )
    return person_access(user=cast(AbstractBaseUser, request.user), slug=slug)


class PayloadTooLarge(exceptions.APIException):
    status_code = 413
    default_detail = _lazy("the request body is too large")
    default_code = "too_large"


def check_body_size(request: Request, limit: int) -> None:
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    if length > limit:
        raise PayloadTooLarge(
            _("the request body is larger than %(limit)d bytes") % {"limit": limit}
        )


_PROTECTED = frozenset(
    {"initial", "access", "tenant", "actor", "get_queryset", "get_object", "needed"}
)


class TenantViewSet(viewsets.ViewSet):
    """Base of tenant endpoints. Declare `needs = {"action": Need.X}` where the HTTP method
    does not say it (safe methods read, the others write); the rest is done here."""

    needs: dict[str, Need] = {}
    # Endpoints of facts, recall and context work within a key's scope limit; every other
    # endpoint spans the whole tenant and refuses a key limited to a scope.
    within_scope_limit = False
    # Endpoints about the tenant's people and keys: never answered to an API key.
    about_people = False
    content_negotiation_class = FirstRenderer
    max_body_bytes: int | None = None  # default: settings.MNEMOSYNE_API_MAX_BODY_BYTES
    # Reads that may be answered from the read replica (memoryadmin/replica.py).
    reads_replica = False
    _access: Access | None = None
    _replica: ExitStack | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        overridden = _PROTECTED & set(vars(cls))
        if overridden:
            raise TypeError(
                f"{cls.__name__} overrides {', '.join(sorted(overridden))}: the tenant and the "
                "caller's rights come from TenantViewSet and cannot be replaced"
            )

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        check_body_size(request, self.max_body_bytes or settings.MNEMOSYNE_API_MAX_BODY_BYTES)
        super().initial(request, *args, **kwargs)  # authentication (401), throttling (429)
        access = resolve_access(request, kwargs.get("tenant"))
        need = self.needed(request)
        extra = [Need.PEOPLE] if self.about_people else []
        if not self.within_scope_limit:
            extra.append(Need.WHOLE_TENANT)
        for needed in (need, *extra):
            if needed.value not in access.rights:
                raise exceptions.PermissionDenied(_refusal(access, needed))
        self._access = access
        if self.reads_replica:
            # Authentication and its bookkeeping are done (on the primary): the rest may read
            # from the replica, until finalize_response.
            self._replica = ExitStack()
            where = self._replica.enter_context(replica_reads(tenant_id=access.tenant.pk))
            request.read_from = where  # type: ignore[attr-defined]

    def finalize_response(self, request: Request, response: Any, *args: Any, **kwargs: Any) -> Any:
        if self._replica is not None:
            self._replica.close()
            self._replica = None
        elif (
            self._access is not None
            and request.method not in ("GET", "HEAD", "OPTIONS")
            and getattr(response, "status_code", 500) < 400
        ):
            replica_note_write(tenant_id=self._access.tenant.pk)
        response = super().finalize_response(request, response, *args, **kwargs)
        if where := getattr(request, "read_from", None):
            response["X-Mnemosyne-Read-From"] = where
        return response

    def needed(self, request: Request) -> Need:
        declared = self.needs.get(getattr(self, "action", None) or "")
        if declared is not None:
            return declared
        return Need.READ if request.method in ("GET", "HEAD", "OPTIONS") else Need.WRITE

    @property
    def access(self) -> Access:
        if self._access is None:  # a handler ran without initial(): refuse, never guess
            raise exceptions.PermissionDenied("no tenant resolved for this request")
        return self._access

    @property
    def tenant(self) -> Tenant:
        return self.access.tenant

    @property
    def actor(self) -> Actor:
        return self.access.actor


def page(results: Any, next_cursor: str | None) -> Response:
    """A page of a list: its results (a serializer's data) and the cursor of the next one."""
    return Response({"results": results, "next_cursor": next_cursor})
