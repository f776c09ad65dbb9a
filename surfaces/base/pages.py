"""The one base of every tenant page of the web admin, and the registry that makes its URLs.

A tenant page lives at `/t/<slug>/<route>`. Its class derives from `TenantPage` and is
registered with `@tenant_page(...)`; the URLs of tenant pages are made from the registry only,
so a tenant URL cannot exist without this base. The base resolves, before any handler runs:

- who asks: anonymous visitors are sent to the sign-in page;
- in which tenant, with which role: a tenant the user is not a member of is the same 404 as a
  tenant that does not exist (superusers are admins everywhere);
- whether the role may: a page's safe methods need `need_get` (read by default), every other
  method needs `need_post` (write by default). Auditors read only, so every write refuses them
  with 403, and `access.can_write` tells templates not to render write controls at all.

The hooks that do this cannot be overridden (TypeError at import), and handlers reach the tenant
only through `self.access`. Lookups that miss inside the tenant (`tenants.errors.NotFound`) are
404s too, the same as another tenant's object.
"""

from __future__ import annotations

import pkgutil
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from importlib import import_module
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import render
from django.urls import URLPattern, path, reverse
from django.utils.functional import Promise
from django.views import View

from operations.replica import replica_configured, replica_note_write, replica_reads
from surfaces.base.access import Access, Need, person_access
from tenants.actors import Actor
from tenants.errors import InvalidInput, NotFound
from tenants.models import Tenant
from tenants.scope import tenant_scope
from tenants.selectors import tenants_for_user


def page_access(*, user: AbstractBaseUser, slug: str) -> Access:
    """The person's access to the tenant named `slug`; Http404 when it is not theirs."""
    try:
        return person_access(user=user, slug=slug)
    except NotFound:
        raise Http404("no such tenant") from None  # as for a tenant that does not exist


_PROTECTED = frozenset({"dispatch", "setup", "access", "tenant", "actor", "needed", "render"})


class TenantPage(View):
    """Base of every tenant page. Set `need_get`/`need_post` where the defaults (reads are
    read, the rest write) do not say it; implement `get`/`post` with `self.access`."""

    need_get: Need = Need.READ
    need_post: Need = Need.WRITE
    # GET may be answered from the read replica (memoryadmin/replica.py); False for a page
    # that writes while it reads (an export records itself in the audit log).
    reads_replica = True
    http_method_names = ["get", "post", "head"]
    _access: Access | None = None
    _user_tenants: list[tuple[Tenant, str]] = []

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        overridden = _PROTECTED & set(vars(cls))
        if overridden:
            raise TypeError(
                f"{cls.__name__} overrides {', '.join(sorted(overridden))}: the tenant and the "
                "person's rights come from TenantPage and cannot be replaced"
            )

    def needed(self, request: HttpRequest) -> Need:
        return self.need_get if request.method in ("GET", "HEAD") else self.need_post

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        access = page_access(user=request.user, slug=kwargs.pop("tenant"))
        if not access.may(self.needed(request)):
            raise PermissionDenied("this role reads only")
        self._access = access
        self._user_tenants = tenants_for_user(user=request.user)
        try:
            if request.method in ("GET", "HEAD"):
                # A page reads in one transaction of the tenant's scope: one consistent
                # snapshot, and the selectors' own scopes join it instead of each opening one.
                # Writes keep each service's own transaction.
                with ExitStack() as stack:
                    where = "primary"
                    if self.reads_replica:
                        where = stack.enter_context(replica_reads(tenant_id=access.tenant.pk))
                    stack.enter_context(tenant_scope(access.tenant))
                    response = super().dispatch(request, *args, **kwargs)
                    if self.reads_replica and replica_configured():
                        response["X-Mnemosyne-Read-From"] = where
                    return response
            response = super().dispatch(request, *args, **kwargs)
            if response.status_code < 400:
                # The person reads what they just wrote, on the pages that follow.
                replica_note_write(tenant_id=access.tenant.pk)
            return response
        except NotFound:
            raise Http404("not found") from None
        except InvalidInput as error:
            # Bad input a handler did not turn into a form error (a hand-made cursor, say).
            return self.render(
                "web/bad_request.html", {"field": error.field, "message": error.message}, 400
            )

    @property
    def access(self) -> Access:
        if self._access is None:  # a handler ran without dispatch(): refuse, never guess
            raise PermissionDenied("no tenant resolved for this request")
        return self._access

    @property
    def tenant(self) -> Tenant:
        return self.access.tenant

    @property
    def actor(self) -> Actor:
        return self.access.actor

    def url(self, name: str, **kwargs: Any) -> str:
        """The URL of another page of this tenant, by its registered name."""
        return tenant_url(self.tenant, name, **kwargs)

    def render(
        self, template: str, context: dict[str, Any] | None = None, status: int = 200
    ) -> HttpResponse:
        request = self.request
        full = {
            "access": self.access,
            "tenant": self.tenant,
            "user_tenants": self._user_tenants,
            "nav": nav_for(request, self.tenant),
            **(context or {}),
        }
        return render(request, template, full, status=status)


class WriteAction(TenantPage):
    """A POST-only write (remove, revoke, ...): auditors get 403 whatever the method."""

    need_get = Need.WRITE
    http_method_names = ["post"]


# -- the registry -------------------------------------------------------------------------------


@dataclass(frozen=True)
class PageSpec:
    view: type[TenantPage]
    route: str  # below /t/<slug>/, e.g. "facts/<id:fact_id>/"
    name: str  # URL name
    nav: str | Promise | None  # label in the navigation; None: not in it
    order: int
    # URL names that light up this page's navigation entry (its sub-pages).
    section: str | None


_PAGES: dict[str, PageSpec] = {}


def tenant_page(
    route: str,
    *,
    name: str,
    nav: str | Promise | None = None,
    order: int = 100,
    section: str | None = None,
) -> Callable[[type[TenantPage]], type[TenantPage]]:
    """Register a tenant page: its URL (below /t/<slug>/) and, with `nav`, its place in the
    navigation (ordered by `order`). `section` names the navigation entry a sub-page belongs
    to (a fact's page belongs to "facts")."""

    def register(view: type[TenantPage]) -> type[TenantPage]:
        if not (isinstance(view, type) and issubclass(view, TenantPage)):
            raise TypeError(f"{view!r} is not a TenantPage: tenant pages must derive from it")
        if name in _PAGES and _PAGES[name].view is not view:
            raise ValueError(f"a tenant page named {name!r} is registered already")
        if nav is not None and "<" in route:
            raise ValueError(f"{name}: a page in the navigation cannot take URL parameters")
        _PAGES[name] = PageSpec(view, route, name, nav, order, section)
        return view

    return register


_discovered = False


PAGES_PACKAGE = "surfaces.pages"


def registered_pages() -> list[PageSpec]:
    """Every tenant page (each module of `surfaces.pages` registers its own)."""
    global _discovered
    if not _discovered:
        package = import_module(PAGES_PACKAGE)
        for module in pkgutil.iter_modules(package.__path__):
            import_module(f"{PAGES_PACKAGE}.{module.name}")
        _discovered = True
    return sorted(_PAGES.values(), key=lambda spec: (spec.order, spec.name))


NAMESPACE = "web"


def tenant_urlpatterns() -> list[URLPattern]:
    """The URLs of every registered tenant page (to be included under the `web` namespace)."""
    return [
        path(f"t/<slug:tenant>/{spec.route}", spec.view.as_view(), name=spec.name)
        for spec in registered_pages()
    ]


def tenant_url(tenant: Tenant, name: str, **kwargs: Any) -> str:
    return reverse(f"{NAMESPACE}:{name}", kwargs={"tenant": tenant.slug, **kwargs})


@dataclass(frozen=True)
class NavEntry:
    label: str | Promise
    url: str
    active: bool


def nav_for(request: HttpRequest, tenant: Tenant) -> list[NavEntry]:
    match = getattr(request, "resolver_match", None)
    current = match.url_name if match else None
    current_spec = _PAGES.get(current or "")
    section = current_spec.section if current_spec and current_spec.section else current
    return [
        NavEntry(spec.nav, tenant_url(tenant, spec.name), spec.name == section)
        for spec in registered_pages()
        if spec.nav is not None
    ]
