from django.contrib import admin
from django.urls import include, path, re_path

from mcp_server.api import McpView
from memoryadmin import views
from memoryadmin.metrics import metrics
from surfaces.pages import home

urlpatterns = [
    path("", home.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    path("metrics", metrics, name="metrics"),
    re_path(r"^mcp/?$", McpView.as_view(), name="mcp"),
    path("admin/", admin.site.urls),
    path("", include("surfaces.pages.urls")),
    path("", include("surfaces.api.urls")),
]

# JSON answers for unknown /api/ URLs; the web admin's own pages elsewhere.
handler400 = "surfaces.base.errors.bad_request"
handler403 = "surfaces.base.errors.forbidden"
handler404 = "surfaces.base.errors.not_found"
handler500 = "surfaces.base.errors.server_error"
