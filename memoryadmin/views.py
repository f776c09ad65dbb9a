from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from memoryadmin.health import health_report


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """200 when every part is up; 503 naming the failing parts otherwise."""
    report = health_report()
    return JsonResponse(report, status=200 if not report["failing"] else 503)


@require_GET
def home(request: HttpRequest) -> HttpResponse:
    return render(request, "home.html")
