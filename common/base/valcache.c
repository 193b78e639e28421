#include "valcache.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <uthash.h>

/* One key: its value when `known`, whether a transaction holds it, and
 * whether the locking path committed it while it was held (`overtaken`). */
typedef struct valcache_ent {
	char key[VALCACHE_KEY_MAX + 1];
	int64_t val;
	bool known;
	bool claimed;
	bool overtaken;
	UT_hash_handle hh;
} valcache_ent;

struct valcache {
	pthread_mutex_t mtx;
	valcache_ent *by_key; /* uthash head */
	size_t n, max;
};

/* The most keys one claim may hold (a batch touches at most RPC_BATCH_MAX
 * rows). */
#define VALCACHE_CLAIM_MAX 128

int valcache_new(valcache **out, size_t max_keys)
{
	if (max_keys < 1 || max_keys > 10000000)
		return -EINVAL;
	valcache *c = calloc(1, sizeof *c);
	if (c == NULL)
		return -ENOMEM;
	if (pthread_mutex_init(&c->mtx, NULL) != 0) {
		free(c);
		return -ENOMEM;
	}
	c->max = max_keys;
	*out = c;
	return 0;
}

void valcache_free(valcache *c)
{
	if (c == NULL)
		return;
	valcache_ent *e, *tmp;
	HASH_ITER(hh, c->by_key, e, tmp)
	{
		HASH_DEL(c->by_key, e);
		free(e);
	}
	pthread_mutex_destroy(&c->mtx);
	free(c);
}

static valcache_ent *valcache_find(valcache *c, const char *key)
{
	valcache_ent *e = NULL;
	if (strlen(key) <= VALCACHE_KEY_MAX)
		HASH_FIND_STR(c->by_key, key, e);
	return e;
}

bool valcache_claim(valcache *c, const char *const *keys, size_t n, int64_t *vals)
{
	if (n < 1 || n > VALCACHE_CLAIM_MAX)
		return false;
	valcache_ent *ents[VALCACHE_CLAIM_MAX];
	bool ok = true;
	pthread_mutex_lock(&c->mtx);
	for (size_t i = 0; i < n && ok; i++) {
		ents[i] = valcache_find(c, keys[i]);
		ok = ents[i] != NULL && ents[i]->known && !ents[i]->claimed;
	}
	for (size_t i = 0; i < n && ok; i++) {
		ents[i]->claimed = true;
		vals[i] = ents[i]->val;
	}
	pthread_mutex_unlock(&c->mtx);
	return ok;
}

void valcache_release(valcache *c, const char *const *keys, size_t n, const int64_t *vals)
{
	pthread_mutex_lock(&c->mtx);
	for (size_t i = 0; i < n; i++) {
		valcache_ent *e = valcache_find(c, keys[i]);
		if (e == NULL)
			continue; /* never claimed: nothing to end */
		e->claimed = false;
		/* a value the locking path committed during the claim may be
		 * newer than the claim's own: then neither is kept */
		e->known = vals != NULL && !e->overtaken;
		e->overtaken = false;
		if (e->known)
			e->val = vals[i];
	}
	pthread_mutex_unlock(&c->mtx);
}

void valcache_learn(valcache *c, const char *const *keys, size_t n, const int64_t *vals)
{
	pthread_mutex_lock(&c->mtx);
	for (size_t i = 0; i < n; i++) {
		valcache_ent *e = valcache_find(c, keys[i]);
		if (e == NULL) {
			if (strlen(keys[i]) > VALCACHE_KEY_MAX || c->n >= c->max)
				continue;
			e = calloc(1, sizeof *e);
			if (e == NULL)
				continue;
			strcpy(e->key, keys[i]);
			HASH_ADD_STR(c->by_key, key, e);
			c->n++;
		}
		if (e->claimed) {
			/* which of the two commits came last is unknown here: the
			 * claim's release forgets the key */
			e->overtaken = true;
			continue;
		}
		e->val = vals[i];
		e->known = true;
	}
	pthread_mutex_unlock(&c->mtx);
}
