from django.contrib import admin

from operations.models import ServiceHeartbeat
from surfaces.pages.accounts import admin_has_permission, admin_login

# /admin/ signs in through the web admin's sign-in (throttled, with the second step), and lets
# in someone with two-factor sign-in only once they gave a code.
admin.site.login = admin_login  # type: ignore[method-assign]
admin.site.has_permission = admin_has_permission  # type: ignore[method-assign]


@admin.register(ServiceHeartbeat)
class ServiceHeartbeatAdmin(admin.ModelAdmin):
    list_display = ("name", "pid", "seen_at")
    readonly_fields = ("name", "pid", "seen_at")
