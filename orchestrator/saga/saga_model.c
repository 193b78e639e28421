#include "saga_model.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "clock.h"
#include "status.h"

/* the daemons' defaults (orchestrator/orchestratord/main.c); only whether a
 * row has a deadline is kept in a state */
const saga_policy saga_model_policy = {.step_timeout_ms = 5000,
    .backoff_base_ms = 50,
    .backoff_cap_ms = 5000,
    .attention_after = 10,
    .request_timeout_ms = 2000,
    .request_timeout_max_ms = 30000,
    .lease_grace_ms = SAGA_LEASE_GRACE_MS};

/* every event is decided at MODEL_NOW, before any deadline; a deadline
 * passes at MODEL_DEADLINE */
#define MODEL_NOW      1000000
#define MODEL_DEADLINE (MODEL_NOW + 5000)

/* a participant's record of its step (rec bits) */
enum {
	REC_APPLIED = 1,
	REC_REFUSED = 2,
	REC_TOMB = 4,
	REC_COMPENSATED = 8,
	REC_EFFECT_SHIFT = 4, /* 2 bits: effects applied, 0..3 */
	REC_COMP_SHIFT = 6,   /* 2 bits: compensations applied, 0..3 */
};

/* what is in flight for a step (net bits): a message once sent stays
 * deliverable until lost */
enum {
	NET_CMD = 1,     /* its command */
	NET_OK = 2,      /* its command's success reply */
	NET_REFUSED = 4, /* its command's refusal */
	NET_COMP = 8,    /* its compensation */
	NET_COMP_OK = 16 /* its compensation's success reply */
};

typedef struct mst {
	saga_flow_pos pos;
	bool deadline; /* the row has a step deadline */
	bool pivot_ok; /* the pivot succeeded (a ghost: no daemon keeps it) */
	uint8_t rec[SAGA_FLOW_MAX_STEPS];
	uint8_t net[SAGA_FLOW_MAX_STEPS];
} mst;

typedef struct node {
	UT_hash_handle hh;
	uint32_t idx;    /* its index in model.nodes */
	uint32_t parent; /* the index of the state it was first reached from */
	int32_t depth;
	unsigned char key[]; /* mst_encode's bytes */
} node;

typedef enum mode { EXPLORE, FIND_EDGE } mode;

typedef struct model {
	const saga_flow *f;
	int32_t pivot; /* the pivot's index, or -1 */
	const saga_model_opts *o;
	size_t keylen;
	node **nodes; /* in the order reached: breadth first */
	size_t n, cap;
	node *set;
	uint32_t *edges; /* pairs (from, to) */
	size_t nedges, ecap;
	bool nomem;
	bool bounded; /* a state was not added: max_states */
	/* the edge being made */
	mode mode;
	uint32_t from;
	const unsigned char *target; /* FIND_EDGE: the child looked for */
	char label[256];             /* FIND_EDGE: its event, once found */
	bool found;
	/* the first violation */
	bool bad;
	uint32_t bad_from; /* the state the violating event happened in */
	char bad_label[256];
	char what[200];
	unsigned char *scratch; /* keylen bytes */
} model;

/* ---- states as bytes ---- */

static void mst_encode(const model *m, const mst *s, unsigned char *k)
{
	int32_t n = m->f->nsteps;
	k[0] = (unsigned char)(s->pos.step + 1);
	k[1] = (unsigned char)s->pos.phase;
	k[2] = (unsigned char)(s->deadline | s->pivot_ok << 1);
	for (int b = 0; b < 8; b++)
		k[3 + b] = (unsigned char)(s->pos.members >> (8 * b));
	memcpy(k + 11, s->rec, (size_t)n);
	memcpy(k + 11 + n, s->net, (size_t)n);
}

static void mst_decode(const model *m, const unsigned char *k, mst *s)
{
	int32_t n = m->f->nsteps;
	memset(s, 0, sizeof *s);
	s->pos.step = (int32_t)k[0] - 1;
	s->pos.phase = (saga_flow_phase)k[1];
	s->deadline = k[2] & 1;
	s->pivot_ok = (k[2] >> 1) & 1;
	for (int b = 0; b < 8; b++)
		s->pos.members |= (uint64_t)k[3 + b] << (8 * b);
	memcpy(s->rec, k + 11, (size_t)n);
	memcpy(s->net, k + 11 + n, (size_t)n);
}

static int rec_effects(uint8_t r)
{
	return (r >> REC_EFFECT_SHIFT) & 3;
}

static int rec_comps(uint8_t r)
{
	return (r >> REC_COMP_SHIFT) & 3;
}

static uint8_t rec_count(uint8_t r, int shift)
{
	int c = (r >> shift) & 3;
	if (c < 3)
		c++;
	return (uint8_t)((r & ~(3 << shift)) | c << shift);
}

static bool mst_terminal(const model *m, const mst *s)
{
	return saga_flow_is_terminal(m->f, &s->pos);
}

static bool mst_quiet(const model *m, const mst *s)
{
	for (int32_t i = 0; i < m->f->nsteps; i++)
		if (s->net[i])
			return false;
	return true;
}

/* ---- words ---- */

static const char *pos_name(const model *m, const saga_flow_pos *p, char *buf, size_t len)
{
	if (saga_flow_is_terminal(m->f, p))
		return p->phase == SAGA_FLOW_FORWARD ? "completed" : "cancelled";
	snprintf(buf, len, "%s %s", m->f->steps[p->step].name,
	    p->phase == SAGA_FLOW_FORWARD ? "forward" : "compensating");
	return buf;
}

/* mst_words: the state in one line (the row, then each step's record and
 * what is in flight for it) */
static void mst_words(const model *m, const mst *s, char *out, size_t len)
{
	char pb[96];
	size_t at = (size_t)snprintf(out, len, "row: %s%s%s", pos_name(m, &s->pos, pb, sizeof pb),
	    s->deadline ? ", deadline set" : "", s->pivot_ok ? ", pivot passed" : "");
	for (int32_t i = 0; i < m->f->nsteps && at < len; i++) {
		uint8_t r = s->rec[i], q = s->net[i];
		if (!r && !q)
			continue;
		at += (size_t)snprintf(out + at, len - at, "; %s:%s%s%s%s%s%s%s%s%s",
		    m->f->steps[i].name, r & REC_APPLIED ? " applied" : "",
		    r & REC_REFUSED ? " refused" : "", r & REC_TOMB ? " tombstone" : "",
		    r & REC_COMPENSATED ? " compensated" : "", q & NET_CMD ? " [command]" : "",
		    q & NET_OK ? " [ok]" : "", q & NET_REFUSED ? " [refusal]" : "",
		    q & NET_COMP ? " [compensation]" : "",
		    q & NET_COMP_OK ? " [compensation ok]" : "");
	}
}

/* ---- the graph ---- */

static void violation(model *m, const char *label, const char *fmt, ...)
{
	if (m->bad)
		return;
	m->bad = true;
	m->bad_from = m->from;
	snprintf(m->bad_label, sizeof m->bad_label, "%s", label);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(m->what, sizeof m->what, fmt, ap);
	va_end(ap);
}

/* state_add finds or adds state `k` (first reached from `parent` at
 * `depth`); returns its index, or UINT32_MAX when memory ran out or the
 * bound was reached (m->nomem says which) */
static uint32_t state_add(model *m, const unsigned char *k, uint32_t parent, int32_t depth)
{
	node *x = NULL;
	HASH_FIND(hh, m->set, k, m->keylen, x);
	if (x != NULL)
		return x->idx;
	size_t max = m->o->max_states ? m->o->max_states : SAGA_MODEL_MAX_STATES;
	if (m->n >= max || m->n >= UINT32_MAX - 1) {
		m->bounded = true;
		return UINT32_MAX;
	}
	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 1024;
		node **nn = realloc(m->nodes, cap * sizeof *nn);
		if (nn == NULL) {
			m->nomem = true;
			return UINT32_MAX;
		}
		m->nodes = nn;
		m->cap = cap;
	}
	x = malloc(sizeof *x + m->keylen);
	if (x == NULL) {
		m->nomem = true;
		return UINT32_MAX;
	}
	memcpy(x->key, k, m->keylen);
	x->idx = (uint32_t)m->n;
	x->parent = parent;
	x->depth = depth;
	HASH_ADD_KEYPTR(hh, m->set, x->key, m->keylen, x);
	m->nodes[m->n++] = x;
	return x->idx;
}

static void edge_add(model *m, uint32_t from, uint32_t to)
{
	if (m->nedges == m->ecap) {
		size_t cap = m->ecap ? m->ecap * 2 : 4096;
		uint32_t *e = realloc(m->edges, cap * 2 * sizeof *e);
		if (e == NULL) {
			m->nomem = true;
			return;
		}
		m->edges = e;
		m->ecap = cap;
	}
	m->edges[2 * m->nedges] = from;
	m->edges[2 * m->nedges + 1] = to;
	m->nedges++;
}

/* the first step of the stage holding step i */
static int32_t stage_first(const saga_flow *f, int32_t i)
{
	while (i > 0 && f->steps[i].group >= 0 && f->steps[i - 1].group == f->steps[i].group)
		i--;
	return i;
}

/* pos_rank orders positions as the transition moves through them: forward
 * steps up, then compensations down to cancelled (completed and the
 * compensations are never reached from each other) */
static int32_t pos_rank(const model *m, int32_t step, saga_flow_phase phase)
{
	return phase == SAGA_FLOW_FORWARD ? step : 2 * m->f->nsteps - step;
}

/* prune: what is in flight and can no longer change anything is forgotten
 * (as if lost, which the network may do anyway): a reply the transition
 * can no longer take (replies are taken only at their stage's position, a
 * member's only until its bit is set, and a saga never goes back to a
 * position it left: decide checks it), and a command or compensation whose
 * delivery leaves its participant's record as it is (answered from it)
 * when that answer is such a reply. This is what keeps the states of flows
 * with groups to a few thousand. */
static void prune(const model *m, mst *c)
{
	for (int32_t i = 0; i < m->f->nsteps; i++) {
		uint8_t q = c->net[i], r = c->rec[i];
		if (q == 0)
			continue;
		int32_t first = stage_first(m->f, i);
		uint64_t bit = (uint64_t)1 << (i - first);
		int32_t now = pos_rank(m, c->pos.step, c->pos.phase);
		bool here_f = c->pos.phase == SAGA_FLOW_FORWARD && c->pos.step == first;
		bool here_c = c->pos.phase == SAGA_FLOW_COMPENSATING && c->pos.step == first;
		bool dead_reply = now > pos_rank(m, first, SAGA_FLOW_FORWARD)
		    || (here_f && (c->pos.members & bit));
		bool dead_comp_reply = now > pos_rank(m, first, SAGA_FLOW_COMPENSATING)
		    || (here_c && (c->pos.members & bit));
		if (dead_reply)
			q &= (uint8_t) ~(NET_OK | NET_REFUSED);
		if (dead_comp_reply)
			q &= (uint8_t)~NET_COMP_OK;
		/* answered from the record (deliver_command, deliver_compensation) */
		if (dead_reply && (r & (REC_APPLIED | REC_REFUSED | REC_TOMB)))
			q &= (uint8_t)~NET_CMD;
		if (dead_comp_reply && (r & (REC_COMPENSATED | REC_REFUSED | REC_TOMB)))
			q &= (uint8_t)~NET_COMP;
		c->net[i] = q;
	}
}

/* emit: the event `what` (of step `step`, or -1 for the orchestrator's)
 * leads from m->from to state `c` */
static void emit(model *m, const mst *c0, int32_t step, const char *what)
{
	mst c = *c0;
	prune(m, &c);
	mst_encode(m, &c, m->scratch);
	if (m->mode == FIND_EDGE) {
		if (!m->found && memcmp(m->scratch, m->target, m->keylen) == 0) {
			m->found = true;
			snprintf(m->label, sizeof m->label, "%s%s%s",
			    step >= 0 ? m->f->steps[step].name : "", step >= 0 ? ": " : "", what);
		}
		return;
	}
	if (memcmp(m->scratch, m->nodes[m->from]->key, m->keylen) == 0)
		return; /* nothing changed */
	uint32_t to = state_add(m, m->scratch, m->from, m->nodes[m->from]->depth + 1);
	if (to != UINT32_MAX)
		edge_add(m, m->from, to);
}

/* sends: the commands of the members `send` of c's position go in flight;
 * rule 3's checks at the send. `label` names the event, for a violation. */
static void send_members(model *m, mst *c, uint64_t send, const char *label)
{
	int32_t n = saga_flow_stage_len(m->f, c->pos.step);
	for (int32_t i = 0; i < n; i++) {
		if (!(send & ((uint64_t)1 << i)))
			continue;
		int32_t j = c->pos.step + i;
		if (c->pos.phase == SAGA_FLOW_COMPENSATING) {
			if (c->pivot_ok)
				violation(m, label,
				    "the compensation of %s is sent after the pivot succeeded "
				    "(rule 3)",
				    m->f->steps[j].name);
			c->net[j] |= NET_COMP;
		} else {
			if (m->pivot >= 0 && j > m->pivot && !c->pivot_ok)
				violation(m, label,
				    "the command of %s is sent before the pivot succeeded (rule 3)",
				    m->f->steps[j].name);
			c->net[j] |= NET_CMD;
		}
	}
}

/* decide: the orchestrator applies `ev` to s's row at `now`; emits the next
 * state (none when the event is ignored) */
static void decide(
    model *m, const mst *s, const saga_flow_event *ev, int64_t now, int32_t step, const char *what)
{
	saga_flow_row row = {.pos = s->pos,
	    .step_deadline_ms = s->deadline ? MODEL_DEADLINE : 0,
	    .next_attempt_ms = mst_terminal(m, s) ? 0 : MODEL_NOW};
	saga_flow_decision d;
	saga_flow_transition(m->f, &row, ev, now, 0, &saga_model_policy, &d);
	if (m->o->wrap != NULL)
		m->o->wrap(m->o->wrap_ctx, m->f, &row, ev, now, &d);
	if (d.ignored)
		return;
	mst c = *s;
	c.pos = d.next.pos;
	c.deadline = d.next.step_deadline_ms > 0;
	if (m->pivot >= 0 && c.pos.phase == SAGA_FLOW_FORWARD && c.pos.step > m->pivot)
		c.pivot_ok = true;
	char label[256] = "";
	if (m->mode == EXPLORE && !m->bad) {
		char pb[96];
		snprintf(label, sizeof label, "%s%s%s -> %s (%s)",
		    step >= 0 ? m->f->steps[step].name : "", step >= 0 ? ": " : "", what,
		    pos_name(m, &c.pos, pb, sizeof pb), d.event_name);
	}
	send_members(m, &c, d.send, label);
	if (pos_rank(m, c.pos.step, c.pos.phase) < pos_rank(m, s->pos.step, s->pos.phase))
		violation(m, label, "the saga went back to a position it had left");
	if (c.pivot_ok && c.pos.phase == SAGA_FLOW_COMPENSATING)
		violation(m, label,
		    "the saga is compensating or cancelled after the pivot succeeded (rule 3)");
	emit(m, &c, step, what);
}

/* a command of step i reaches its participant: every answer it may give */
static void deliver_command(model *m, const mst *s, int32_t i)
{
	mst c = *s;
	uint8_t r = s->rec[i];
	if (r & REC_TOMB) {
		c.net[i] |= NET_REFUSED;
		emit(m, &c, i,
		    "command delivered, refused (tombstone: its compensation came first)");
		return;
	}
	if (r & REC_REFUSED) {
		c.net[i] |= NET_REFUSED;
		emit(m, &c, i, "command delivered again, refused again (its record)");
		return;
	}
	if (r & REC_APPLIED) {
		c.net[i] |= NET_OK;
		emit(m, &c, i, "command delivered again, answered ok from its record");
		return;
	}
	c.rec[i] = rec_count((uint8_t)(r | REC_APPLIED), REC_EFFECT_SHIFT);
	c.net[i] |= NET_OK;
	emit(m, &c, i, "command delivered, applied");
	c = *s;
	c.net[i] |= NET_REFUSED;
	if (m->f->steps[i].kind == SAGA_FLOW_RETRIABLE) {
		emit(m, &c, i, "command delivered, refused for now (not recorded)");
	} else {
		c.rec[i] = (uint8_t)(r | REC_REFUSED);
		emit(m, &c, i, "command delivered, refused definitively");
	}
}

/* a compensation of step i reaches its participant */
static void deliver_compensation(model *m, const mst *s, int32_t i)
{
	mst c = *s;
	uint8_t r = s->rec[i];
	const char *what = "compensation delivered, nothing to undo";
	if ((r & REC_APPLIED) && !(r & REC_COMPENSATED)) {
		c.rec[i] = rec_count((uint8_t)(r | REC_COMPENSATED), REC_COMP_SHIFT);
		what = "compensation delivered, applied";
	} else if (!(r & (REC_APPLIED | REC_REFUSED | REC_TOMB))) {
		c.rec[i] = (uint8_t)(r | REC_TOMB);
		what = "compensation delivered first, tombstone recorded (rule 5)";
	}
	c.net[i] |= NET_COMP_OK;
	emit(m, &c, i, what);
}

/* a reply about step i reaches the orchestrator */
static void deliver_reply(model *m, const mst *s, int32_t i, saga_flow_phase phase, bool ok)
{
	int32_t first = stage_first(m->f, i);
	bool group = m->f->steps[i].group >= 0;
	saga_flow_event ev = {.kind = ok ? SAGA_EV_SUCCESS : SAGA_EV_REFUSED,
	    .cmd = {.step = first, .phase = phase, .member = group ? i - first : -1},
	    .reason = ok                                     ? NULL
	        : (s->rec[i] & REC_TOMB)                     ? REASON_TOMBSTONE
	        : m->f->steps[i].kind == SAGA_FLOW_PIVOT     ? REASON_PAYMENT_DECLINED
	        : m->f->steps[i].kind == SAGA_FLOW_RETRIABLE ? "not_now"
	                                                     : REASON_OUT_OF_STOCK};
	decide(m, s, &ev, MODEL_NOW, i,
	    phase == SAGA_FLOW_COMPENSATING ? "compensation's ok reply delivered"
	        : ok                        ? "ok reply delivered"
	                                    : "refusal delivered");
}

static void lose(model *m, const mst *s, int32_t i, uint8_t bit, const char *what)
{
	mst c = *s;
	c.net[i] = (uint8_t)(c.net[i] & ~bit);
	emit(m, &c, i, what);
}

/* expand: every event that may happen in state m->from */
static void expand(model *m)
{
	mst s;
	mst_decode(m, m->nodes[m->from]->key, &s);
	for (int32_t i = 0; i < m->f->nsteps; i++) {
		uint8_t q = s.net[i];
		if (q & NET_CMD) {
			deliver_command(m, &s, i);
			lose(m, &s, i, NET_CMD, "command lost");
		}
		if (q & NET_COMP) {
			deliver_compensation(m, &s, i);
			lose(m, &s, i, NET_COMP, "compensation lost");
		}
		if (q & NET_OK) {
			deliver_reply(m, &s, i, SAGA_FLOW_FORWARD, true);
			lose(m, &s, i, NET_OK, "ok reply lost");
		}
		if (q & NET_REFUSED) {
			deliver_reply(m, &s, i, SAGA_FLOW_FORWARD, false);
			lose(m, &s, i, NET_REFUSED, "refusal lost");
		}
		if (q & NET_COMP_OK) {
			deliver_reply(m, &s, i, SAGA_FLOW_COMPENSATING, true);
			lose(m, &s, i, NET_COMP_OK, "compensation's ok reply lost");
		}
	}
	if (mst_terminal(m, &s))
		return;
	if (s.deadline) {
		saga_flow_event ev = {.kind = SAGA_EV_DEADLINE};
		decide(m, &s, &ev, MODEL_DEADLINE, -1, "the step deadline passed");
	}
	/* rule 11: an operator may cancel at any moment (a refused cancel is
	 * ignored and changes nothing) */
	saga_flow_event cancel = {.kind = SAGA_EV_CANCEL};
	decide(m, &s, &cancel, MODEL_NOW, -1, "an operator cancels");
	uint64_t due = saga_flow_due(m->f, &s.pos);
	if (due) {
		mst c = s;
		send_members(m, &c, due, "the orchestrator re-sends what its row says is due");
		emit(m, &c, -1,
		    "the orchestrator re-sends what its row says is due (a retry, a restart, a "
		    "takeover)");
	}
}

/* check_state: checks 1 and 2 on a state where the saga has ended and
 * nothing is in flight (and the counts on every state) */
static void check_state(model *m, uint32_t idx, saga_model_result *out)
{
	mst s;
	mst_decode(m, m->nodes[idx]->key, &s);
	const saga_flow *f = m->f;
	for (int32_t i = 0; i < f->nsteps; i++)
		if (rec_effects(s.rec[i]) > 1 || rec_comps(s.rec[i]) > 1) {
			m->from = idx;
			violation(m, "", "%s applied %d times, compensated %d times (rule 2)",
			    f->steps[i].name, rec_effects(s.rec[i]), rec_comps(s.rec[i]));
			return;
		}
	if (!mst_terminal(m, &s) || !mst_quiet(m, &s))
		return;
	bool completed = s.pos.phase == SAGA_FLOW_FORWARD;
	out->completed += completed;
	out->cancelled += !completed;
	m->from = idx;
	for (int32_t i = 0; i < f->nsteps; i++) {
		uint8_t r = s.rec[i];
		const char *name = f->steps[i].name;
		if (completed && (!(r & REC_APPLIED) || (r & (REC_COMPENSATED | REC_TOMB)))) {
			violation(m, "", "completed, but %s is %s", name,
			    !(r & REC_APPLIED) ? "not applied" : "compensated");
			return;
		}
		if (completed)
			continue;
		if (m->pivot >= 0 && i > m->pivot && (r & REC_APPLIED)) {
			violation(
			    m, "", "cancelled, but %s, after the pivot, applied (rule 3)", name);
			return;
		}
		if (f->steps[i].kind != SAGA_FLOW_RETRIABLE && rec_effects(r) != rec_comps(r)) {
			violation(m, "", "cancelled, but %s%s applied and not compensated (rule 4)",
			    name, f->steps[i].group >= 0 ? " (a group member)" : "");
			return;
		}
	}
	if (!completed && s.pivot_ok)
		violation(m, "",
		    "cancelled after the pivot succeeded (rule 3: a retriable step given up)");
}

/* check 4: every state reaches one where the saga ended with nothing in
 * flight; sets a violation at the shallowest one that does not */
static void check_can_end(model *m)
{
	size_t n = m->n;
	uint32_t *start = calloc(n + 1, sizeof *start);
	uint32_t *from = malloc((m->nedges ? m->nedges : 1) * sizeof *from);
	uint32_t *queue = malloc(n * sizeof *queue);
	bool *ends = calloc(n, sizeof *ends);
	if (start == NULL || from == NULL || queue == NULL || ends == NULL) {
		m->nomem = true;
		goto out;
	}
	for (size_t e = 0; e < m->nedges; e++)
		start[m->edges[2 * e + 1] + 1]++;
	for (size_t v = 0; v < n; v++)
		start[v + 1] += start[v];
	for (size_t e = 0; e < m->nedges; e++) {
		uint32_t to = m->edges[2 * e + 1];
		from[start[to]++] = m->edges[2 * e];
	}
	for (size_t v = n; v > 0; v--) /* start[v] is now the end of v's list */
		start[v] = start[v - 1];
	start[0] = 0;
	size_t head = 0, tail = 0;
	for (size_t v = 0; v < n; v++) {
		mst s;
		mst_decode(m, m->nodes[v]->key, &s);
		if (mst_terminal(m, &s) && mst_quiet(m, &s)) {
			ends[v] = true;
			queue[tail++] = (uint32_t)v;
		}
	}
	while (head < tail) {
		uint32_t v = queue[head++];
		for (uint32_t k = start[v]; k < start[v + 1]; k++)
			if (!ends[from[k]]) {
				ends[from[k]] = true;
				queue[tail++] = from[k];
			}
	}
	for (size_t v = 0; v < n; v++)
		if (!ends[v]) {
			m->from = (uint32_t)v;
			violation(m, "", "the saga can no longer end from here (check 4)");
			break;
		}
out:
	free(start);
	free(from);
	free(queue);
	free(ends);
}

/* path_add appends one formatted line to out->path (room for it was
 * allocated); -ENOMEM when it cannot */
static int path_add(saga_model_result *out, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int len = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	char *line = len < 0 ? NULL : malloc((size_t)len + 1);
	if (line == NULL)
		return -ENOMEM;
	va_start(ap, fmt);
	vsnprintf(line, (size_t)len + 1, fmt, ap);
	va_end(ap);
	out->path[out->npath++] = line;
	return 0;
}

/* path: the shortest path from the start to m->bad_from, then the violating
 * event, into out->path */
static int make_path(model *m, saga_model_result *out)
{
	size_t len = 0;
	for (uint32_t v = m->bad_from; v != 0; v = m->nodes[v]->parent)
		len++;
	size_t total = len + 2 + (m->bad_label[0] != '\0');
	out->path = calloc(total, sizeof *out->path);
	if (out->path == NULL)
		return -ENOMEM;
	uint32_t *chain = malloc((len + 1) * sizeof *chain);
	if (chain == NULL)
		return -ENOMEM;
	size_t k = len;
	for (uint32_t v = m->bad_from;; v = m->nodes[v]->parent) {
		chain[k] = v;
		if (v == 0)
			break;
		k--;
	}
	char words[1024];
	mst s;
	mst_decode(m, m->nodes[0]->key, &s);
	mst_words(m, &s, words, sizeof words);
	int rc = path_add(out, "start: %s", words);
	for (size_t j = 1; j <= len && rc == 0; j++) {
		m->mode = FIND_EDGE;
		m->found = false;
		m->target = m->nodes[chain[j]]->key;
		m->from = chain[j - 1];
		expand(m);
		mst_decode(m, m->nodes[chain[j]]->key, &s);
		mst_words(m, &s, words, sizeof words);
		rc = path_add(
		    out, "%zu. %s => %s", j, m->found ? m->label : "(event not found)", words);
	}
	if (rc == 0 && m->bad_label[0] != '\0')
		rc = path_add(out, "%zu. %s", len + 1, m->bad_label);
	free(chain);
	return rc;
}

int saga_model_check(const saga_flow *f, const saga_model_opts *o, saga_model_result *out)
{
	static const saga_model_opts none = {0};
	memset(out, 0, sizeof *out);
	if (f == NULL || !saga_flow_valid(f))
		return -EINVAL;
	model m = {.f = f, .o = o ? o : &none, .pivot = -1, .mode = EXPLORE};
	for (int32_t i = 0; i < f->nsteps; i++)
		if (f->steps[i].kind == SAGA_FLOW_PIVOT)
			m.pivot = i;
	m.keylen = 11 + 2 * (size_t)f->nsteps;
	m.scratch = malloc(m.keylen);
	int rc = 0;
	if (m.scratch == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	/* the start: the row written, its first commands sent (a crash before
	 * the send is the loss of those) */
	saga_flow_row r = saga_flow_start(f, MODEL_NOW, &saga_model_policy);
	mst s = {.pos = r.pos, .deadline = r.step_deadline_ms > 0};
	m.from = 0;
	send_members(&m, &s, saga_flow_due(f, &s.pos), "start");
	mst_encode(&m, &s, m.scratch);
	if (state_add(&m, m.scratch, 0, 0) == UINT32_MAX) {
		rc = -ENOMEM;
		goto out;
	}
	int64_t until = m.o->max_ms > 0 ? clock_mono_ms() + m.o->max_ms : 0;
	for (size_t v = 0; v < m.n && !m.bad && !m.nomem; v++) {
		if (until != 0 && (v & 1023) == 0 && clock_mono_ms() >= until) {
			out->timed_out = true;
			m.bounded = true;
			break;
		}
		if (m.nodes[v]->depth > out->depth)
			out->depth = m.nodes[v]->depth;
		check_state(&m, (uint32_t)v, out); /* before its events: shortest */
		if (m.bad)
			break;
		m.from = (uint32_t)v;
		expand(&m);
	}
	out->states = m.n;
	out->transitions = m.nedges;
	out->complete = !m.bounded && !m.nomem && !m.bad;
	if (out->complete)
		check_can_end(&m);
	if (m.nomem)
		rc = -ENOMEM;
	if (m.bad) {
		out->violation = true;
		snprintf(out->what, sizeof out->what, "%s", m.what);
		int prc = make_path(&m, out);
		if (rc == 0)
			rc = prc;
	}
out:
	for (size_t v = 0; v < m.n; v++) {
		HASH_DELETE(hh, m.set, m.nodes[v]);
		free(m.nodes[v]);
	}
	free(m.nodes);
	free(m.edges);
	free(m.scratch);
	return rc;
}

void saga_model_result_free(saga_model_result *r)
{
	for (size_t i = 0; i < r->npath; i++)
		free(r->path[i]);
	free(r->path);
	r->path = NULL;
	r->npath = 0;
}
