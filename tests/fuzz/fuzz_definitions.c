/* fuzz_definitions: a saga definition file (orchestrator/sagadef), as
 * orchestratord reads --definitions and a stored version's body, and
 * sagactl definitions check reads a file. Properties: nothing crashes or
 * leaks; a refusal's text is one NUL-terminated line; a definition that
 * parses has at least one type, each type a version and a flow, and every
 * plan of every step (command and compensation) builds a request from a
 * default input that packs; the runnability check answers either way. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "saga_def.h"
#include "saga_def_cmd.h"

static void fuzz_plans(const saga_defs *d, const saga_def_type *t)
{
	/* a default input: every field at its default */
	saga_def_req input;
	protobuf_c_message_init(t->input_desc, input.bytes);
	for (size_t i = 0; i < t->nsteps; i++) {
		for (int comp = 0; comp < 2; comp++) {
			saga_def_cmd c;
			char err[256];
			if (saga_def_cmd_make(d, t, i, comp != 0, &c, err, sizeof err) != 0) {
				/* only a compensation a step does not have, or a request
				 * larger than a plan holds */
				fuzz_check(comp == 1 || strstr(err, "larger than a plan") != NULL,
				    "a valid step's command has no plan");
				continue;
			}
			saga_def_req req;
			saga_def_cmd_build(&c, &input.base, "5eed0000-0000-4000-8000-000000000001",
			    1796256000000, &req);
			size_t n = protobuf_c_message_get_packed_size(&req.base);
			uint8_t *buf = malloc(n + 1);
			if (buf != NULL) {
				protobuf_c_message_pack(&req.base, buf);
				free(buf);
			}
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	saga_defs *d = NULL;
	char err[512];
	memset(err, 'x', sizeof err);
	int rc = saga_def_parse((const char *)data, size, "fuzz.yaml", &d, err, sizeof err);
	if (rc != 0) {
		fuzz_check(d == NULL, "a refusal left definitions");
		fuzz_check(memchr(err, '\0', sizeof err) != NULL, "a refusal not NUL-terminated");
		return 0;
	}
	fuzz_check(d != NULL && d->ntypes >= 1, "a definition without a type");
	for (size_t i = 0; i < d->ntypes; i++) {
		const saga_def_type *t = &d->types[i];
		unsigned char v[32];
		char hex[65];
		fuzz_check(saga_def_version(d, t, v, hex) == 0 && strlen(hex) == 64, "no version");
		saga_flow f;
		fuzz_check(saga_def_flow(t, &f) == 0, "a valid type without a flow");
		fuzz_check(t->input_desc != NULL, "a valid type without its input message");
		if (t->input_desc->sizeof_message <= SAGA_DEF_REQ_SIZE)
			fuzz_plans(d, t);
	}
	char why[512];
	(void)saga_def_runnable(d, saga_def_order_links, SAGA_DEF_ORDER_NLINKS, why, sizeof why);
	saga_defs_free(d);
	return 0;
}
