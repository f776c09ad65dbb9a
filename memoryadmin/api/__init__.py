"""The REST API's shared parts: authentication, the tenant base viewset, errors, limits, schema.

Each app's endpoints live in its own `api.py`; `memoryadmin.api.urls` mounts them at /api/v1/.
"""
