/* replay: the main of a fuzz target outside libFuzzer (fuzz.h). Runs every
 * file named, and every file in every folder named (not recursive), through
 * LLVMFuzzerTestOneInput once, in name order. Exit 0 when all ran (a
 * broken property aborts), 2 when a path cannot be read. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

/* the targets that have no LLVMFuzzerInitialize get this one */
__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	return 0;
}

static int replay_file(const char *path, size_t *runs)
{
	FILE *f = fopen(path, "rb");
	if (f == NULL) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return 2;
	}
	size_t cap = 4096, len = 0;
	uint8_t *buf = malloc(cap);
	size_t got;
	while (buf != NULL && (got = fread(buf + len, 1, cap - len, f)) > 0) {
		len += got;
		if (len == cap) {
			uint8_t *nb = realloc(buf, cap * 2);
			if (nb == NULL) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = nb;
			cap *= 2;
		}
	}
	fclose(f);
	if (buf == NULL) {
		fprintf(stderr, "replay: %s: out of memory\n", path);
		return 2;
	}
	/* an exact-size copy, so that ASan sees a read past the input */
	uint8_t *exact = malloc(len ? len : 1);
	if (exact == NULL) {
		free(buf);
		return 2;
	}
	memcpy(exact, buf, len);
	free(buf);
	LLVMFuzzerTestOneInput(exact, len);
	free(exact);
	(*runs)++;
	return 0;
}

static int replay_by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

int main(int argc, char **argv)
{
	LLVMFuzzerInitialize(&argc, &argv);
	size_t runs = 0;
	int rc = 0;
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) != 0) {
			fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
			return 2;
		}
		if (!S_ISDIR(st.st_mode)) {
			rc |= replay_file(argv[i], &runs);
			continue;
		}
		struct dirent **names = NULL;
		int n = scandir(argv[i], &names, NULL, replay_by_name);
		if (n < 0) {
			fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
			return 2;
		}
		for (int k = 0; k < n; k++) {
			if (names[k]->d_name[0] != '.') {
				char path[4096];
				snprintf(path, sizeof path, "%s/%s", argv[i], names[k]->d_name);
				rc |= replay_file(path, &runs);
			}
			free(names[k]);
		}
		free(names);
	}
	printf("replay: %zu inputs run\n", runs);
	return rc;
}
