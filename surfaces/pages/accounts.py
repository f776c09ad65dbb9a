"""People's own account pages: sign-in (with the optional second step), two-factor set-up,
sign-up from an invitation, password reset from a link.

Sign-in throttling is django-axes' (settings "sign-in throttling"); the second step is a TOTP
code from django-otp's device, asked for only of people who set one up. Django's own /admin/
sends people here to sign in, so it has the same throttling and second step.
"""

from __future__ import annotations

import time
from typing import Any, Literal, cast

import segno
from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model, login
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import AbstractBaseUser
from django.contrib.auth.views import redirect_to_login
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.http.response import HttpResponseBase
from django.shortcuts import redirect, render
from django.urls import reverse, reverse_lazy
from django.utils.http import url_has_allowed_host_and_scheme, urlencode
from django.utils.safestring import mark_safe
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_http_methods
from django_otp import login as otp_login
from django_otp.plugins.otp_totp.models import TOTPDevice

from operations.services import user_language_get
from surfaces.base.pages import tenant_url
from surfaces.pages.tenant_forms import role_label
from tenants.errors import InvalidInput, NotFound
from tenants.invitations import (
    Joined,
    invitation_accept,
    invitation_accept_as,
    invitation_decline,
    invitation_find,
)
from tenants.models import Invitation

_PENDING = "mnemosyne_2fa_pending"
_PENDING_SECONDS = 300


def language_cookie(response: HttpResponse, language: str) -> HttpResponse:
    """Django's LocaleMiddleware reads this cookie first, the browser's Accept-Language next."""
    if language:
        response.set_cookie(
            settings.LANGUAGE_COOKIE_NAME,
            language,
            max_age=settings.LANGUAGE_COOKIE_AGE,
            samesite=cast(Literal["Lax", "Strict", "None"], settings.LANGUAGE_COOKIE_SAMESITE),
            secure=settings.LANGUAGE_COOKIE_SECURE,
            httponly=settings.LANGUAGE_COOKIE_HTTPONLY,
        )
    else:
        response.delete_cookie(settings.LANGUAGE_COOKIE_NAME)
    return response


def confirmed_device(user: Any) -> TOTPDevice | None:
    return TOTPDevice.objects.devices_for_user(user, confirmed=True).first()


def _safe_next(request: HttpRequest, target: str) -> str:
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return reverse(settings.LOGIN_REDIRECT_URL)


class SignInView(auth_views.LoginView):
    """Username and password; then, for people with two-factor sign-in, a code."""

    template_name = "web/accounts/sign_in.html"
    redirect_authenticated_user = True

    def form_valid(self, form: Any) -> HttpResponse:
        user = form.get_user()
        if confirmed_device(user) is not None:
            # The password was right; the session is not signed in until the code is.
            self.request.session[_PENDING] = {
                "user": user.pk,
                "backend": user.backend,
                "next": self.get_redirect_url(),
                "at": time.time(),
            }
            return redirect("web:login_code")
        response = super().form_valid(form)
        # The person's own language, wherever they sign in; none saved: the browser's.
        return language_cookie(response, user_language_get(user=user))


class CodeForm(forms.Form):
    code = forms.CharField(
        label=gettext_lazy("Code from your authenticator app"),
        max_length=8,
        widget=forms.TextInput(attrs={"autocomplete": "one-time-code", "inputmode": "numeric"}),
    )


@require_http_methods(["GET", "POST"])
def sign_in_code(request: HttpRequest) -> HttpResponse:
    """The second step: a TOTP code of the person who just gave the right password."""
    pending = request.session.get(_PENDING)
    if not pending or time.time() - pending.get("at", 0) > _PENDING_SECONDS:
        request.session.pop(_PENDING, None)
        messages.error(request, _("Sign in again: the code was not given in time."))
        return redirect("web:login")
    user = get_user_model().objects.filter(pk=pending["user"], is_active=True).first()
    device = confirmed_device(user) if user else None
    if user is None or device is None:
        request.session.pop(_PENDING, None)
        return redirect("web:login")
    form = CodeForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        # django-otp throttles wrong codes itself (each failure doubles the wait).
        allowed, _why = device.verify_is_allowed()
        if not allowed:
            form.add_error("code", _("Too many wrong codes: wait a few seconds, then try again."))
        elif device.verify_token(form.cleaned_data["code"].strip()):
            request.session.pop(_PENDING, None)
            login(request, user, backend=pending["backend"])
            otp_login(request, device)
            response = HttpResponseRedirect(_safe_next(request, pending.get("next", "")))
            return language_cookie(response, user_language_get(user=user))
        else:
            form.add_error("code", _("This code is wrong or used up; try the next one."))
    status = 400 if form.errors else 200
    return render(request, "web/accounts/sign_in_code.html", {"form": form}, status=status)


class SignOutView(auth_views.LogoutView):
    next_page = cast(str, reverse_lazy("web:login"))


class PasswordChangeView(auth_views.PasswordChangeView):
    template_name = "web/accounts/password_change.html"
    success_url = reverse_lazy("web:password_change_done")


class PasswordChangeDoneView(auth_views.PasswordChangeDoneView):
    template_name = "web/accounts/password_change_done.html"


class PasswordResetView(auth_views.PasswordResetView):
    """Ask for a reset link by e-mail (only when mail is configured)."""

    template_name = "web/accounts/password_reset.html"
    email_template_name = "web/accounts/password_reset_email.txt"
    subject_template_name = "web/accounts/password_reset_subject.txt"
    success_url = reverse_lazy("web:password_reset_done")

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if not settings.MNEMOSYNE_MAIL_ENABLED:
            return render(request, "web/accounts/password_reset.html", {"no_mail": True})
        return super().dispatch(request, *args, **kwargs)


class PasswordResetDoneView(auth_views.PasswordResetDoneView):
    template_name = "web/accounts/password_reset_done.html"


class PasswordResetConfirmView(auth_views.PasswordResetConfirmView):
    """The page a reset link opens: a new password, once."""

    template_name = "web/accounts/password_reset_confirm.html"
    success_url = reverse_lazy("web:password_reset_complete")


class PasswordResetCompleteView(auth_views.PasswordResetCompleteView):
    template_name = "web/accounts/password_reset_complete.html"


# -- sign-up from an invitation -------------------------------------------------------------


class SignUpForm(forms.Form):
    username = forms.CharField(label=gettext_lazy("Username"), max_length=150)
    email = forms.EmailField(label=gettext_lazy("E-mail (optional)"), required=False)
    password1 = forms.CharField(
        label=gettext_lazy("Password"),
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
    )
    password2 = forms.CharField(
        label=gettext_lazy("Password again"),
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
    )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("password1") and data.get("password1") != data.get("password2"):
            self.add_error("password2", _("The two passwords differ."))
        return data


@require_http_methods(["GET", "POST"])
def sign_up(request: HttpRequest, token: str) -> HttpResponse:
    """Make an account from a one-time invitation link; then the person signs in. Someone signed
    in joins with the account they have instead."""
    try:
        invitation = invitation_find(token=token)
    except NotFound:
        return _invalid_invitation(request)
    if invitation.username:  # addressed to an account: accepted from its own page
        return _invalid_invitation(request)
    if request.user.is_authenticated:
        return _join_as_signed_in(request, token, invitation)
    form = SignUpForm(request.POST or None, initial={"email": invitation.email})
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            invitation_accept(
                token=token,
                username=data["username"],
                password=data["password1"],
                email=data["email"] or "",
            )
        except NotFound:
            return _invalid_invitation(request)
        except InvalidInput as error:
            form.add_error(error.field if error.field in form.fields else None, error.message)
        else:
            messages.success(
                request,
                _("Your account %(name)s is ready: sign in with it.") % {"name": data["username"]},
            )
            return redirect("web:login")
    context = {
        "form": form,
        "invitation": invitation,
        "tenant_name": invitation.tenant.name,
        "sign_in_url": f"{reverse('web:login')}?{urlencode({'next': request.path})}",
    }
    return render(request, "web/accounts/sign_up.html", context, status=400 if form.errors else 200)


def _invalid_invitation(request: HttpRequest) -> HttpResponse:
    return render(request, "web/accounts/sign_up.html", {"invalid": True}, status=404)


def _joined(request: HttpRequest, joined: Joined) -> HttpResponse:
    tenant = joined.membership.tenant
    if joined.new:
        messages.success(
            request,
            _("You joined %(tenant)s as %(role)s.")
            % {"tenant": tenant.name, "role": role_label(joined.membership.role)},
        )
    else:
        messages.info(
            request, _("You were a member of %(tenant)s already.") % {"tenant": tenant.name}
        )
    return redirect(tenant_url(tenant, "dashboard"))


def _join_as_signed_in(request: HttpRequest, token: str, invitation: Invitation) -> HttpResponse:
    """A sign-up link opened by someone signed in: join with this account, on a button press."""
    if request.method == "POST":
        try:
            joined = invitation_accept_as(user=cast(AbstractBaseUser, request.user), token=token)
        except NotFound:
            return _invalid_invitation(request)
        return _joined(request, joined)
    context = {"invitation": invitation, "tenant_name": invitation.tenant.name, "join": True}
    return render(request, "web/accounts/sign_up.html", context)


@login_required
@require_http_methods(["POST"])
def invitation_answer(request: HttpRequest, invitation_id: int, answer: str) -> HttpResponse:
    """Accept or decline an invitation addressed to the signed-in account (listed on the home
    page); any other invitation is a 404."""
    user = cast(AbstractBaseUser, request.user)
    if answer == "accept":
        try:
            joined = invitation_accept_as(user=user, invitation_id=invitation_id)
        except NotFound:
            raise Http404 from None
        return _joined(request, joined)
    try:
        declined = invitation_decline(user=user, invitation_id=invitation_id)
    except NotFound:
        raise Http404 from None
    messages.info(
        request,
        _("You declined the invitation to %(tenant)s.") % {"tenant": declined.tenant.name},
    )
    return redirect("home")


# -- two-factor set-up ------------------------------------------------------------------------


def _qr_svg(url: str) -> str:
    return segno.make(url, error="m").svg_inline(scale=4, dark="#1d2330", light="#ffffff")


@login_required
@require_http_methods(["GET", "POST"])
def two_factor(request: HttpRequest) -> HttpResponse:
    """Turn two-factor sign-in on (scan, then confirm a code) or off (with a code)."""
    user = request.user
    confirmed = confirmed_device(user)
    form = CodeForm(request.POST or None)
    if confirmed is not None:
        if request.method == "POST" and form.is_valid():
            if confirmed.verify_token(form.cleaned_data["code"].strip()):
                TOTPDevice.objects.devices_for_user(user).delete()
                messages.success(request, _("Two-factor sign-in is off."))
                return redirect("web:two_factor")
            form.add_error("code", _("This code is wrong or used up; try the next one."))
        return render(
            request,
            "web/accounts/two_factor.html",
            {"enabled": True, "form": form},
            status=400 if form.errors else 200,
        )
    device = TOTPDevice.objects.devices_for_user(user, confirmed=False).first()
    if device is None:
        device = TOTPDevice.objects.create(user=user, name="authenticator", confirmed=False)
    if request.method == "POST" and form.is_valid():
        if device.verify_token(form.cleaned_data["code"].strip()):
            device.confirmed = True
            device.save(update_fields=["confirmed"])
            otp_login(request, device)
            messages.success(
                request, _("Two-factor sign-in is on: from now on you sign in with a code too.")
            )
            return redirect("web:two_factor")
        form.add_error("code", _("This code is wrong; check the clock of your phone."))
    from base64 import b32encode

    context = {
        "enabled": False,
        "form": form,
        "secret": b32encode(device.bin_key).decode(),
        "qr": mark_safe(_qr_svg(device.config_url)),  # noqa: S308 - segno's own SVG markup
    }
    return render(
        request, "web/accounts/two_factor.html", context, status=400 if form.errors else 200
    )


def admin_login(request: HttpRequest, extra_context: Any = None) -> HttpResponse:
    """Django's /admin/login/ signs in here: one sign-in, one throttle, one second step."""
    target = request.GET.get("next") or reverse("admin:index")
    if request.user.is_authenticated:
        return HttpResponseRedirect(_safe_next(request, target))
    return redirect_to_login(target, reverse("web:login"))


def admin_has_permission(request: HttpRequest) -> bool:
    """Staff into /admin/; someone with two-factor sign-in only after giving a code."""
    user = request.user
    if not (user.is_active and user.is_staff):
        return False
    # django_otp's middleware gives the user is_verified().
    return bool(user.is_verified()) or confirmed_device(user) is None  # type: ignore[attr-defined]


def lockout_response(
    request: HttpRequest, original_response: Any = None, credentials: Any = None
) -> HttpResponse:
    """django-axes' answer to a locked-out sign-in: 429 and a page that says how long."""
    minutes = round(settings.AXES_COOLOFF_TIME * 60)
    context = {"failure_limit": settings.AXES_FAILURE_LIMIT, "cooloff_minutes": minutes}
    response = render(request, "web/accounts/locked.html", context, status=429)
    response["Retry-After"] = str(minutes * 60)
    return response
