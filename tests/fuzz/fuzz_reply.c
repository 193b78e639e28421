/* fuzz_reply: what a client (sagactl, the orchestrator's link to each
 * participant) does with a reply frame from a server it dialled, which may
 * be a rogue one (rpc_decode_reply, rpc_client.c). Properties: it returns
 * 0 or -EBADMSG (-ENOMEM aside); on 0 the code is any int32 and the reason
 * and message are UTF-8 and NUL-terminated. */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "rpc.h"
#include "valid.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	rpc_result res;
	int rc = rpc_decode_reply(data, size, &res);
	fuzz_check(rc == 0 || rc == -EBADMSG || rc == -ENOMEM, "rpc_decode_reply's return");
	if (rc == 0) {
		fuzz_check(memchr(res.reason, '\0', sizeof res.reason) != NULL
		        && valid_utf8(res.reason, strlen(res.reason)),
		    "the reason is UTF-8");
		fuzz_check(memchr(res.message, '\0', sizeof res.message) != NULL
		        && valid_utf8(res.message, strlen(res.message)),
		    "the message is UTF-8");
		rpc_result_clear(&res);
	}
	return 0;
}
