#include "pgtest.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

PGconn *pgtest_connect(const char *db)
{
	const char *port = getenv("PG_PORT");
	assert_non_null(port);
	char ci[256];
	snprintf(ci, sizeof ci, "host=127.0.0.1 port=%s user=postgres dbname=%s", port, db);
	PGconn *c = PQconnectdb(ci);
	if (PQstatus(c) != CONNECTION_OK)
		fail_msg("connect %s: %s", db, PQerrorMessage(c));
	return c;
}

void pgtest_exec(PGconn *c, const char *sql)
{
	PGresult *r = PQexec(c, sql);
	ExecStatusType st = PQresultStatus(r);
	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
		fail_msg("%s: %s", sql, PQerrorMessage(c));
	PQclear(r);
}

PGconn *pgtest_fresh_db(const char *db)
{
	char sql[160];
	PGconn *admin = pgtest_connect("postgres");
	snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s", db);
	pgtest_exec(admin, sql);
	snprintf(sql, sizeof sql, "CREATE DATABASE %s", db);
	pgtest_exec(admin, sql);
	PQfinish(admin);
	return pgtest_connect(db);
}

const char *pgtest_text(PGconn *c, const char *sql)
{
	static char out[256];
	PGresult *r = PQexec(c, sql);
	if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1)
		fail_msg("%s: %s", sql, PQerrorMessage(c));
	snprintf(out, sizeof out, "%s", PQgetvalue(r, 0, 0));
	PQclear(r);
	return out;
}
