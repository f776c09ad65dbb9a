"""What binding the database session to a tenant credential would cost (a prototype, not built).

    python -m bench.session_binding [--requests 3000]

docs/database-roles.md proposes that row-level security key on a binding the runtime role
cannot write, instead of the setting `app.tenant_id` any session may set: an owner's function
checks an API key's secret (its stored hash is the sha256 of the secret, which SQL computes) and
records (backend pid -> tenant) in an unlogged table; the policies compare `tenant_id` with the
binding of `pg_backend_pid()`. This prototype makes the function and the table in a fresh
database (bench.harness) and measures, as the runtime role, the database backend's CPU time per
request (from /proc: the server must run on this machine), `--requests` times, best of three:
a transaction that only scopes itself by the setting, or by the binding; and one that also runs
five full-text queries with the setting's predicate, or with the binding's.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from bench.harness import bench_database, progress

BIND = """
CREATE OR REPLACE FUNCTION x_bind(token text) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE found bigint;
BEGIN
  PERFORM set_config('app.cross_tenant', 'on', true);
  SELECT k.tenant_id INTO found FROM tenants_apikey k
   WHERE k.prefix = split_part(token, '_', 2) AND k.revoked_at IS NULL
     AND k.secret_hash = encode(sha256(convert_to(token, 'UTF8')), 'hex');
  PERFORM set_config('app.cross_tenant', 'off', true);
  IF found IS NULL THEN
    RAISE EXCEPTION 'no such key';
  END IF;
  INSERT INTO x_binding VALUES (pg_backend_pid(), found)
    ON CONFLICT (pid) DO UPDATE SET tenant_id = EXCLUDED.tenant_id;
  RETURN found;
END $$"""
SETTING = "SELECT set_config('app.tenant_id', %s, true)"
MATCH = "search_vector @@ plainto_tsquery('simple', 'tea')"
BY_SETTING = (
    "SELECT count(*) FROM facts_fact WHERE "  # noqa: S608 - constants
    f"tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::bigint AND {MATCH}"
)
BY_BINDING = (
    "SELECT count(*) FROM facts_fact WHERE tenant_id = (SELECT b.tenant_id FROM x_binding b "  # noqa: S608
    f"WHERE b.pid = pg_backend_pid()) AND {MATCH}"
)


def _prototype() -> None:
    from django.db import connection, transaction

    from operations.roles import as_owner, runtime_credentials

    runtime = runtime_credentials()["USER"]
    with as_owner(), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("CREATE UNLOGGED TABLE x_binding (pid int PRIMARY KEY, tenant_id bigint)")
        cursor.execute(BIND)
        cursor.execute(f'GRANT EXECUTE ON FUNCTION x_bind(text) TO "{runtime}"')
        cursor.execute(f'GRANT SELECT ON x_binding TO "{runtime}"')


def run(requests: int) -> dict[str, Any]:
    from django.db import connection, transaction

    from facts.inputs import fact_draft
    from facts.services import fact_add
    from tenants.actors import Actor
    from tenants.inputs import tenant_draft
    from tenants.services import apikey_create, tenant_create

    actor = Actor.job("bench.session_binding")
    tenant = tenant_create(actor=actor, draft=tenant_draft({"slug": "bind", "name": "Bind"}))
    for i in range(50):
        fact_add(tenant=tenant, actor=actor, draft=fact_draft({"content": f"Tea note {i}"}))
    token = apikey_create(tenant=tenant, name="bench", actor=actor).token
    _prototype()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        stat = f"/proc/{cursor.fetchone()[0]}/stat"

    def used() -> float:
        fields = open(stat).read().rsplit(")", 1)[1].split()  # noqa: SIM115, PTH123
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def measure(label: str, statements: list[tuple[str, list[Any]]]) -> float:
        best = 1e9
        for _ in range(3):
            before = used()
            for _ in range(requests):
                with transaction.atomic(), connection.cursor() as cursor:
                    for sql, params in statements:
                        cursor.execute(sql, params)
            best = min(best, used() - before)
        progress(f"{label}: {1e3 * best / requests:.3f} ms of backend CPU per request")
        return 1e3 * best / requests

    scope = [(SETTING, [str(tenant.pk)])]
    bind = [("SELECT x_bind(%s)", [token])]
    figures = {
        "setting": measure("scope by the setting", scope),
        "binding": measure("bind by the key's secret", bind),
        "setting_5_queries": measure("setting, 5 queries", scope + [(BY_SETTING, [])] * 5),
        "binding_5_queries": measure("binding, 5 queries", bind + [(BY_BINDING, [])] * 5),
    }
    per_request = figures["binding"] - figures["setting"]
    per_query = (figures["binding_5_queries"] - figures["binding"]
                 - figures["setting_5_queries"] + figures["setting"]) / 5  # fmt: skip
    progress(f"binding: +{per_request:.3f} ms per request, +{per_query:.4f} ms per query")
    return figures | {"per_request_ms": per_request, "per_query_ms": per_query}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=3000)
    args = parser.parse_args()
    with bench_database():
        run(args.requests)


if __name__ == "__main__":
    main()
