/* pkit_toy: the two toy services of the participant kit's tests
 * (test_pkit.c, test_pkit_order.c, test_pkit_retention.c), described here
 * and nowhere else, and what those tests share: the database fixture and
 * its readers, the commands and the checks of their outcomes.
 *   - toy: records toy_records(saga_id, status, key, n) and rows
 *     toy_rows(key, value); op 1 Take n units of a row (refused with a
 *     record when the row has too few or is missing), op 2 GiveBack (the
 *     compensation: a TAKEN record becomes RETURNED and gives the units
 *     back; with no record it leaves a TOMBSTONE and succeeds; a Take after
 *     a TOMBSTONE is ABORTED);
 *   - notes: records toy_notes(saga_id, status, who, what), no rows and no
 *     number column (the shape of shippingd, with one column fewer).
 * Each declares the summary of its retired records (<records>_retired) and
 * the created_at index that retention reads by (pkit.h, "Retention").
 * The toys' decide functions are written from saga-semantics.md rules 2, 5
 * and 6, not copied from a service, so a test fails when the kit breaks a
 * rule, not only when the toy does. */
#ifndef SAGA_TEST_PKIT_TOY_H
#define SAGA_TEST_PKIT_TOY_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pkit.h"
#include "valcache.h"
#include "valid.h"

enum { TOY_OP_TAKE = 1, TOY_OP_GIVEBACK = 2 };
enum { TOY_NONE, TOY_TAKEN, TOY_SHORT, TOY_NO_ROW, TOY_RETURNED, TOY_TOMBSTONE };

/* The kit serves the methods of the table (common/authz/methods.h): the
 * toy's Take and GiveBack are Stock's rows (whose messages it borrows), so
 * its fault points and metrics name them ReserveStock and ReleaseStock. */
#define TOY_TAKE_ID         METHOD_Stock_ReserveStock
#define TOY_GIVEBACK_ID     METHOD_Stock_ReleaseStock
#define TOY_TAKE_METHOD     METHOD_PATH(TOY_TAKE_ID)
#define TOY_GIVEBACK_METHOD METHOD_PATH(TOY_GIVEBACK_ID)

enum { NOTE_OP = 1 };
enum { NOTE_NONE, NOTE_NOTED };
/* Note is Shipping's ShipOrder row (whose messages it borrows). */
#define NOTE_ID     METHOD_Shipping_ShipOrder
#define NOTE_METHOD METHOD_PATH(NOTE_ID)

typedef struct fixture {
	char conninfo[256];
	/* the same database for the lock-order test: a lock wait past 5 s
	 * fails its statement (lock_not_available, not retried by the kit),
	 * and PostgreSQL looks for deadlocks only after 60 s, so a deadlock
	 * is an error of pkit_store_apply instead of a retried lost race */
	char conninfo_no_deadlock[320];
	PGconn *admin; /* for seeding and reading the tables */
} fixture;

typedef char saga_id_t[VALID_UUID_LEN + 1];

typedef struct want {
	int code;
	const char *reason;
	int status;
	bool wrote;
	int64_t value;
} want;

/* ---- the toy services (pkit_toy.c) ---- */

/* toy's methods (Take, GiveBack) and its service */
extern const pkit_method toy_methods[];
extern const pkit_service toy_service;
/* the notes service, and how often the kit gave its rows-less decide a row
 * (it must not) */
extern const pkit_service notes_service;
extern int notes_rows_seen;

/* ---- the database ---- */

/* sql_ok runs `sql` with its `n` text parameters on `c`, failing the test
 * when it fails. */
void sql_ok(PGconn *c, const char *sql, int n, const char *const *params);
/* db_text runs `sql` (one parameter, may be NULL) and copies the first
 * column of its only row into out, or "" when it has no row. */
void db_text(PGconn *c, const char *sql, const char *p1, char *out, size_t len);
/* db_int is db_text for a number; -1 when there is no row. */
int64_t db_int(PGconn *c, const char *sql, const char *p1);
/* row_value: the toy row's value, -1 when the row does not exist. */
int64_t row_value(fixture *f, const char *key);
/* the toy record of a saga id as "STATUS key n", "" when there is none (a
 * static buffer, overwritten by the next call) */
const char *record_of(fixture *f, const char *saga_id);
/* record_count: how many toy records there are */
int64_t record_count(fixture *f);
/* toy_reset empties every toy table and seeds the rows "KEY=value ...". */
void toy_reset(fixture *f, const char *rows);
/* set_row sets (or makes) the toy row `key` to `value`. */
void set_row(fixture *f, const char *key, int64_t value);
/* fixture_setup makes the test database afresh with both toys' schemas
 * (PG_PORT from with_stack.sh) and a fixture in *state; fixture_teardown
 * frees it. cmocka group setup and teardown. */
int fixture_setup(void **state);
int fixture_teardown(void **state);
/* fault_teardown clears any armed fault (a test's cmocka teardown). */
int fault_teardown(void **state);

/* ---- commands and outcomes ---- */

/* make_id writes a canonical saga id for (test, i): distinct for distinct
 * pairs, and in an order unrelated to i. */
void make_id(saga_id_t out, unsigned test, unsigned i);
/* toy_cmd and note_cmd: a command of toy (op on key, n units) and of notes
 * (who, what); the strings are borrowed. */
pkit_cmd toy_cmd(const char *saga_id, int op, const char *key, int64_t n);
pkit_cmd note_cmd(const char *saga_id, const char *who, const char *what);
/* expect_out fails unless command `c` (named `what`) had this outcome:
 * code, reason, reply status, whether it wrote its record, and the row's
 * value after it. */
void expect_out(const char *what, const pkit_cmd *c, int code, const char *reason, int reply_status,
    bool wrote, int64_t value);
/* expect_all is expect_out for each of the `n` commands, with its `want`. */
void expect_all(const char *what, const pkit_cmd *cmds, const want *w, size_t n);
/* apply_ok applies the `n` commands through `s`, failing the test unless
 * pkit_store_apply returns 0. */
void apply_ok(pkit_store *s, pkit_cmd *cmds, size_t n);
/* open_store opens and readies a store of `svc` on the test database
 * (cache: may be NULL); the caller closes it. */
pkit_store *open_store(fixture *f, const pkit_service *svc, valcache *cache);
/* expect_counts fails unless `s` counted `fast` commits on the
 * one-round-trip path and `fell_back` fallbacks. */
void expect_counts(const pkit_store *s, uint64_t fast, uint64_t fell_back);

#endif
