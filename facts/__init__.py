"""Facts, entities, feedback, the audit trail and conflicts: models, services, selectors, tasks."""
