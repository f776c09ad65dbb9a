"""Writes of facts: add, update, remove, restore, purge, feedback; each audited.

Every function takes the tenant first and runs inside `tenant_scope(tenant)`, so the ORM guard
and PostgreSQL's row-level security both hold. Input comes parsed: `facts.inputs` turns every
surface's raw input into the typed values (FactDraft, FactChanges, ...) these functions take.

One module per kind of write: `add` (one fact, or many in a transaction), `change` (update,
remove, restore, purge, the bulk actions), `feedback` (helpful or not, retrievals counted),
`imports` (JSON Lines); `rows` holds what they share (the content hash, the bulk insert, the
after-commit messages). The names below are the ones the surfaces and tasks call.
"""

from facts.services.add import AddResult, fact_add, facts_add_many
from facts.services.change import (
    BulkResult,
    fact_get_for_update,
    fact_purge,
    fact_remove,
    fact_restore,
    fact_update,
    facts_bulk_remove,
    facts_bulk_tag,
)
from facts.services.feedback import FeedbackResult, fact_feedback, fact_record_retrievals
from facts.services.imports import MAX_IMPORT_LINES, ImportLine, ImportReport, fact_import
from facts.services.rows import content_hash

__all__ = [
    "MAX_IMPORT_LINES",
    "AddResult",
    "BulkResult",
    "FeedbackResult",
    "ImportLine",
    "ImportReport",
    "content_hash",
    "fact_add",
    "fact_feedback",
    "fact_get_for_update",
    "fact_import",
    "fact_purge",
    "fact_record_retrievals",
    "fact_remove",
    "fact_restore",
    "fact_update",
    "facts_add_many",
    "facts_bulk_remove",
    "facts_bulk_tag",
]
