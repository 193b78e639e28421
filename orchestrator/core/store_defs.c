/* store_defs: the saga_definitions table (store_defs.h). */
#include "store_defs.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg.h"
#include "store_internal.h"

int store_def_put(PGconn *conn, const char *hex, const char *type, const char *body,
    const char *source, int32_t *id)
{
	/* a version stored by another orchestrator at the same moment: the
	 * conflict waits for its commit, then the SELECT of the second
	 * statement sees it */
	static const pg_stmt put = {"saga_def_put",
	    "WITH ins AS (INSERT INTO saga_definitions (version, type, body, source)"
	    " VALUES (decode($1, 'hex'), $2, $3, $4) ON CONFLICT (version) DO NOTHING"
	    " RETURNING id)"
	    " SELECT id FROM ins UNION ALL"
	    " SELECT id FROM saga_definitions WHERE version = decode($1, 'hex')",
	    true};
	const char *p[4] = {hex, type, body, source};
	PGresult *r = NULL;
	int rc = pg_exec_stmt(conn, &put, 4, p, &r);
	if (rc != 0)
		return rc;
	if (PQntuples(r) < 1) {
		/* inserted by a transaction not committed before this statement's
		 * snapshot and the conflict: read again */
		PQclear(r);
		static const pg_stmt get = {"saga_def_id",
		    "SELECT id FROM saga_definitions WHERE version = decode($1, 'hex')", false};
		rc = pg_exec_stmt(conn, &get, 1, p, &r);
		if (rc != 0)
			return rc;
		if (PQntuples(r) < 1) {
			PQclear(r);
			return PG_ERR_RETRY;
		}
	}
	*id = (int32_t)pg_get_i64(r, 0, 0);
	PQclear(r);
	return 0;
}

int store_def_get(PGconn *conn, int32_t id, char hex[65], char **body)
{
	static const pg_stmt get = {"saga_def_get",
	    "SELECT encode(version, 'hex'), body FROM saga_definitions WHERE id = $1::integer",
	    false};
	char ids[16];
	snprintf(ids, sizeof ids, "%" PRId32, id);
	const char *p[1] = {ids};
	PGresult *r = NULL;
	*body = NULL;
	int rc = pg_exec_stmt(conn, &get, 1, p, &r);
	if (rc != 0)
		return rc;
	if (PQntuples(r) < 1) {
		PQclear(r);
		return -ENOENT;
	}
	snprintf(hex, 65, "%s", PQgetvalue(r, 0, 0));
	*body = strdup(PQgetvalue(r, 0, 1));
	PQclear(r);
	return *body != NULL ? 0 : -ENOMEM;
}

int store_defs_needed(PGconn *conn, store_def_need *need, size_t cap, size_t *n)
{
	static const pg_stmt needed = {"saga_defs_needed",
	    "SELECT coalesce(def_id, 0), count(*), min(saga_id::text) FROM sagas"
	    " WHERE " STORE_UNFINISHED " GROUP BY 1 ORDER BY 1",
	    false};
	PGresult *r = NULL;
	int rc = pg_exec_stmt(conn, &needed, 0, NULL, &r);
	if (rc != 0)
		return rc;
	*n = (size_t)PQntuples(r);
	for (size_t i = 0; i < *n && i < cap; i++) {
		need[i].def_id = (int32_t)pg_get_i64(r, (int)i, 0);
		need[i].sagas = pg_get_i64(r, (int)i, 1);
		snprintf(need[i].saga_id, sizeof need[i].saga_id, "%s", PQgetvalue(r, (int)i, 2));
	}
	PQclear(r);
	return 0;
}
