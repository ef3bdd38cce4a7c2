/* SPDX-License-Identifier: GPL-2.0 */
/* log2 histograms: percentiles and bcc-style star-bar printing. */
#ifndef TP_HIST_H
#define TP_HIST_H

#include <stdio.h>
#include <linux/types.h>
#include "taskprobe.h"

/* Lowest and highest value that fall in slot i (see TP_HIST_SLOTS). */
__u64 hist_slot_low(unsigned i);
__u64 hist_slot_high(unsigned i);
/* Estimated p-quantile (0 < p <= 1), interpolated within its slot; 0 when empty. */
__u64 tp_hist__quantile(const struct tp_hist *h, double p);
/* Rows from the first to the last non-empty slot, values divided by div (e.g. 1000 for us). */
void tp_hist__print(FILE *f, const struct tp_hist *h, __u64 div, const char *unit);

#endif /* TP_HIST_H */
