/* URL lists and the replicas of one service (rpc.h: rpc_urls_parse,
 * rpc_client_open_urls), against in-process servers on loopback:
 *   - the parser: trimming, the checks of every entry, the errors that
 *     name the bad one, the TLS helpers;
 *   - spreading: one client dialing two servers gets calls answered by both;
 *   - failover, the nng 1.5.2 behaviour the orchestrator relies on: calls
 *     in flight on a connection that closes (server "a", a child process
 *     holding them, killed with SIGKILL) are re-sent at once to the other
 *     server when the client was opened with `failover` (a resend time is
 *     set), and fail UNAVAILABLE (NNG_ECONNRESET) without it.
 * Each server answers every call ABORTED with its own name as the reason;
 * "/t.T/Slow" makes server "a" hold the call 10 s first (it says "slow" on
 * its stdout when it begins one). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <nng/nng.h>
#include <nng/supplemental/util/platform.h>

#include "rpc.h"
#include "sagas/v1/orchestrator.pb-c.h"
#include "unit_server.h"

/* One test server: its name. */
typedef struct srv_app {
	const char *name;
} srv_app;

/* srv_handle answers every call ABORTED with the server's name as the
 * reason, after holding "/t.T/Slow" 10 s on server "a" (which says "slow"
 * on its stdout first). */
static void srv_handle(void *app, void *worker, const rpc_request *call, rpc_reply *reply)
{
	(void)worker;
	srv_app *a = app;
	if (strcmp(call->method, "/t.T/Slow") == 0 && strcmp(a->name, "a") == 0) {
		printf("slow\n");
		fflush(stdout);
		nng_msleep(10000);
	}
	rpc_reply_error(reply, RPC_ABORTED, a->name, "served by %s", a->name);
}

static const rpc_server_ops srv_ops = {.handle = srv_handle};

static void test_parse(void **state)
{
	(void)state;
	rpc_urls u;
	char err[1024];
	assert_int_equal(
	    rpc_urls_parse(&u, " tcp://127.0.0.1:1 ,tcp://127.0.0.1:2", err, sizeof err), 0);
	assert_int_equal(u.n, 2);
	assert_string_equal(u.url[0], "tcp://127.0.0.1:1");
	assert_string_equal(u.url[1], "tcp://127.0.0.1:2");
	char text[128];
	assert_string_equal(
	    rpc_urls_text(&u, text, sizeof text), "tcp://127.0.0.1:1,tcp://127.0.0.1:2");
	assert_null(rpc_urls_tls_entry(&u));
	assert_false(rpc_urls_all_tls(&u));
	rpc_urls_free(&u);

	assert_int_equal(rpc_urls_parse(&u, "foo", err, sizeof err), -EINVAL);
	assert_string_equal(
	    err, "\"foo\": expected tls+tcp://HOST:PORT, tcp://HOST:PORT or ipc://PATH");
	rpc_urls_free(&u);
	assert_int_equal(rpc_urls_parse(&u, "tcp://127.0.0.1:1,foo", err, sizeof err), -EINVAL);
	assert_string_equal(err,
	    "\"foo\" (entry 2 of 2): expected tls+tcp://HOST:PORT, tcp://HOST:PORT or ipc://PATH");
	rpc_urls_free(&u);
	assert_int_equal(
	    rpc_urls_parse(&u, "tcp://127.0.0.1:1,,ipc:///x", err, sizeof err), -EINVAL);
	assert_string_equal(err, "\"\" (entry 2 of 3): empty");
	rpc_urls_free(&u);
	assert_int_equal(rpc_urls_parse(&u, "", err, sizeof err), -EINVAL);
	assert_string_equal(
	    err, "\"\": expected tls+tcp://HOST:PORT, tcp://HOST:PORT or ipc://PATH");
	rpc_urls_free(&u);
	assert_int_equal(
	    rpc_urls_parse(&u, "ipc:///a,tcp://127.0.0.1:1,ipc:///a", err, sizeof err), -EINVAL);
	assert_string_equal(err, "\"ipc:///a\" (entry 3 of 3): the same URL as entry 1");
	rpc_urls_free(&u);
	char many[1024] = "";
	for (int i = 0; i <= RPC_URLS_MAX; i++)
		snprintf(many + strlen(many), sizeof many - strlen(many), "%stcp://127.0.0.1:%d",
		    i ? "," : "", i + 1);
	assert_int_equal(rpc_urls_parse(&u, many, err, sizeof err), -EINVAL);
	assert_non_null(strstr(err, ": 17 URLs: at most 16"));
	rpc_urls_free(&u);

	assert_int_equal(
	    rpc_urls_parse(&u, "tcp://127.0.0.1:1,tls+tcp://localhost:2", err, sizeof err), 0);
	assert_string_equal(rpc_urls_tls_entry(&u), "tls+tcp://localhost:2");
	assert_false(rpc_urls_all_tls(&u));
	/* a TLS entry without its configuration is refused */
	rpc_client *c = NULL;
	assert_int_equal(rpc_client_open_urls(&c, &u, NULL), -EINVAL);
	tls_files none = {.cert = "", .key = "", .ca = "/nonexistent/ca.pem"};
	assert_int_not_equal(rpc_urls_tls(&u, &none, err, sizeof err), 0);
	assert_non_null(strstr(err, "tls+tcp://localhost:2 (entry 2 of 2): "));
	rpc_urls_free(&u);
	rpc_urls_free(&u); /* twice, and a zeroed one: ignored */
}

/* "?server_name=NAME" on a TLS entry: the name checked, off the URL nng
 * dials; refused on a plain URL, with another query, or a bad name. */
static void test_server_name(void **state)
{
	(void)state;
	rpc_urls u;
	char err[1024];
	assert_int_equal(
	    rpc_urls_parse(&u, "tls+tcp://127.0.0.1:1?server_name=paymentd,tls+tcp://payment2:2",
	        err, sizeof err),
	    0);
	assert_int_equal(u.n, 2);
	assert_string_equal(u.url[0], "tls+tcp://127.0.0.1:1");
	assert_string_equal(u.server_name[0], "paymentd");
	assert_string_equal(u.url[1], "tls+tcp://payment2:2");
	assert_null(u.server_name[1]);
	rpc_urls_free(&u);
	/* the same address under two names is still the same URL */
	assert_int_equal(
	    rpc_urls_parse(&u,
	        "tls+tcp://127.0.0.1:1?server_name=a,tls+tcp://127.0.0.1:1?server_name=b", err,
	        sizeof err),
	    -EINVAL);
	assert_non_null(strstr(err, "the same URL as entry 1"));
	rpc_urls_free(&u);
	assert_int_equal(
	    rpc_urls_parse(&u, "tcp://127.0.0.1:1?server_name=paymentd", err, sizeof err), -EINVAL);
	assert_string_equal(
	    err, "\"tcp://127.0.0.1:1?server_name=paymentd\": server_name= is for tls+tcp:// URLs");
	rpc_urls_free(&u);
	assert_int_equal(
	    rpc_urls_parse(&u, "tls+tcp://127.0.0.1:1?name=x", err, sizeof err), -EINVAL);
	assert_non_null(strstr(err, "the only query a URL takes is ?server_name=NAME"));
	rpc_urls_free(&u);
	const char *bad[] = {"tls+tcp://h:1?server_name=", "tls+tcp://h:1?server_name=a/b",
	    "tls+tcp://h:1?server_name=-x", "tls+tcp://h:1?server_name=a&b=c"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		assert_int_equal(rpc_urls_parse(&u, bad[i], err, sizeof err), -EINVAL);
		assert_non_null(strstr(err, "bad server_name"));
		rpc_urls_free(&u);
	}
	assert_true(tls_name_ok("stock2.sagas.example"));
	assert_false(tls_name_ok(".x"));
	assert_false(tls_name_ok(NULL));
}

/* Two servers "a" and "b" and their URLs. */
typedef struct pair {
	srv_app app[2];
	rpc_server *srv[2];
	char url[2][64];
	char list[160];
} pair;

static void pair_start(pair *p)
{
	memset(p, 0, sizeof *p);
	p->app[0].name = "a"; /* never sent a slow call here */
	p->app[1].name = "b";
	for (int i = 0; i < 2; i++)
		p->srv[i]
		    = unit_server_start(&srv_ops, &p->app[i], 1, 16, p->url[i], sizeof p->url[i]);
	snprintf(p->list, sizeof p->list, "%s,%s", p->url[0], p->url[1]);
}

/* wait_connected waits (up to 10 s) until `c` has `n` connections up: a
 * list's open returns with the first one up, the others come after. */
static void wait_connected(rpc_client *c, int n)
{
	nng_time up_by = nng_clock() + 10000;
	while (rpc_client_connected(c) < n && nng_clock() < up_by)
		nng_msleep(1);
	assert_int_equal(rpc_client_connected(c), n);
}

static rpc_client *pair_client(pair *p, bool failover, rpc_urls *u)
{
	char err[256];
	assert_int_equal(rpc_urls_parse(u, p->list, err, sizeof err), 0);
	rpc_client_opts o = {.connect_now = true, .failover = failover};
	rpc_client *c = NULL;
	assert_int_equal(rpc_client_open_urls(&c, u, &o), 0);
	wait_connected(c, 2);
	return c;
}

static void test_spread(void **state)
{
	(void)state;
	pair p;
	pair_start(&p);
	rpc_urls u;
	rpc_client *c = pair_client(&p, false, &u);
	Sagas__V1__GetSagaRequest req = SAGAS__V1__GET_SAGA_REQUEST__INIT;
	req.saga_id = "x";
	int by[2] = {0, 0};
	for (int i = 0; i < 40; i++) {
		rpc_result r;
		assert_int_equal(rpc_call(c, "/t.T/Fast", &req.base, 5000, &r), 0);
		assert_int_equal(r.code, RPC_ABORTED);
		by[strcmp(r.reason, "b") == 0]++;
		rpc_result_clear(&r);
	}
	printf("40 calls: %d answered by a, %d by b\n", by[0], by[1]);
	assert_true(by[0] > 0 && by[1] > 0);
	rpc_client_close(c);
	rpc_urls_free(&u);
	rpc_server_stop(p.srv[0]);
	rpc_server_stop(p.srv[1]);
}

/* The outcome of the async calls of the failover test. */
typedef struct outcome {
	nng_mtx *mtx;
	int done, by_b, unavailable, other;
} outcome;

static void call_done(void *arg, const rpc_result *r)
{
	outcome *o = arg;
	nng_mtx_lock(o->mtx);
	if (r->code == RPC_ABORTED && strcmp(r->reason, "b") == 0)
		o->by_b++;
	else if (r->code == RPC_UNAVAILABLE && r->transport)
		o->unavailable++;
	else
		o->other++;
	o->done++;
	nng_mtx_unlock(o->mtx);
}

/* serve_a is the child process of run_failover: server "a" on a free
 * port, its URL on the first line of stdout; killed by the parent. */
__attribute__((noreturn)) static void serve_a(void)
{
	static srv_app a = {.name = "a"};
	char url[64];
	rpc_server *s = unit_server_start(&srv_ops, &a, 1, 16, url, sizeof url);
	(void)s;
	printf("%s\n", url);
	fflush(stdout);
	for (;;)
		pause();
}

/* run_failover starts server "a" in a child process and "b" here, sends 8
 * slow calls through a client of both, kills "a" (SIGKILL) once it holds
 * one, and waits for all 8 answers. */
static void run_failover(bool failover, outcome *o)
{
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(fds[1], 1);
		close(fds[0]);
		close(fds[1]);
		execl("/proc/self/exe", "test_rpc_urls", "--serve-a", (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	FILE *from_a = fdopen(fds[0], "r");
	assert_non_null(from_a);
	static srv_app b = {.name = "b"};
	char url_a[64] = "", url_b[64], list[160], line[64] = "";
	assert_non_null(fgets(url_a, sizeof url_a, from_a));
	url_a[strcspn(url_a, "\n")] = '\0';
	rpc_server *srv_b = unit_server_start(&srv_ops, &b, 1, 16, url_b, sizeof url_b);
	snprintf(list, sizeof list, "%s,%s", url_a, url_b);
	rpc_urls u;
	char err[256];
	assert_int_equal(rpc_urls_parse(&u, list, err, sizeof err), 0);
	rpc_client_opts opts = {.connect_now = true, .failover = failover};
	rpc_client *c = NULL;
	assert_int_equal(rpc_client_open_urls(&c, &u, &opts), 0);
	wait_connected(c, 2); /* so that "a" gets calls */
	memset(o, 0, sizeof *o);
	assert_int_equal(nng_mtx_alloc(&o->mtx), 0);
	Sagas__V1__GetSagaRequest req = SAGAS__V1__GET_SAGA_REQUEST__INIT;
	req.saga_id = "x";
	for (int i = 0; i < 8; i++)
		assert_int_equal(rpc_call_async(c, "/t.T/Slow", &req.base, 5000, call_done, o), 0);
	/* "a" holds one now (and the calls queued behind it) */
	assert_non_null(fgets(line, sizeof line, from_a));
	assert_string_equal(line, "slow\n");
	nng_time t0 = nng_clock();
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	fclose(from_a);
	nng_time until = nng_clock() + 6000;
	for (;;) {
		nng_mtx_lock(o->mtx);
		int done = o->done;
		nng_mtx_unlock(o->mtx);
		if (done == 8 || nng_clock() > until)
			break;
		nng_msleep(1);
	}
	printf("failover %s: %d answered by b, %d UNAVAILABLE, %d other, all %d ms after the "
	       "kill\n",
	    failover ? "on" : "off", o->by_b, o->unavailable, o->other, (int)(nng_clock() - t0));
	rpc_client_close(c);
	rpc_urls_free(&u);
	rpc_server_stop(srv_b);
	nng_mtx_free(o->mtx);
}

static void test_failover(void **state)
{
	(void)state;
	outcome o;
	run_failover(true, &o);
	assert_int_equal(o.done, 8);
	assert_int_equal(o.by_b, 8); /* the held ones too, re-sent to b */
	assert_int_equal(o.unavailable, 0);
	assert_int_equal(o.other, 0);
}

static void test_no_failover(void **state)
{
	(void)state;
	outcome o;
	run_failover(false, &o);
	assert_int_equal(o.done, 8);
	assert_true(o.unavailable >= 1); /* at least the one a held */
	assert_int_equal(o.by_b + o.unavailable, 8);
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "--serve-a") == 0)
		serve_a();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse),
	    cmocka_unit_test(test_server_name),
	    cmocka_unit_test(test_spread),
	    cmocka_unit_test(test_failover),
	    cmocka_unit_test(test_no_failover),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
