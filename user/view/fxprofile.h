/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A stored task as a Firefox Profiler processed profile (profiler.firefox.com opens it):
 * markers for its phases, processes and notable events, and resource tracks for CPU,
 * memory, disk and network. The version written is FXPROFILE_VERSION; the layout is
 * checked against tests/helpers/fxprofile-ref.json, read off the profiler's source.
 */
#ifndef TP_FXPROFILE_H
#define TP_FXPROFILE_H

#include <stdio.h>

#include "view/report.h"

/* meta.preprocessedProfileVersion, and the Gecko meta.version that goes with it. */
#define FXPROFILE_VERSION 70
#define FXPROFILE_GECKO_VERSION 36

/* 0, or -ENOMEM. */
int fxprofile_write(FILE *f, const struct report_input *in);

#endif /* TP_FXPROFILE_H */
