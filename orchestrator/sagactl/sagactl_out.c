/* sagactl_out.c: how sagactl prints: psql-like tables, one-line JSON, money,
 * times and the names of status values (sagactl.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "sagactl.h"

#include "sagas/v1/health.pb-c.h"

/* ---- formats and names ---- */

/* ctl_iso_ms writes ms since the epoch as ISO-8601 UTC with milliseconds,
 * or "-" for 0. Returns buf (at least 32 bytes). */
char *ctl_iso_ms(int64_t ms, char *buf, size_t len)
{
	if (ms <= 0) {
		snprintf(buf, len, "-");
		return buf;
	}
	time_t sec = (time_t)(ms / 1000);
	struct tm tm;
	if (gmtime_r(&sec, &tm) == NULL) {
		snprintf(buf, len, "%" PRId64, ms);
		return buf;
	}
	char when[24];
	strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%03dZ", when, (int)(ms % 1000));
	return buf;
}

/* ctl_money formats minor units; a small wrapper for readability. */
char *ctl_money(int64_t minor, char *buf)
{
	return money_format(minor, buf, 32);
}

const char *ctl_charge_status_name(int s)
{
	switch (s) {
	case SAGAS__V1__CHARGE_STATUS__CHARGE_STATUS_CHARGED:
		return "CHARGED";
	case SAGAS__V1__CHARGE_STATUS__CHARGE_STATUS_DECLINED:
		return "DECLINED";
	case SAGAS__V1__CHARGE_STATUS__CHARGE_STATUS_UNKNOWN_ACCOUNT:
		return "UNKNOWN_ACCOUNT";
	case SAGAS__V1__CHARGE_STATUS__CHARGE_STATUS_REFUNDED:
		return "REFUNDED";
	case SAGAS__V1__CHARGE_STATUS__CHARGE_STATUS_TOMBSTONE:
		return "TOMBSTONE";
	default:
		return "UNSPECIFIED";
	}
}

const char *ctl_reservation_status_name(int s)
{
	switch (s) {
	case SAGAS__V1__RESERVATION_STATUS__RESERVATION_STATUS_RESERVED:
		return "RESERVED";
	case SAGAS__V1__RESERVATION_STATUS__RESERVATION_STATUS_OUT_OF_STOCK:
		return "OUT_OF_STOCK";
	case SAGAS__V1__RESERVATION_STATUS__RESERVATION_STATUS_UNKNOWN_SKU:
		return "UNKNOWN_SKU";
	case SAGAS__V1__RESERVATION_STATUS__RESERVATION_STATUS_RELEASED:
		return "RELEASED";
	case SAGAS__V1__RESERVATION_STATUS__RESERVATION_STATUS_TOMBSTONE:
		return "TOMBSTONE";
	default:
		return "UNSPECIFIED";
	}
}

const char *ctl_shipment_status_name(int s)
{
	switch (s) {
	case SAGAS__V1__SHIPMENT_STATUS__SHIPMENT_STATUS_SHIPPED:
		return "SHIPPED";
	default:
		return "UNSPECIFIED";
	}
}

/* ctl_serving_status_name names a Health ServingStatus ("SERVING"). */
const char *ctl_serving_status_name(int s)
{
	switch (s) {
	case SAGAS__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING_STATUS_SERVING:
		return "SERVING";
	case SAGAS__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING_STATUS_NOT_SERVING:
		return "NOT_SERVING";
	default:
		return "UNSPECIFIED";
	}
}

/* ---- escaping ---- */

/* ctl_esc_dup returns a malloc'd valid_escape of `s`, or NULL. */
static char *ctl_esc_dup(const char *s)
{
	size_t n = valid_escape(NULL, 0, s) + 1;
	char *e = malloc(n);
	if (e != NULL)
		valid_escape(e, n, s);
	return e;
}

const char *ctl_esc(const char *s)
{
	/* sagactl has one thread; the ring lives until exit */
	static char *ring[CTL_ESC_RING];
	static size_t next;
	size_t i = next++ % CTL_ESC_RING;
	free(ring[i]);
	ring[i] = ctl_esc_dup(s ? s : "");
	return ring[i] ? ring[i] : "?";
}

/* ---- tables (psql-like) ---- */

/* ctl_table_row appends one row of t->ncols strings (copied). */
void ctl_table_row(ctl_table *t, ...)
{
	if (t->oom)
		return;
	if (t->nrows == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 16;
		char **cells = realloc(t->cells, cap * t->ncols * sizeof *cells);
		if (cells == NULL) {
			t->oom = true;
			return;
		}
		t->cells = cells;
		t->cap = cap;
	}
	char **row = t->cells + t->nrows * t->ncols;
	va_list ap;
	va_start(ap, t);
	for (size_t i = 0; i < t->ncols; i++) {
		const char *s = va_arg(ap, const char *);
		/* every cell escaped: names, reasons, ids came from a server */
		row[i] = ctl_esc_dup(s ? s : "");
		if (row[i] == NULL)
			t->oom = true;
	}
	va_end(ap);
	t->nrows++;
}

/* ctl_width counts the code points of UTF-8 text (its width in a terminal,
 * near enough for names and numbers). */
static size_t ctl_width(const char *s)
{
	size_t n = 0;
	for (; *s != '\0'; s++)
		if (((unsigned char)*s & 0xc0) != 0x80)
			n++;
	return n;
}

static void ctl_pad(FILE *out, size_t n)
{
	while (n-- > 0)
		fputc(' ', out);
}

static void ctl_cell(FILE *out, const char *s, size_t width, char align, bool last)
{
	size_t w = ctl_width(s);
	size_t pad = width > w ? width - w : 0;
	fputc(' ', out);
	if (align == 'r')
		ctl_pad(out, pad);
	fputs(s, out);
	if (align != 'r' && !last)
		ctl_pad(out, pad);
	fputs(last ? "\n" : " |", out);
}

/* ctl_table_print writes the table as psql does, with a "(N rows)" footer.
 * Returns 0, or -ENOMEM when a row could not be stored. */
static int ctl_table_print(const ctl_table *t, FILE *out)
{
	if (t->oom)
		return -ENOMEM;
	size_t width[16] = {0};
	if (t->ncols > CTL_NELEM(width))
		return -EINVAL;
	for (size_t c = 0; c < t->ncols; c++) {
		width[c] = ctl_width(t->head[c]);
		for (size_t r = 0; r < t->nrows; r++) {
			size_t w = ctl_width(t->cells[r * t->ncols + c]);
			if (w > width[c])
				width[c] = w;
		}
	}
	for (size_t c = 0; c < t->ncols; c++)
		ctl_cell(out, t->head[c], width[c], 'l', c + 1 == t->ncols);
	for (size_t c = 0; c < t->ncols; c++) {
		for (size_t i = 0; i < width[c] + 2; i++)
			fputc('-', out);
		if (c + 1 < t->ncols)
			fputc('+', out);
	}
	fputc('\n', out);
	for (size_t r = 0; r < t->nrows; r++)
		for (size_t c = 0; c < t->ncols; c++)
			ctl_cell(out, t->cells[r * t->ncols + c], width[c], t->align[c],
			    c + 1 == t->ncols);
	fprintf(out, "(%zu %s)\n", t->nrows, t->nrows == 1 ? "row" : "rows");
	return 0;
}

void ctl_table_fini(ctl_table *t)
{
	for (size_t i = 0; i < t->nrows * t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	t->cells = NULL;
	t->nrows = t->cap = 0;
}

/* ctl_table_done prints then frees a table; returns an exit code. */
int ctl_table_done(ctl_table *t)
{
	int rc = ctl_table_print(t, stdout);
	ctl_table_fini(t);
	if (rc != 0)
		return ctl_error("could not format the table: out of memory");
	return CTL_EXIT_OK;
}

/* ---- JSON ---- */

/* ctl_json_print writes `j` on one line to stdout and drops the reference.
 * A NULL `j` (a failed json_pack) is an error. Returns an exit code. */
int ctl_json_print(json_t *j)
{
	if (j == NULL)
		return ctl_error("could not build the JSON output (out of memory or bad UTF-8 "
		                 "in a reply)");
	int rc = json_dumpf(j, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(j);
	if (rc != 0)
		return ctl_error("could not write the JSON output");
	fputc('\n', stdout);
	return CTL_EXIT_OK;
}

/* ctl_json_append appends `v` (stolen) to array `a`; false when either is
 * NULL or the append failed. */
bool ctl_json_append(json_t *a, json_t *v)
{
	if (a == NULL || v == NULL) {
		json_decref(v);
		return false;
	}
	return json_array_append_new(a, v) == 0;
}

const char *ctl_state(const Sagas__V1__Saga *s)
{
	if (s->state_name != NULL && s->state_name[0] != '\0')
		return s->state_name;
	return saga_state_name((saga_state)s->state);
}

const char *ctl_hist_state(const Sagas__V1__HistoryEntry *e, bool from)
{
	const char *name = from ? e->from_state_name : e->to_state_name;
	if (name != NULL && name[0] != '\0')
		return name;
	Sagas__V1__SagaState st = from ? e->from_state : e->to_state;
	if (from && st == SAGAS__V1__SAGA_STATE__SAGA_STATE_UNSPECIFIED)
		return NULL; /* the start has no state before it */
	return saga_state_name((saga_state)st);
}

/* A saga with its order; the shape shared by start, get, list and report. */
json_t *ctl_saga_json(const Sagas__V1__Saga *s)
{
	char amount[32], created[32], updated[32];
	const Sagas__V1__Order *o = s->order;
	json_t *j
	    = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:i, s:I, s:s, s:b, s:I, s:i, s:I, s:s, "
	                "s:I, s:s, s:I, s:I, s:I, s:s}",
	        "saga_id", s->saga_id, "type", s->type != NULL && s->type[0] ? s->type : "order",
	        "state", ctl_state(s), "reason", s->reason, "customer", o->customer, "sku", o->sku,
	        "qty", (int)o->qty, "amount_minor", (json_int_t)o->amount, "amount",
	        ctl_money(o->amount, amount), "attention", (int)s->attention, "version",
	        (json_int_t)s->version, "attempts", (int)s->attempts, "created_unix_ms",
	        (json_int_t)s->created_unix_ms, "created_at",
	        ctl_iso_ms(s->created_unix_ms, created, sizeof created), "updated_unix_ms",
	        (json_int_t)s->updated_unix_ms, "updated_at",
	        ctl_iso_ms(s->updated_unix_ms, updated, sizeof updated), "step_deadline_unix_ms",
	        (json_int_t)s->step_deadline_unix_ms, "next_attempt_unix_ms",
	        (json_int_t)s->next_attempt_unix_ms, "epoch", (json_int_t)s->epoch, "lease_owner",
	        s->lease_owner);
	/* a type's own input (GetSaga and ListSagas give its JSON) */
	if (j != NULL && s->input_type[0] != '\0')
		json_object_set_new(j, "input_type", json_string(s->input_type));
	json_t *in = s->input_json[0] != '\0' ? json_loads(s->input_json, 0, NULL) : NULL;
	if (j != NULL && in != NULL)
		json_object_set_new(j, "input", in);
	else
		json_decref(in);
	return j;
}

/* ctl_truncated_note says that a listing shows only the newest rows. */
void ctl_truncated_note(bool truncated, size_t shown)
{
	if (truncated)
		printf("(showing the newest %zu of more)\n", shown);
}

/* ---- sagas ---- */

/* ctl_saga_print prints one saga as aligned lines; `created` is -1 (no
 * created line: get, wait, retry) or the ctl_key_use of a StartSaga. */
void ctl_saga_print(const Sagas__V1__Saga *s, int created)
{
	char amount[32], t1[32], t2[32], t3[32], t4[32];
	const Sagas__V1__Order *o = s->order;
	printf("saga_id       %s\n", ctl_esc(s->saga_id));
	if (s->type != NULL && s->type[0] != '\0' && strcmp(s->type, "order") != 0)
		printf("type          %s\n", ctl_esc(s->type));
	printf("state         %s\n", ctl_esc(ctl_state(s)));
	printf("reason        %s\n", s->reason[0] ? ctl_esc(s->reason) : "-");
	if (s->input.len > 0) {
		/* a type's own input: its customer (when it has one) and its JSON
		 * (GetSaga and ListSagas give it) */
		if (o->customer[0] != '\0')
			printf("customer      %s\n", ctl_esc(o->customer));
		if (s->input_json[0] != '\0')
			printf("input         %s %s\n", ctl_esc(s->input_type),
			    ctl_esc(s->input_json));
		else
			printf("input         %zu bytes ('sagactl get %s' shows it)\n",
			    s->input.len, ctl_esc(s->saga_id));
	} else {
		printf("customer      %s\n", ctl_esc(o->customer));
		printf("sku           %s\n", ctl_esc(o->sku));
		printf("qty           %d\n", (int)o->qty);
		printf("amount        %s\n", ctl_money(o->amount, amount));
	}
	printf("attention     %s\n", s->attention ? "yes" : "no");
	printf("version       %" PRId64 "\n", (int64_t)s->version);
	printf("attempts      %d\n", (int)s->attempts);
	printf("created_at    %s\n", ctl_iso_ms(s->created_unix_ms, t1, sizeof t1));
	printf("updated_at    %s\n", ctl_iso_ms(s->updated_unix_ms, t2, sizeof t2));
	printf("step_deadline %s\n", ctl_iso_ms(s->step_deadline_unix_ms, t3, sizeof t3));
	printf("next_attempt  %s\n", ctl_iso_ms(s->next_attempt_unix_ms, t4, sizeof t4));
	/* which orchestrator holds the saga's claim: a finished saga's is
	 * history (--json keeps it) */
	if (!s->finished)
		printf("lease_owner   %s (epoch %" PRId64 ")\n",
		    s->lease_owner[0] ? ctl_esc(s->lease_owner) : "-", (int64_t)s->epoch);
	if (created == CTL_KEY_NEW)
		printf("created       yes\n");
	else if (created == CTL_KEY_OLD)
		printf("created       no (it already existed)\n");
	else if (created == CTL_KEY_OURS)
		printf("created       yes (the first reply was lost; the call re-sent with its "
		       "id found the saga)\n");
	else if (created == CTL_KEY_MAYBE)
		printf("created       no (it existed when the call was re-sent after a lost reply: "
		       "this command's first try or an earlier call with this --id made it)\n");
}
