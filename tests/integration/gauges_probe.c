/* gauges_probe CONNINFO MARGIN_MS STUCK_MS: prints what store_read_gauges
 * reads from the orchestrator's database, one "name=value" a line (the
 * unfinished states, then attention, the four overdue reasons and the
 * total), for list_overdue.sh to compare with its own count in psql.
 * Exit 0, or 1 with the error on stderr. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <libpq-fe.h>

#include "pg.h"
#include "saga.h"
#include "store.h"

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: gauges_probe CONNINFO MARGIN_MS STUCK_MS\n");
		return 2;
	}
	PGconn *c = PQconnectdb(argv[1]);
	if (PQstatus(c) != CONNECTION_OK) {
		fprintf(stderr, "gauges_probe: %s", PQerrorMessage(c));
		PQfinish(c);
		return 1;
	}
	store_gauges g;
	int rc = store_read_gauges(c, strtoll(argv[2], NULL, 10), strtoll(argv[3], NULL, 10), &g);
	PQfinish(c);
	if (rc != 0) {
		fprintf(stderr, "gauges_probe: store_read_gauges: %s\n", pg_err_name(rc));
		return 1;
	}
	for (int s = 1; s <= SAGA_STATE_LAST; s++)
		if (!saga_is_terminal((saga_state)s))
			printf("%s=%" PRId64 "\n", saga_state_name((saga_state)s), g.open[s]);
	printf("attention=%" PRId64 "\n", g.attention);
	for (int k = 0; k < STORE_OVERDUE_N; k++)
		printf(
		    "%s=%" PRId64 "\n", store_overdue_name((store_overdue_reason)k), g.overdue[k]);
	printf("overdue=%" PRId64 "\n", g.overdue_total);
	return 0;
}
