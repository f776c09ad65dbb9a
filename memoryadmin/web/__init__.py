"""The web admin: server-rendered pages for team admins and auditors (see `pages`)."""
