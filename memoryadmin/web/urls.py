"""URLs of the web admin (namespace `web`): accounts, the tenant switcher, and every registered
tenant page under /t/<slug>/."""

from __future__ import annotations

from django.urls import path

from memoryadmin import views
from memoryadmin.api import (
    urls as _api_urls,  # noqa: F401 - registers the id and username converters
)
from memoryadmin.web.pages import tenant_urlpatterns

app_name = "web"

urlpatterns = [
    path("accounts/sign-in/", views.SignInView.as_view(), name="login"),
    path("accounts/sign-out/", views.SignOutView.as_view(), name="logout"),
    path("accounts/password/", views.PasswordChangeView.as_view(), name="password_change"),
    path(
        "accounts/password/done/",
        views.PasswordChangeDoneView.as_view(),
        name="password_change_done",
    ),
    path("accounts/language/", views.language, name="language"),
    path("tenants/new/", views.tenant_new, name="tenant_new"),
    *tenant_urlpatterns(),
]
