"""What operators see: Prometheus metrics and the log context (request id, tenant).

This package sits below every app (the import contracts keep it so): the apps record into it,
and the project package (memoryadmin) serves `/metrics`, sets the request's context and wires
Celery's signals. It never imports the apps, and no metric carries a label an outsider or a
tenant chooses: routes are URL pattern names, never paths; no tenant id or slug anywhere.
"""
