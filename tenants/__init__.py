"""Tenants, memberships, API keys and retention policies; the tenant scope."""
