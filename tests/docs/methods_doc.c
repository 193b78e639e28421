/* methods_doc: docs/security.md's roles table, generated from the table of
 * methods (common/authz/methods.h).
 *
 * Usage: methods_doc                  print the table (Markdown)
 *        methods_doc --check FILE     compare it with FILE's table between
 *                                     the lines METHODS_BEGIN and METHODS_END
 *        methods_doc --write FILE     replace FILE's table there by it
 *
 * Exit 0 when printed, equal or written; 1 when --check finds the two
 * differ (it prints the table as it should be); 2 on a usage error or a
 * file that cannot be read or written, or has no markers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "authz.h"
#include "methods.h"

#define METHODS_BEGIN "<!-- methods:begin -->\n"
#define METHODS_END   "<!-- methods:end -->\n"

/* doc_cell is the text of a role's cell: "anyone" for an open method,
 * "yes" for a role that may call it, "" otherwise. */
static const char *doc_cell(unsigned roles, unsigned role)
{
	if (roles & AUTHZ_OPEN)
		return "anyone";
	return (roles & role) ? "yes" : "";
}

/* doc_put writes one cell: "| text " ("| " when text is empty). */
static void doc_put(FILE *f, const char *text)
{
	fprintf(f, text[0] ? "| %s " : "| ", text);
}

/* doc_table writes the Markdown table to `f`: one row per method, in the
 * table's order. */
static void doc_table(FILE *f)
{
	fprintf(f,
	    "| method | orchestrator | admin | client | in a batch frame | HTTP "
	    "(gatewayd) |\n");
	fprintf(f, "|---|---|---|---|---|---|\n");
	for (int i = 0; i < METHOD_COUNT; i++) {
		const method_row *r = &method_table[i];
		fprintf(f, "| `%s/%s` ", r->service, r->name);
		doc_put(f, doc_cell(r->roles, AUTHZ_ORCHESTRATOR));
		doc_put(f, doc_cell(r->roles, AUTHZ_ADMIN));
		doc_put(f, doc_cell(r->roles, AUTHZ_CLIENT));
		doc_put(f, r->batch ? "yes" : "");
		fputs("| ", f);
		if (r->http_path != NULL) {
			fprintf(f, "`%s ", r->http_verb);
			for (const char *p = r->http_path; *p; p++) { /* "*": the saga id */
				if (*p == '*')
					fputs("{id}", f);
				else
					fputc(*p, f);
			}
			fputs("` ", f);
		}
		fputs("|\n", f);
	}
}

/* doc_read returns the whole of file `path` (malloc'd, NUL-terminated), or
 * NULL after printing why. */
static char *doc_read(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (f == NULL) {
		perror(path);
		return NULL;
	}
	size_t cap = 1 << 16, n = 0;
	char *s = malloc(cap);
	size_t k;
	while (s != NULL && (k = fread(s + n, 1, cap - n - 1, f)) > 0) {
		n += k;
		if (n + 1 == cap) {
			char *t = realloc(s, cap *= 2);
			if (t == NULL)
				free(s);
			s = t;
		}
	}
	fclose(f);
	if (s == NULL) {
		fprintf(stderr, "%s: out of memory\n", path);
		return NULL;
	}
	s[n] = '\0';
	return s;
}

int main(int argc, char **argv)
{
	if (argc == 1) {
		doc_table(stdout);
		return 0;
	}
	if (argc != 3 || (strcmp(argv[1], "--check") != 0 && strcmp(argv[1], "--write") != 0)) {
		fprintf(stderr, "usage: methods_doc [--check FILE | --write FILE]\n");
		return 2;
	}
	char *doc = doc_read(argv[2]);
	if (doc == NULL)
		return 2;
	char *begin = strstr(doc, METHODS_BEGIN);
	char *end = begin ? strstr(begin, METHODS_END) : NULL;
	if (end == NULL) {
		fprintf(
		    stderr, "%s: no table between %s and %s", argv[2], METHODS_BEGIN, METHODS_END);
		free(doc);
		return 2;
	}
	begin += strlen(METHODS_BEGIN);
	char *want = NULL;
	size_t want_len = 0;
	FILE *m = open_memstream(&want, &want_len);
	if (m == NULL) {
		perror("open_memstream");
		free(doc);
		return 2;
	}
	doc_table(m);
	fclose(m);
	int rc = 0;
	if (strcmp(argv[1], "--check") == 0) {
		if ((size_t)(end - begin) != want_len || memcmp(begin, want, want_len) != 0) {
			fprintf(stderr,
			    "%s: the methods table differs from common/authz/methods.h; it should "
			    "read (or run: methods_doc --write %s):\n%s",
			    argv[2], argv[2], want);
			rc = 1;
		}
	} else {
		FILE *f = fopen(argv[2], "wb");
		if (f == NULL) {
			perror(argv[2]);
			rc = 2;
		} else {
			fwrite(doc, 1, (size_t)(begin - doc), f);
			fwrite(want, 1, want_len, f);
			fputs(end, f);
			if (fclose(f) != 0) {
				perror(argv[2]);
				rc = 2;
			}
		}
	}
	free(want);
	free(doc);
	return rc;
}
