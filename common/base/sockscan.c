/* sockscan: this process's TCP connections (sockscan.h). */
#include "sockscan.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* sockscan_fd_inode: the socket inode of /proc/self/fd entry `name`, 0 when
 * it is not a socket. */
static unsigned long sockscan_fd_inode(const char *name)
{
	char path[320], link[64];
	snprintf(path, sizeof path, "/proc/self/fd/%s", name);
	ssize_t len = readlink(path, link, sizeof link - 1);
	if (len <= 8 || strncmp(link, "socket:[", 8) != 0)
		return 0;
	link[len] = '\0';
	return strtoul(link + 8, NULL, 10);
}

static int sockscan_cmp(const void *a, const void *b)
{
	unsigned long x = *(const unsigned long *)a, y = *(const unsigned long *)b;
	return x < y ? -1 : x > y;
}

int sockscan_own_read(sockscan_own *o)
{
	o->inodes = NULL;
	o->n = 0;
	DIR *d = opendir("/proc/self/fd");
	if (d == NULL)
		return -errno;
	size_t cap = 0;
	struct dirent *e;
	int rc = 0;
	while ((e = readdir(d)) != NULL) {
		unsigned long inode = sockscan_fd_inode(e->d_name);
		if (inode == 0)
			continue;
		if (o->n == cap) {
			size_t ncap = cap ? 2 * cap : 256;
			unsigned long *p = realloc(o->inodes, ncap * sizeof *p);
			if (p == NULL) {
				rc = -ENOMEM;
				break;
			}
			o->inodes = p;
			cap = ncap;
		}
		o->inodes[o->n++] = inode;
	}
	closedir(d);
	if (rc != 0) {
		sockscan_own_free(o);
		return rc;
	}
	if (o->n > 1)
		qsort(o->inodes, o->n, sizeof *o->inodes, sockscan_cmp);
	return 0;
}

void sockscan_own_free(sockscan_own *o)
{
	free(o->inodes);
	o->inodes = NULL;
	o->n = 0;
}

/* sockscan_file reads one of /proc/net/tcp{,6} (sockscan_tcp). */
static void sockscan_file(const char *path, bool v6, const unsigned *ports, int nports,
    const sockscan_own *own, void (*fn)(void *, const sockscan_conn *), void *arg)
{
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return;
	char line[512];
	if (fgets(line, sizeof line, f) == NULL) { /* the header */
		fclose(f);
		return;
	}
	while (fgets(line, sizeof line, f) != NULL) {
		char local[64], remote[64];
		unsigned st;
		sockscan_conn c = {.v6 = v6};
		/* sl local rem st tx:rx tr:when retrnsmt uid timeout inode */
		if (sscanf(line, "%*s %63s %63s %x %*s %*s %*s %*s %*s %lu", local, remote, &st,
		        &c.inode)
		        != 4
		    || (st != 1 && st != 8) || c.inode == 0) /* ESTABLISHED, CLOSE_WAIT */
			continue;
		char *lp = strchr(local, ':'), *rp = strchr(remote, ':');
		if (lp == NULL || rp == NULL)
			continue;
		c.lport = (unsigned)strtoul(lp + 1, NULL, 16);
		bool ours = false;
		for (int i = 0; i < nports && !ours; i++)
			ours = c.lport == ports[i];
		if (!ours
		    || bsearch(&c.inode, own->inodes, own->n, sizeof *own->inodes, sockscan_cmp)
		        == NULL)
			continue;
		*rp = '\0';
		if (strlen(remote) < (v6 ? 32u : 8u))
			continue;
		for (int w = 0; w < (v6 ? 4 : 1); w++) {
			char word[9];
			memcpy(word, remote + 8 * w, 8);
			word[8] = '\0';
			uint32_t v = (uint32_t)strtoul(word, NULL, 16);
			memcpy(c.raddr + 4 * w, &v, 4); /* the kernel prints each word as it lies */
		}
		c.rport = (unsigned)strtoul(rp + 1, NULL, 16);
		fn(arg, &c);
	}
	fclose(f);
}

void sockscan_tcp(const unsigned *ports, int nports, const sockscan_own *own,
    void (*fn)(void *arg, const sockscan_conn *c), void *arg)
{
	if (nports <= 0 || own->n == 0)
		return;
	sockscan_file("/proc/net/tcp", false, ports, nports, own, fn, arg);
	sockscan_file("/proc/net/tcp6", true, ports, nports, own, fn, arg);
}

int sockscan_shutdown(const unsigned long *kill, int n)
{
	if (n <= 0)
		return 0;
	DIR *d = opendir("/proc/self/fd");
	if (d == NULL)
		return 0;
	int done = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		unsigned long inode = sockscan_fd_inode(e->d_name);
		if (inode == 0)
			continue;
		for (int i = 0; i < n; i++)
			if (kill[i] == inode && shutdown(atoi(e->d_name), SHUT_RDWR) == 0) {
				done++;
				break;
			}
	}
	closedir(d);
	return done;
}
