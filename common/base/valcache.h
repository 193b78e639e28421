/* valcache: what a participant last committed for each row it owns (a
 * sku's on-hand units, an account's balance), shared by the daemon's worker
 * threads, for the one-round-trip path of docs/architecture.md
 * ("Participants: the one-round-trip path").
 *
 * A value here is a guess, never the truth: the path that uses it writes
 * its rows only `WHERE value = the guess`, so a wrong guess fails that
 * transaction (the daemon then takes the locking path) and never changes
 * an outcome. A worker claims the keys of a transaction before it guesses,
 * so two workers of one daemon never guess on the same row at once (the
 * second takes the locking path instead of failing its check).
 *
 * Thread-safe (one mutex). Keys are NUL-terminated strings of at most
 * VALCACHE_KEY_MAX bytes; longer keys are never cached.
 */
#ifndef SAGA_VALCACHE_H
#define SAGA_VALCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VALCACHE_KEY_MAX 128 /* bytes of a key, without the NUL */

typedef struct valcache valcache;

/* valcache_new makes an empty cache of at most `max_keys` keys (1..10^7;
 * once full, new keys are not learnt). Returns 0 and *out, -EINVAL or
 * -ENOMEM. Free with valcache_free. */
int valcache_new(valcache **out, size_t max_keys) __attribute__((warn_unused_result));

/* valcache_free frees the cache; no call may be running on it. NULL is
 * ignored. */
void valcache_free(valcache *c);

/* valcache_claim claims the `n` distinct keys (1..128) for one transaction
 * when every one has a value and none is claimed: it then fills vals[i]
 * with key i's value and returns true. Otherwise it claims nothing and
 * returns false. A claim ends with valcache_release. */
bool valcache_claim(valcache *c, const char *const *keys, size_t n, int64_t *vals);

/* valcache_release ends the claim of valcache_claim on the same `n` keys:
 * with `vals` (the values the transaction committed) they become the
 * keys' values, except a key valcache_learn was told of during the claim;
 * with NULL (the transaction failed, or its outcome is unknown), and for
 * such a key, the key is forgotten, so the next transaction on it takes the
 * locking path and learns it again. */
void valcache_release(valcache *c, const char *const *keys, size_t n, const int64_t *vals);

/* valcache_learn records vals[i] as the value of keys[i] (committed by the
 * locking path) for every key that is not claimed; a claimed key is marked
 * so that its claim's release forgets it (which of the two commits came
 * last is unknown). Never fails: a key it has no room for is not learnt. */
void valcache_learn(valcache *c, const char *const *keys, size_t n, const int64_t *vals);

#endif
