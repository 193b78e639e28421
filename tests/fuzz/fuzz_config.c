/* fuzz_config: the configuration file parser (config.h), as a daemon reads
 * its --config file: a table of every option type, the input written to a
 * file and loaded. Properties: nothing crashes; a load that succeeds leaves
 * every integer within its bounds and every string NUL-terminated. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "fuzz.h"
#include "log.h"

typedef struct fuzz_cfg {
	char listen[CONFIG_STR_MAX];
	char db[CONFIG_STR_MAX];
	int64_t workers;
	int64_t timeout;
	bool flag;
} fuzz_cfg;

static const config_opt fuzz_opts[] = {
    {"listen", NULL, CONFIG_STR, "tcp://127.0.0.1:7102", 0, 0, offsetof(fuzz_cfg, listen), "",
        NULL},
    {"db", NULL, CONFIG_STR, "dbname=x", 0, 0, offsetof(fuzz_cfg, db), "", NULL},
    {"workers", NULL, CONFIG_INT, "2", 1, 64, offsetof(fuzz_cfg, workers), "", NULL},
    {"timeout", NULL, CONFIG_INT, "5000", 0, 3600000, offsetof(fuzz_cfg, timeout), "", "MS"},
    {"flag", NULL, CONFIG_BOOL, "false", 0, 0, offsetof(fuzz_cfg, flag), "", NULL},
};

static char fuzz_path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	log_init("fuzz_config", LOG_LEVEL_ERROR);
	snprintf(fuzz_path, sizeof fuzz_path, "/tmp/fuzz_config.%d", (int)getpid());
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	FILE *f = fopen(fuzz_path, "wb");
	if (f == NULL)
		return 0;
	fwrite(data, 1, size, f);
	fclose(f);
	char flag[] = "--config";
	char *argv[] = {(char *)"fuzz_config", flag, fuzz_path, NULL};
	fuzz_cfg c;
	memset(&c, 0x5a, sizeof c);
	int rc = config_load(fuzz_opts, sizeof fuzz_opts / sizeof fuzz_opts[0], &c, 3, argv,
	    "fuzz_config [options]", "", NULL, NULL);
	if (rc == 0) {
		fuzz_check(c.workers >= 1 && c.workers <= 64, "workers within bounds");
		fuzz_check(c.timeout >= 0 && c.timeout <= 3600000, "timeout within bounds");
		fuzz_check(memchr(c.listen, '\0', sizeof c.listen) != NULL
		        && memchr(c.db, '\0', sizeof c.db) != NULL,
		    "strings NUL-terminated");
	}
	unlink(fuzz_path);
	return 0;
}
