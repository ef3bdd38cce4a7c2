/* SPDX-License-Identifier: GPL-2.0 */
/*
 * An OpenTelemetry collector's OTLP/HTTP receiver, as the shipper sends to it: JSON
 * bodies POSTed to the endpoint's /v1/traces and /v1/metrics, with the headers of
 * otlp_headers_file (a token lives there, never on a command line or in the URL).
 */
#ifndef TP_OTLP_SINK_H
#define TP_OTLP_SINK_H

#include <stdbool.h>
#include <stddef.h>

struct otlp_sink {
	void *curl;		/* libcurl's easy handle */
	struct curl_slist *hdr; /* Content-Type and the file's headers */
	char base[1024];	/* the endpoint, without a trailing '/' */
	char name[256];		/* what messages call it */
	char err[512];		/* the last error, one line */
	bool conn_lost;		/* the last error was the collector's or the way's: retry */
};

/*
 * Reads headers_file ("" or NULL: none; a file readable by group or others is
 * refused) and readies a handle whose requests each have timeout_s (0: 30) to answer,
 * an https endpoint's certificate checked against ca_file ("" or NULL: the system's
 * CAs): 0, or -1 with k->err (k->name is set either way).
 */
int otlp_sink__open(struct otlp_sink *k, const char *endpoint, const char *headers_file,
		    const char *ca_file, int timeout_s);
void otlp_sink__close(struct otlp_sink *k);
/*
 * POSTs body to the endpoint's path ("/v1/traces"): 0 once the collector took all of
 * it; -1 with k->err, k->conn_lost when a later try may succeed (no answer, a 5xx,
 * 408 or 429), else the collector refused the data (another 4xx, or a partial success
 * that rejected some of it).
 */
int otlp_sink__post(struct otlp_sink *k, const char *path, const char *body);

/* One line of otlp_headers_file as a header: 0, or -1 (not "Name: value"). */
int otlp_header_line(const char *line, char *out, size_t len);

#endif /* TP_OTLP_SINK_H */
