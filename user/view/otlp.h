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
#include "store/store.h"

struct otlp_input {
	const struct json *rec;		  /* the record (docs/task-record.md) */
	const struct query_label *labels; /* its labels and the host's (host, ncpu, ...) */
	int nlabels;
	const struct config *cfg; /* otlp_attribute: task labels as cicd.* attributes */
};

/* The trace, one JSON document and a newline: 0, or -EIO. */
int otlp_write_traces(FILE *f, const struct otlp_input *in);
/*
 * The task's figures as OTLP metrics (an ExportMetricsServiceRequest, opt-in by
 * otlp_metrics): each a data point with the run's attributes, a counter a cumulative
 * monotonic sum from the task's start to its end, a level a gauge at its end.
 */
int otlp_write_metrics(FILE *f, const struct otlp_input *in);
/* The shipper's builder (ship_otlp_doc_fn): the trace and, if metrics, the metrics. */
int otlp_task_docs(struct store *local, __s64 tid, const struct config *cfg, char **traces,
		   char **metrics);

#endif /* TP_OTLP_H */
