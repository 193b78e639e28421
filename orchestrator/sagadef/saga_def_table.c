/* saga_def_table: a saga type's state table (docs/saga-states.md) derived
 * from its definition by the engine's own transition: each cell is what
 * saga_flow_transition does with that event at that position, so the table
 * cannot drift from the code that runs the saga. */
#include "saga_def_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The clock of the table's made-up rows (ms); any value past 0 would do. */
#define TABLE_NOW_MS 1000000

const char *saga_def_state_name(
    const saga_def_type *t, const saga_flow *f, const saga_flow_pos *pos)
{
	if (saga_flow_is_terminal(f, pos))
		return pos->phase == SAGA_FLOW_FORWARD ? t->completed : t->cancelled;
	if (pos->step < 0 || pos->step >= f->nsteps || (size_t)pos->step >= t->nsteps)
		return NULL;
	const saga_def_step *st = &t->steps[pos->step];
	return pos->phase == SAGA_FLOW_FORWARD ? st->state : st->compensating;
}

/* The row of a saga that has just entered stage `step` in `phase`, its
 * deadline (if the stage has one) at TABLE_NOW_MS + 1. */
static saga_flow_row table_row(const saga_flow *f, int32_t step, saga_flow_phase phase)
{
	saga_flow_row r = {.pos = {.step = step, .phase = phase}};
	if (phase == SAGA_FLOW_FORWARD && f->steps[step].has_deadline)
		r.step_deadline_ms = TABLE_NOW_MS + 1;
	return r;
}

/* The members' commands of stage `i` in `phase`, " + " between them. */
static void table_commands(
    sd_buf *b, const saga_def_type *t, int32_t i, int32_t n, saga_flow_phase phase)
{
	const char *sep = "";
	for (int32_t k = 0; k < n; k++) {
		const saga_def_step *st = &t->steps[i + k];
		enum method_id m = phase == SAGA_FLOW_FORWARD ? st->command : st->compensation;
		if (m == METHOD_NONE)
			continue;
		sd_add(b, "%s%s", sep, method_table[m].name);
		sep = " + ";
	}
}

/* "retried (attention after N tries)": N the step's own or the option. */
static void table_retried(sd_buf *b, const char *what, const saga_def_step *st)
{
	if (st->attention_after == SAGA_DEF_DEFAULT)
		sd_add(b, "%s: retried (attention after --attention-after tries)", what);
	else
		sd_add(b, "%s: retried (attention after %lld tries)", what,
		    (long long)st->attention_after);
}

/* One row: stage `i` (n members) of `t` in `phase`, each cell the outcome
 * of saga_flow_transition on that event. */
static void table_stage(sd_buf *b, const saga_def_type *t, const saga_flow *f, int32_t i, int32_t n,
    saga_flow_phase phase, const saga_policy *p)
{
	const saga_def_step *st = &t->steps[i];
	/* a group's command names its member, even a group of one (as the
	 * engine's: engine.c); a step alone's is -1 */
	bool grouped = st->group != NULL;
	saga_flow_pos here = {.step = i, .phase = phase};
	sd_add(b, "| %s", saga_def_state_name(t, f, &here));
	if (st->group != NULL) {
		sd_add(b, " (group %s:", st->group);
		for (int32_t k = 0; k < n; k++)
			sd_add(b, "%s %s", k ? "," : "", t->steps[i + k].name);
		sd_add(b, ")");
	}
	if (phase == SAGA_FLOW_FORWARD && st->kind != SAGA_STEP_COMPENSABLE)
		sd_add(b, " (%s)", saga_def_kind_name(st->kind));
	sd_add(b, " | ");
	table_commands(b, t, i, n, phase);

	/* on success: every member's reply OK, in order */
	saga_flow_row r = table_row(f, i, phase);
	saga_flow_decision d;
	for (int32_t k = 0; k < n; k++) {
		if (phase == SAGA_FLOW_COMPENSATING && t->steps[i + k].compensation == METHOD_NONE)
			continue;
		saga_flow_event ev = {.kind = SAGA_EV_SUCCESS,
		    .cmd = {.step = i, .phase = phase, .member = grouped ? k : -1}};
		saga_flow_transition(f, &r, &ev, TABLE_NOW_MS, 0, p, &d);
		r = d.next;
	}
	sd_add(b, " | %s", saga_def_state_name(t, f, &r.pos));

	/* on a definitive refusal of the (first) member */
	r = table_row(f, i, phase);
	saga_flow_event ev = {.kind = SAGA_EV_REFUSED,
	    .cmd = {.step = i, .phase = phase, .member = grouped ? 0 : -1},
	    .reason = "refused"};
	saga_flow_transition(f, &r, &ev, TABLE_NOW_MS, 0, p, &d);
	sd_add(b, " | ");
	if (d.ignored || !d.state_changed)
		table_retried(b, "never refused", st);
	else
		sd_add(b, "%s (the reply's reason)", saga_def_state_name(t, f, &d.next.pos));

	/* on the step deadline: the sweep finds it passed */
	r = table_row(f, i, phase);
	ev = (saga_flow_event) {.kind = SAGA_EV_DEADLINE};
	saga_flow_transition(f, &r, &ev, TABLE_NOW_MS + 2, 0, p, &d);
	sd_add(b, " | ");
	if (d.ignored || !d.state_changed)
		sd_add(b, "none: retried");
	else
		sd_add(b, "%s (%s)", saga_def_state_name(t, f, &d.next.pos), d.next.reason);

	/* on an operator's cancel (rule 11) */
	r = table_row(f, i, phase);
	ev = (saga_flow_event) {.kind = SAGA_EV_CANCEL};
	saga_flow_transition(f, &r, &ev, TABLE_NOW_MS, 0, p, &d);
	sd_add(b, " | ");
	if (d.refused != NULL)
		sd_add(b, "refused %s", d.refused);
	else
		sd_add(b, "%s (%s)", saga_def_state_name(t, f, &d.next.pos), d.next.reason);
	sd_add(b, " |\n");
}

int saga_def_table(const saga_def_type *t, char **out)
{
	*out = NULL;
	saga_flow *f = malloc(sizeof *f);
	if (f == NULL)
		return -1;
	if (saga_def_flow(t, f) != 0 || !saga_flow_valid(f)) {
		free(f);
		return -1;
	}
	/* the timing does not change any cell: only which event does what */
	const saga_policy p = {.step_timeout_ms = 1,
	    .backoff_base_ms = 1,
	    .backoff_cap_ms = 1,
	    .attention_after = 1,
	    .request_timeout_ms = 1};
	sd_buf b = {0};
	sd_add(&b,
	    "| state | command in flight | on success | on definitive refusal | "
	    "on step deadline | on cancel |\n|---|---|---|---|---|---|\n");
	int32_t starts[SAGA_FLOW_MAX_STEPS], nstages = 0;
	for (int32_t i = 0; i < f->nsteps; i += saga_flow_stage_len(f, i)) {
		starts[nstages++] = i;
		table_stage(&b, t, f, i, saga_flow_stage_len(f, i), SAGA_FLOW_FORWARD, &p);
	}
	for (int32_t k = nstages - 1; k >= 0; k--) {
		int32_t i = starts[k], n = saga_flow_stage_len(f, i);
		bool any = false;
		for (int32_t m = 0; m < n; m++)
			any = any || f->steps[i + m].has_compensation;
		if (any)
			table_stage(&b, t, f, i, n, SAGA_FLOW_COMPENSATING, &p);
	}
	sd_add(&b, "| %s, %s | none (terminal) | | | | refused |\n", t->completed, t->cancelled);
	free(f);
	if (b.oom) {
		free(b.p);
		return -1;
	}
	*out = b.p;
	return 0;
}
