/* mem_pkit_store: the participant kit's store (services/kit/pkit.h) in memory, for
 * the fuzz targets of every participant (their real service.c and
 * handlers.c over no database). The service's pure decide function
 * decides, in order, as in the real store; records and rows live in small
 * arrays, reset with each store. Rows "A1" (10 units) and "ali" (500.00)
 * exist from the start. Only for fuzzing: no locking, no fast path, no fault
 * points; pkit_store_ready says the database is away, so the services' own
 * statements answer UNAVAILABLE unless they have an in-memory version
 * (mem_store.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mem_store.h"
#include "pg.h"
#include "pkit.h"

struct pkit_store {
	const pkit_service *svc;
	struct {
		char saga_id[VALID_UUID_LEN + 1];
		pkit_record rec;
	} recs[MEM_MAX];
	size_t nrec;
	struct {
		char key[VALID_NAME_MAX + 1];
		int64_t value;
	} rows[MEM_MAX];
	size_t nrow;
};

int pkit_migrate(const pkit_service *svc, const char *conninfo, int64_t wait_ms)
{
	(void)svc;
	(void)conninfo;
	(void)wait_ms;
	return 0;
}

int pkit_store_open(pkit_store **out, const pkit_service *svc, const char *conninfo,
    int64_t wait_ms, valcache *cache)
{
	(void)conninfo;
	(void)wait_ms;
	(void)cache;
	pkit_store *s = calloc(1, sizeof *s);
	if (s == NULL)
		return -ENOMEM;
	s->svc = svc;
	*mem_row(s, "A1", true) = 10;
	*mem_row(s, "ali", true) = 50000;
	*out = s;
	return 0;
}

void pkit_store_close(pkit_store *s)
{
	free(s);
}

void pkit_store_fast_counts(const pkit_store *s, uint64_t *fast, uint64_t *fell_back)
{
	(void)s;
	*fast = *fell_back = 0;
}

int pkit_store_ready(pkit_store *s)
{
	(void)s;
	return PG_ERR_CONNECTION;
}

bool pkit_store_may_rerun(pkit_store *s, int rc, bool *rerun_done)
{
	(void)s;
	(void)rc;
	(void)rerun_done;
	return false;
}

PGconn *pkit_store_conn(pkit_store *s)
{
	(void)s;
	return NULL;
}

void pkit_store_learn(pkit_store *s, const char *key, int64_t value)
{
	(void)s;
	(void)key;
	(void)value;
}

int64_t *mem_row(pkit_store *s, const char *key, bool create)
{
	for (size_t i = 0; i < s->nrow; i++)
		if (strcmp(s->rows[i].key, key) == 0)
			return &s->rows[i].value;
	if (!create || s->nrow == MEM_MAX)
		return NULL;
	size_t i = s->nrow++;
	snprintf(s->rows[i].key, sizeof s->rows[i].key, "%s", key);
	s->rows[i].value = 0;
	return &s->rows[i].value;
}

size_t mem_rows(pkit_store *s, const char **key, int64_t *value, size_t i)
{
	if (i < s->nrow) {
		*key = s->rows[i].key;
		*value = s->rows[i].value;
	}
	return s->nrow;
}

size_t mem_records(pkit_store *s, const char **saga_id, const pkit_record **rec, size_t i)
{
	if (i < s->nrec) {
		*saga_id = s->recs[i].saga_id;
		*rec = &s->recs[i].rec;
	}
	return s->nrec;
}

/* mem_apply_one decides and applies one command. */
static int mem_apply_one(pkit_store *s, pkit_cmd *c)
{
	size_t r = 0;
	while (r < s->nrec && strcmp(s->recs[r].saga_id, c->saga_id) != 0)
		r++;
	if (r == s->nrec) {
		if (s->nrec == MEM_MAX)
			return PG_ERR_OTHER;
		snprintf(s->recs[r].saga_id, sizeof s->recs[r].saga_id, "%s", c->saga_id);
		memset(&s->recs[r].rec, 0, sizeof s->recs[r].rec);
	}
	bool rows = s->svc->rows != NULL;
	int64_t *v = rows ? mem_row(s, c->args.text[0], false) : NULL;
	pkit_row row = {.exists = v != NULL, .value = v != NULL ? *v : 0};
	pkit_decide(s->svc, &s->recs[r].rec, rows ? &row : NULL, &c->args, &c->out);
	if (c->out.write_record) {
		s->recs[r].rec = c->out.record;
		if (r == s->nrec)
			s->nrec++;
	}
	if (c->out.write_row && v != NULL)
		*v = c->out.value;
	c->value = v != NULL ? *v : 0;
	return 0;
}

int pkit_store_apply(pkit_store *s, pkit_cmd *cmds, size_t n)
{
	if (n == 0 || n > RPC_BATCH_MAX)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		int rc = mem_apply_one(s, &cmds[i]);
		if (rc != 0)
			return rc;
	}
	return 0;
}

int pkit_store_snapshot(pkit_store *s, const char *const *sql, int n, int32_t limit, PGresult **res)
{
	(void)s;
	(void)sql;
	(void)limit;
	for (int i = 0; i < n; i++)
		res[i] = NULL;
	return PG_ERR_CONNECTION; /* the database is away */
}
