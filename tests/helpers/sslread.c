// SPDX-License-Identifier: GPL-2.0
/*
 * A TLS client that reads with SSL_read (not SSL_read_ex) and stops at its first read
 * that fails, as most clients do on a reset: the read's -1 is an int in a 64-bit
 * register. OpenSSL is opened at run time (libssl.so.3), so no headers are needed.
 *
 *   sslread HOST CASE...   one connection to HOST:443 per CASE, GET /case/CASE
 *
 * Prints, per case, the bytes read and the last SSL_read's result. Exit 0.
 * With SSLREAD_PAUSE=DIR, each connection, once made, writes the client's pid to
 * DIR/ready and waits for a line on the fifo DIR/go before its request: a test moves
 * the client between cgroups there.
 */
#include <dlfcn.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct ssl_api {
	void *(*method)(void);
	void *(*ctx_new)(void *method);
	void *(*ssl_new)(void *ctx);
	int (*set_fd)(void *ssl, int fd);
	int (*ctrl)(void *ssl, int cmd, long larg, void *parg);
	int (*connect)(void *ssl);
	int (*write)(void *ssl, const void *buf, int num);
	int (*read)(void *ssl, void *buf, int num);
	void (*free)(void *ssl);
};

#define SSL_CTRL_SET_TLSEXT_HOSTNAME 55

static int load(struct ssl_api *a)
{
	void *h = dlopen("libssl.so.3", RTLD_NOW);

	if (!h)
		return -1;
	a->method = (void *(*)(void))dlsym(h, "TLS_client_method");
	a->ctx_new = (void *(*)(void *))dlsym(h, "SSL_CTX_new");
	a->ssl_new = (void *(*)(void *))dlsym(h, "SSL_new");
	a->set_fd = (int (*)(void *, int))dlsym(h, "SSL_set_fd");
	a->ctrl = (int (*)(void *, int, long, void *))dlsym(h, "SSL_ctrl");
	a->connect = (int (*)(void *))dlsym(h, "SSL_connect");
	a->write = (int (*)(void *, const void *, int))dlsym(h, "SSL_write");
	a->read = (int (*)(void *, void *, int))dlsym(h, "SSL_read");
	a->free = (void (*)(void *))dlsym(h, "SSL_free");
	return a->method && a->ctx_new && a->ssl_new && a->set_fd && a->ctrl && a->connect &&
			       a->write && a->read && a->free
		       ? 0
		       : -1;
}

static int dial(const char *host)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res;
	int fd;

	if (getaddrinfo(host, "443", &hints, &res))
		return -1;
	fd = socket(res->ai_family, SOCK_STREAM, 0);
	if (fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen)) {
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	return fd;
}

/* SSLREAD_PAUSE: this pid in DIR/ready (whole, by a rename), then a line from DIR/go. */
static int pause_here(void)
{
	const char *dir = getenv("SSLREAD_PAUSE");
	char path[512], tmp[520], line[16];
	FILE *f;

	if (!dir)
		return 0;
	snprintf(path, sizeof(path), "%s/ready", dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f) || rename(tmp, path))
		return -1;
	snprintf(path, sizeof(path), "%s/go", dir);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (!fgets(line, sizeof(line), f)) {
		fclose(f);
		return -1;
	}
	fclose(f);
	return 0;
}

int main(int argc, char **argv)
{
	struct ssl_api a;
	void *ctx;

	if (argc < 3 || load(&a) || !(ctx = a.ctx_new(a.method()))) {
		fprintf(stderr, "usage: sslread HOST CASE... (with libssl.so.3)\n");
		return 2;
	}
	for (int i = 2; i < argc; i++) {
		char req[512], buf[4096];
		long got = 0;
		int fd = dial(argv[1]), n = -1, len;
		void *ssl = fd >= 0 ? a.ssl_new(ctx) : NULL;

		if (!ssl || a.set_fd(ssl, fd) != 1 ||
		    a.ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, 0, argv[1]) != 1 ||
		    a.connect(ssl) != 1) {
			fprintf(stderr, "sslread: cannot connect to %s\n", argv[1]);
			return 1;
		}
		if (pause_here()) {
			fprintf(stderr, "sslread: cannot pause in %s\n", getenv("SSLREAD_PAUSE"));
			return 1;
		}
		len = snprintf(req, sizeof(req),
			       "GET /case/%s HTTP/1.1\r\nHost: %s\r\nUser-Agent: sslread\r\n\r\n",
			       argv[i], argv[1]);
		if (a.write(ssl, req, len) != len)
			return 1;
		while ((n = a.read(ssl, buf, sizeof(buf))) > 0)
			got += n;
		printf("%s: %ld bytes, last SSL_read %d\n", argv[i], got, n);
		a.free(ssl);
		close(fd);
	}
	return 0;
}
