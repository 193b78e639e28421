#include "horizon.h"

bool horizon_refuses(const horizon_policy *p, int64_t started_ms, int64_t now_ms)
{
	if (p->retention_ms <= 0)
		return false;
	if (started_ms <= 0 || horizon_ahead(p, started_ms, now_ms))
		return true;
	return started_ms < now_ms - p->retention_ms;
}

bool horizon_ahead(const horizon_policy *p, int64_t started_ms, int64_t now_ms)
{
	/* now, skew and the slack are far from INT64_MAX: no overflow */
	return p->retention_ms > 0 && started_ms > now_ms + p->skew_ms + HORIZON_AHEAD_SLACK_MS;
}

int64_t horizon_record_cutoff_ms(const horizon_policy *p, int64_t now_ms)
{
	return now_ms - p->retention_ms - 2 * p->skew_ms;
}

bool horizon_may_send(const horizon_policy *p, int64_t created_ms, int64_t now_ms)
{
	return p->retention_ms <= 0 || created_ms >= now_ms - p->retention_ms + p->skew_ms;
}

int64_t horizon_saga_cutoff_ms(const horizon_policy *p, int64_t now_ms)
{
	return now_ms - p->retention_ms - 4 * p->skew_ms;
}

int64_t horizon_id_cutoff_ms(const horizon_policy *p, int64_t now_ms)
{
	int64_t id = p->id_retention_ms > 0 ? p->id_retention_ms : p->retention_ms;
	return now_ms - p->retention_ms - id - 4 * p->skew_ms;
}

const char *horizon_policy_check(const horizon_policy *p)
{
	if (p->retention_ms <= 0)
		return "retention must be more than 0";
	if (p->skew_ms < 0)
		return "the clock error must not be negative";
	/* the orchestrator must have time to send: at least 2 x skew */
	if (p->retention_ms < 4 * p->skew_ms)
		return "retention must be at least 4 x the tolerated clock error";
	if (p->id_retention_ms != 0 && p->id_retention_ms < p->retention_ms)
		return "the retention of saga ids must be at least the retention";
	return 0;
}
