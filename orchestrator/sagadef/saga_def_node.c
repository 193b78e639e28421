/* saga_def_node: the helpers the walk of a definition's tree shares
 * (saga_def_parse.c): positions of nodes for the errors, the error
 * writers, a mapping's keys checked against a list, scalars as strings and
 * integers, names. */
#include "saga_def_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sd_err(char *err, size_t errlen, const char *file, saga_def_pos at, const char *path,
    const char *fmt, ...)
{
	if (errlen == 0)
		return;
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (path != NULL)
		snprintf(err, errlen, "%s:%d:%d: %s: %s", file, at.line, at.column, path, msg);
	else
		snprintf(err, errlen, "%s:%d:%d: %s", file, at.line, at.column, msg);
}

int sd_refuse(char *err, size_t errlen, const char *fmt, ...)
{
	if (errlen > 0) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -1;
}

static bool sd_name_of(const char *s, char lo, char hi)
{
	size_t n = strlen(s);
	if (n == 0 || n > SAGA_DEF_NAME_MAX || s[0] < lo || s[0] > hi)
		return false;
	for (size_t i = 1; i < n; i++) {
		char ch = s[i];
		if (!((ch >= lo && ch <= hi) || (ch >= '0' && ch <= '9') || ch == '_'))
			return false;
	}
	return true;
}

bool sd_lower_name(const char *s)
{
	return sd_name_of(s, 'a', 'z');
}

bool sd_upper_name(const char *s)
{
	return sd_name_of(s, 'A', 'Z');
}

/* sd_key_of: the key whose value is the node n in its parent mapping, or
 * NULL (the root, a sequence's item). */
struct fy_node *sd_key_of(struct fy_node *n)
{
	struct fy_node *parent = fy_node_get_parent(n);
	if (parent == NULL || !fy_node_is_mapping(parent))
		return NULL;
	void *it = NULL;
	struct fy_node_pair *pr;
	while ((pr = fy_node_mapping_iterate(parent, &it)) != NULL)
		if (fy_node_pair_value(pr) == n)
			return fy_node_pair_key(pr);
	return NULL;
}

/* sd_pos: a node's position. libfyaml 0.7 keeps marks on tokens: a scalar
 * has its own; a mapping or sequence is placed at its first key or item,
 * an empty one at its key (1:1 when it has none). */
saga_def_pos sd_pos(struct fy_node *n)
{
	saga_def_pos p = {1, 1};
	for (int depth = 0; n != NULL && depth < 64; depth++) {
		void *it = NULL;
		if (!fy_node_is_scalar(n)
		    && (fy_node_is_mapping(n) ? fy_node_mapping_item_count(n)
		                              : fy_node_sequence_item_count(n))
		        == 0) {
			n = sd_key_of(n);
			continue;
		}
		if (fy_node_is_scalar(n)) {
			struct fy_token *t = fy_node_get_scalar_token(n);
			const struct fy_mark *m = t != NULL ? fy_token_start_mark(t) : NULL;
			if (m != NULL) {
				p.line = m->line + 1;
				p.column = m->column + 1;
			}
			return p;
		}
		if (fy_node_is_mapping(n)) {
			struct fy_node_pair *pr = fy_node_mapping_iterate(n, &it);
			n = pr != NULL ? fy_node_pair_key(pr) : NULL;
		} else {
			n = fy_node_sequence_iterate(n, &it);
		}
	}
	return p;
}

int sd_fail(sd_ctx *c, struct fy_node *n, const char *path, const char *msg)
{
	sd_err(c->err, c->errlen, c->file, sd_pos(n), path, "%s", msg);
	return -1;
}

/* sd_dup: the error for a key already in its mapping (libfyaml's check is
 * off: it scans the whole mapping per key), placed at the second key. */
int sd_dup(sd_ctx *c, struct fy_node *k)
{
	sd_err(c->err, c->errlen, c->file, sd_pos(k), NULL, "duplicate key");
	return -1;
}

int sd_oom(sd_ctx *c)
{
	saga_def_pos p = {1, 1};
	sd_err(c->err, c->errlen, c->file, p, NULL, "out of memory");
	return -1;
}

/* sd_keys checks that `map` is a mapping whose keys are all in `keys`
 * (NULL-terminated, at most 32), each at most once, and sets vals[i] to the value of keys[i] (NULL
 * when absent). Returns 0, or -1 with the error. */
int sd_keys(sd_ctx *c, struct fy_node *map, const char *path, const char *const *keys,
    struct fy_node **vals)
{
	if (map == NULL || !fy_node_is_mapping(map))
		return sd_fail(c, map, path, "a mapping expected");
	size_t nk = 0;
	while (keys[nk] != NULL)
		vals[nk++] = NULL;
	uint32_t seen = 0;
	void *it = NULL;
	struct fy_node_pair *pr;
	while ((pr = fy_node_mapping_iterate(map, &it)) != NULL) {
		struct fy_node *k = fy_node_pair_key(pr);
		const char *ks = fy_node_is_scalar(k) ? fy_node_get_scalar0(k) : NULL;
		size_t i = 0;
		while (ks != NULL && i < nk && strcmp(keys[i], ks) != 0)
			i++;
		if (ks == NULL || i == nk) {
			char p[256];
			snprintf(p, sizeof p, "%s%s%s", path != NULL ? path : "",
			    path != NULL ? "." : "", ks != NULL ? ks : "?");
			char msg[320] = "unknown key (one of:";
			for (size_t j = 0; j < nk; j++)
				snprintf(msg + strlen(msg), sizeof msg - strlen(msg), "%s %s",
				    j > 0 ? "," : "", keys[j]);
			snprintf(msg + strlen(msg), sizeof msg - strlen(msg), ")");
			return sd_fail(c, k, p, msg);
		}
		if (seen & (UINT32_C(1) << i))
			return sd_dup(c, k);
		seen |= UINT32_C(1) << i;
		vals[i] = fy_node_pair_value(pr);
	}
	return 0;
}

/* sd_str duplicates the scalar `n` (path names it) into *out. A NULL node
 * with required set is "missing" (placed at `parent`). */
int sd_str(sd_ctx *c, struct fy_node *n, struct fy_node *parent, const char *path, bool required,
    char **out)
{
	*out = NULL;
	if (n == NULL)
		return required ? sd_fail(c, parent, path, "missing") : 0;
	if (!fy_node_is_scalar(n))
		return sd_fail(c, n, path, "a scalar expected");
	const char *s = fy_node_get_scalar0(n);
	if (s == NULL || (*out = strdup(s)) == NULL)
		return sd_oom(c);
	return 0;
}

/* sd_int_or reads a positive integer (at most 10^12) from the scalar n;
 * `what` is the error's text. */
int sd_int_or(sd_ctx *c, struct fy_node *n, const char *path, int64_t *out, const char *what)
{
	const char *s = fy_node_is_scalar(n) ? fy_node_get_scalar0(n) : NULL;
	char *end = NULL;
	errno = 0;
	long long v = s != NULL ? strtoll(s, &end, 10) : 0;
	if (s == NULL || end == s || *end != '\0' || errno != 0 || v < 1 || v > 1000000000000LL)
		return sd_fail(c, n, path, what);
	*out = v;
	return 0;
}

/* sd_int reads a positive integer (at most 10^12) from the scalar n. */
int sd_int(sd_ctx *c, struct fy_node *n, const char *path, int64_t *out)
{
	return sd_int_or(c, n, path, out, "a positive integer expected");
}

char *sd_upper(const char *name, const char *suffix)
{
	size_t n = strlen(name), m = strlen(suffix);
	char *s = malloc(n + m + 1);
	if (s == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++)
		s[i] = (name[i] >= 'a' && name[i] <= 'z') ? (char)(name[i] - 'a' + 'A') : name[i];
	memcpy(s + n, suffix, m + 1);
	return s;
}
