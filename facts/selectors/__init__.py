"""Reads of facts, always inside the tenant's scope; another tenant's id is simply not found.

One module per subject: `facts` (a fact, its history and neighbours, lists of facts), `entities`
(entities and the user dictionary), `conflicts` (conflicts between facts), `audit` (the audit
log), `retention` (what the policy would do now), `dashboard` (the web admin's counts); `paging`
holds what their lists share.
"""
