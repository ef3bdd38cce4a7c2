/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A task as an OpenTelemetry trace (OTLP/JSON, an ExportTraceServiceRequest): the task
 * a span `cicd.pipeline.task.run`, its phases child spans, its notable events span
 * events, its figures span attributes (docs/storage.md, "OpenTelemetry").
 */
#ifndef TP_OTLP_H
#define TP_OTLP_H

#include <stdio.h>

#include "base/json.h"
#include "model/config.h"
#include "store/query.h"

struct otlp_input {
	const struct json *rec;		  /* the record (docs/task-record.md) */
	const struct query_label *labels; /* its labels and the host's (host, ncpu, ...) */
	int nlabels;
	const struct config *cfg; /* otlp_attribute: task labels as cicd.* attributes */
};

/* The trace, one JSON document and a newline: 0, or -EIO. */
int otlp_write_traces(FILE *f, const struct otlp_input *in);

#endif /* TP_OTLP_H */
