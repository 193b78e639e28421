/* saga_def_load: a definition's text through libfyaml's parser into a
 * document (one only, syntax errors with their line and column), walked by
 * saga_def_parse.c; and a file read whole, with its size bounded. */
#include "saga_def_int.h"

#include "valid.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* sd_syntax turns libfyaml's first collected error into ours. */
static void sd_syntax(sd_ctx *c, struct fy_diag *diag)
{
	void *it = NULL;
	struct fy_diag_error *e = diag != NULL ? fy_diag_errors_iterate(diag, &it) : NULL;
	saga_def_pos p = {1, 1};
	if (e == NULL) {
		sd_err(c->err, c->errlen, c->file, p, NULL, "not a YAML document");
		return;
	}
	/* the collected errors' line and column are 1-based already */
	p.line = e->line > 0 ? e->line : 1;
	p.column = e->column > 0 ? e->column : 1;
	sd_err(c->err, c->errlen, c->file, p, NULL, "%s", e->msg != NULL ? e->msg : "syntax error");
}

/* sd_one_document checks that the stream ends after its first document:
 * a second one (after `---` or `...`), broken or not, is refused at its
 * start. Returns 0, or -1 with the error. */
static int sd_one_document(sd_ctx *c, struct fy_parser *fyp)
{
	struct fy_event *ev = fy_parser_parse(fyp);
	if (ev != NULL && ev->type == FYET_STREAM_END) {
		fy_parser_event_free(fyp, ev);
		return 0;
	}
	saga_def_pos p = {1, 1};
	const struct fy_mark *m = ev != NULL ? fy_event_start_mark(ev) : NULL;
	if (m != NULL) {
		p.line = m->line + 1;
		p.column = m->column + 1;
	}
	if (ev != NULL)
		fy_parser_event_free(fyp, ev);
	sd_err(c->err, c->errlen, c->file, p, NULL,
	    "a second YAML document (one definition file holds one)");
	return -1;
}

/* sd_plain checks every node under n (depth: its depth) before the walk:
 * no alias and no anchor (a definition is read as written: the walk reads
 * an alias node's own text, `*name`, not its anchor's value, so a constant
 * written as an alias would be sent as the anchor's name), and no scalar
 * with a NUL in it (the walk reads NUL-terminated text: "S1\0junk" would be
 * checked and sent as "S1"). Returns 0, or -1 with the error at the node. */
static int sd_plain(sd_ctx *c, struct fy_node *n, int depth)
{
	if (n == NULL)
		return 0;
	if (depth > 64)
		return sd_fail(c, n, NULL, "nested too deep (64 levels at most)");
	if (fy_node_is_alias(n))
		return sd_fail(c, n, NULL,
		    "an alias: anchors and aliases are not read in a definition, write the value "
		    "out");
	size_t alen = 0;
	const char *anchor = NULL;
	struct fy_anchor *fa = fy_node_get_anchor(n);
	if (fa != NULL)
		anchor = fy_anchor_get_text(fa, &alen);
	if (anchor != NULL)
		return sd_fail(c, n, NULL,
		    "an anchor: anchors and aliases are not read in a definition, write the value "
		    "out");
	if (fy_node_is_scalar(n)) {
		size_t len = 0;
		const char *text = fy_node_get_scalar(n, &len);
		if (text != NULL && memchr(text, '\0', len) != NULL)
			return sd_fail(c, n, NULL, "a NUL character in a value");
		return 0;
	}
	void *it = NULL;
	if (fy_node_is_mapping(n)) {
		struct fy_node_pair *pr;
		while ((pr = fy_node_mapping_iterate(n, &it)) != NULL)
			if (sd_plain(c, fy_node_pair_key(pr), depth + 1) != 0
			    || sd_plain(c, fy_node_pair_value(pr), depth + 1) != 0)
				return -1;
		return 0;
	}
	struct fy_node *item;
	while ((item = fy_node_sequence_iterate(n, &it)) != NULL)
		if (sd_plain(c, item, depth + 1) != 0)
			return -1;
	return 0;
}

int saga_def_parse(
    const char *text, size_t len, const char *name, saga_defs **out, char *err, size_t errlen)
{
	*out = NULL;
	sd_ctx c = {name, err, errlen, calloc(1, sizeof(saga_defs))};
	if (c.d == NULL || (c.d->file = strdup(name)) == NULL) {
		saga_defs_free(c.d);
		return sd_oom(&c);
	}
	if (!valid_utf8(text, len)) {
		/* libfyaml reads some bytes that are not UTF-8 (in a comment);
		 * saga_definitions.body, a text column, would refuse them */
		/* the first line that is not (a newline is never inside a
		 * character) */
		size_t from = 0;
		int line = 1;
		for (;;) {
			const char *nl = memchr(text + from, '\n', len - from);
			size_t end = nl != NULL ? (size_t)(nl - text) : len;
			if (!valid_utf8(text + from, end - from) || nl == NULL)
				break;
			from = end + 1;
			line++;
		}
		saga_def_pos p = {line, 1};
		sd_err(err, errlen, name, p, NULL, "not UTF-8 (a definition file is UTF-8 text)");
		saga_defs_free(c.d);
		return -1;
	}
	struct fy_diag_cfg dcfg;
	fy_diag_cfg_default(&dcfg);
	dcfg.fp = NULL;
	struct fy_diag *diag = fy_diag_create(&dcfg);
	if (diag != NULL)
		fy_diag_set_collect_errors(diag, true);
	/* duplicate keys are found while walking (sd_keys, sd_input, the
	 * named mappings): libfyaml's check is quadratic in a mapping's size */
	struct fy_parse_cfg cfg = {.flags = FYPCF_QUIET | FYPCF_ALLOW_DUPLICATE_KEYS, .diag = diag};
	struct fy_parser *fyp = fy_parser_create(&cfg);
	struct fy_document *doc = NULL;
	if (fyp != NULL && fy_parser_set_string(fyp, text, len) == 0)
		doc = fy_parse_load_document(fyp);
	int rc = -1;
	if (fyp == NULL)
		sd_oom(&c);
	else if (doc == NULL || fy_document_root(doc) == NULL)
		sd_syntax(&c, diag);
	else if (sd_one_document(&c, fyp) == 0 && sd_plain(&c, fy_document_root(doc), 0) == 0
	    && sd_root(&c, fy_document_root(doc)) == 0)
		rc = saga_def_validate(c.d, err, errlen);
	if (doc != NULL)
		fy_parse_document_destroy(fyp, doc);
	if (fyp != NULL)
		fy_parser_destroy(fyp);
	if (diag != NULL)
		fy_diag_destroy(diag);
	if (rc != 0) {
		saga_defs_free(c.d);
		return -1;
	}
	*out = c.d;
	return 0;
}

int saga_def_read(const char *path, char **text, size_t *len, char *err, size_t errlen)
{
	*text = NULL;
	*len = 0;
	struct stat st;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		if (errlen > 0)
			snprintf(err, errlen, "%s: is a directory", path);
		return -1;
	}
	/* a FIFO or a device would block the start, or never end */
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		if (errlen > 0)
			snprintf(err, errlen, "%s: not a regular file", path);
		return -1;
	}
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t n = 0, cap = 0;
	int e = f == NULL ? errno : 0;
	/* the buffer grows to SAGA_DEF_MAX_FILE + 1: a file that fills it is
	 * too large, one of exactly the cap is read to its end */
	while (f != NULL && e == 0) {
		if (n == cap) {
			if (cap > SAGA_DEF_MAX_FILE) {
				e = EFBIG;
				break;
			}
			size_t ncap = cap ? 2 * cap : 8192;
			if (ncap > SAGA_DEF_MAX_FILE)
				ncap = SAGA_DEF_MAX_FILE + 1;
			char *nb = realloc(buf, ncap);
			if (nb == NULL) {
				e = ENOMEM;
				break;
			}
			buf = nb;
			cap = ncap;
		}
		size_t r = fread(buf + n, 1, cap - n, f);
		n += r;
		if (r == 0) {
			e = ferror(f) ? EIO : 0;
			break;
		}
	}
	if (f != NULL)
		fclose(f);
	if (e == 0 && (n == cap || buf == NULL)) { /* room for the NUL */
		char *nb = realloc(buf, n + 1);
		if (nb == NULL)
			e = ENOMEM;
		else
			buf = nb;
	}
	if (e != 0) {
		free(buf);
		if (errlen > 0 && e == EFBIG)
			snprintf(err, errlen,
			    "%s: larger than 1 MiB (a definition file is a few KB)", path);
		else if (errlen > 0)
			snprintf(err, errlen, "%s: %s", path, strerror(e));
		return -1;
	}
	buf[n] = '\0';
	*text = buf;
	*len = n;
	return 0;
}

int saga_def_load(const char *path, saga_defs **out, char *err, size_t errlen)
{
	*out = NULL;
	char *buf = NULL;
	size_t n = 0;
	if (saga_def_read(path, &buf, &n, err, errlen) != 0)
		return -1;
	int rc = saga_def_parse(buf, n, path, out, err, errlen);
	free(buf);
	return rc;
}
