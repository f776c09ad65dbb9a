from django.contrib import admin

from memoryadmin.models import ServiceHeartbeat


@admin.register(ServiceHeartbeat)
class ServiceHeartbeatAdmin(admin.ModelAdmin):
    list_display = ("name", "pid", "seen_at")
    readonly_fields = ("name", "pid", "seen_at")
