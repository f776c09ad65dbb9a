"""URLs of the web admin (namespace `web`): accounts, the tenant switcher, and every registered
tenant page under /t/<slug>/."""

from __future__ import annotations

from django.urls import path

from surfaces.base import converters as _converters  # noqa: F401 - registers id and username
from surfaces.base.pages import tenant_urlpatterns
from surfaces.pages import accounts
from surfaces.pages import home as views

app_name = "web"

urlpatterns = [
    path("accounts/sign-in/", accounts.SignInView.as_view(), name="login"),
    path("accounts/sign-in/code/", accounts.sign_in_code, name="login_code"),
    path("accounts/sign-out/", accounts.SignOutView.as_view(), name="logout"),
    path("accounts/sign-up/<str:token>/", accounts.sign_up, name="sign_up"),
    path(
        "accounts/invitations/<id:invitation_id>/accept",
        accounts.invitation_answer,
        {"answer": "accept"},
        name="invitation_accept",
    ),
    path(
        "accounts/invitations/<id:invitation_id>/decline",
        accounts.invitation_answer,
        {"answer": "decline"},
        name="invitation_decline",
    ),
    path("accounts/two-factor/", accounts.two_factor, name="two_factor"),
    path("accounts/password/", accounts.PasswordChangeView.as_view(), name="password_change"),
    path(
        "accounts/password/done/",
        accounts.PasswordChangeDoneView.as_view(),
        name="password_change_done",
    ),
    path("accounts/password/reset/", accounts.PasswordResetView.as_view(), name="password_reset"),
    path(
        "accounts/password/reset/sent/",
        accounts.PasswordResetDoneView.as_view(),
        name="password_reset_done",
    ),
    path(
        "accounts/password/reset/<uidb64>/<token>/",
        accounts.PasswordResetConfirmView.as_view(),
        name="password_reset_confirm",
    ),
    path(
        "accounts/password/reset/done/",
        accounts.PasswordResetCompleteView.as_view(),
        name="password_reset_complete",
    ),
    path("accounts/language/", views.language, name="language"),
    path("tenants/new/", views.tenant_new, name="tenant_new"),
    *tenant_urlpatterns(),
]
