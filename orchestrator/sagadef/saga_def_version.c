/* saga_def_version: the SHA-256 of one saga type's canonical serialisation:
 * its parsed values in a fixed order, one line per item, input mappings
 * sorted by request field (parse sorts them), so comments, key order and
 * YAML or JSON do not change it. Participants appear by their service (the
 * option naming their URLs is deployment, not definition). */
#include "saga_def_int.h"

#include <inttypes.h>
#include <mbedtls/md.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sd_add(sd_buf *b, const char *fmt, ...)
{
	for (int tries = 0; tries < 2 && !b->oom; tries++) {
		va_list ap;
		va_start(ap, fmt);
		int k = vsnprintf(b->p != NULL ? b->p + b->n : NULL, b->cap - b->n, fmt, ap);
		va_end(ap);
		if (k < 0) {
			b->oom = true;
			return;
		}
		if ((size_t)k < b->cap - b->n) {
			b->n += (size_t)k;
			return;
		}
		size_t cap = 2 * b->cap + (size_t)k + 1;
		char *np = realloc(b->p, cap);
		if (np == NULL) {
			b->oom = true;
			return;
		}
		b->p = np;
		b->cap = cap;
	}
}

static const char *sd_method_path(enum method_id id)
{
	return id == METHOD_NONE ? "-" : METHOD_PATH(id);
}

static void sd_step_text(sd_buf *b, const saga_defs *d, const saga_def_step *s)
{
	const saga_def_participant *p = saga_def_find_participant(d, s->participant);
	sd_add(b, "step %s\ngroup %s\nstate %s\ncompensating %s\nservice %s\n", s->name,
	    s->group != NULL ? s->group : "-", s->state,
	    s->compensating != NULL ? s->compensating : "-", p != NULL ? p->service : "-");
	sd_add(b, "command %s\ncompensation %s\nkind %s\n", sd_method_path(s->command),
	    sd_method_path(s->compensation), saga_def_kind_name(s->kind));
	sd_add(b, "deadline_ms %" PRId64 "\nretry %" PRId64 " %" PRId64 " %" PRId64 "\n",
	    s->deadline_ms, s->retry_base_ms, s->retry_cap_ms, s->attention_after);
	for (size_t i = 0; i < s->ninput; i++) {
		const saga_def_map *m = &s->input[i];
		if (m->from != NULL)
			sd_add(b, "input %s from %s\n", m->field, m->from);
		else
			sd_add(b, "input %s const %zu:%s\n", m->field, strlen(m->constant),
			    m->constant);
	}
}

int saga_def_version(
    const saga_defs *d, const saga_def_type *t, unsigned char out[32], char hex[65])
{
	sd_buf b = {0};
	sd_add(&b, "sagadef %d\ntype %s\ninput %s\ncompleted %s\ncancelled %s\n", SAGA_DEF_FORMAT,
	    t->name, t->input, t->completed, t->cancelled);
	for (size_t i = 0; i < t->nsteps; i++)
		sd_step_text(&b, d, &t->steps[i]);
	const mbedtls_md_info_t *md = mbedtls_md_info_from_type(MBEDTLS_MD_SHA256);
	int rc = (b.oom || md == NULL || mbedtls_md(md, (const unsigned char *)b.p, b.n, out) != 0)
	    ? -1
	    : 0;
	free(b.p);
	if (rc == 0 && hex != NULL) {
		for (int i = 0; i < 32; i++)
			snprintf(hex + 2 * i, 3, "%02x", out[i]);
	}
	return rc;
}
