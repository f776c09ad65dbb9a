from django.contrib import admin
from django.urls import include, path, re_path

from mcp_server.api import McpView
from memoryadmin import views

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    re_path(r"^mcp/?$", McpView.as_view(), name="mcp"),
    path("admin/", admin.site.urls),
    path("", include("memoryadmin.web.urls")),
    path("", include("memoryadmin.api.urls")),
]

# JSON answers for unknown /api/ URLs; the web admin's own pages elsewhere.
handler400 = "memoryadmin.api.errors.bad_request"
handler403 = "memoryadmin.api.errors.forbidden"
handler404 = "memoryadmin.api.errors.not_found"
handler500 = "memoryadmin.api.errors.server_error"
