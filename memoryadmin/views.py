"""The shell's own view: `/healthz`, for load balancers, `mnemosyne status` and operators."""

from __future__ import annotations

from django.db import DatabaseError
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from operations.health import health_report
from surfaces.base.security import is_local


def _sees_health_details(request: HttpRequest) -> bool:
    if is_local(request):
        return True
    try:
        return request.user.is_authenticated and request.user.is_staff
    except DatabaseError:
        return False  # the session cannot be read while the database is down


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """200 when every part is up; 503 naming the failing parts otherwise. The details (paths,
    versions, host names) only for signed-in staff and for requests from this machine."""
    report = health_report()
    status = 200 if not report["failing"] else 503
    if not _sees_health_details(request):
        report = {key: report[key] for key in ("status", "failing", "degraded") if key in report}
    return JsonResponse(report, status=status)
