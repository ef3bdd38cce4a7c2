// SPDX-License-Identifier: GPL-2.0
/* log2 histograms: percentiles and bcc-style star-bar printing. */
#include <string.h>

#include "base/hist.h"

#define BAR_WIDTH 30

__u64 hist_slot_low(unsigned i)
{
	return i == 0 ? 0 : 1ULL << (i - 1);
}

__u64 hist_slot_high(unsigned i)
{
	if (i == 0)
		return 0;
	return i >= 64 ? ~0ULL : (1ULL << i) - 1;
}

__u64 tp_hist__quantile(const struct tp_hist *h, double p)
{
	__u64 total = 0, seen = 0, rank;

	for (unsigned i = 0; i < TP_HIST_SLOTS; i++)
		total += h->slots[i];
	if (!total)
		return 0;
	rank = (__u64)(p * (double)total + 0.999999);
	if (rank < 1)
		rank = 1;
	for (unsigned i = 0; i < TP_HIST_SLOTS; i++) {
		__u64 n = h->slots[i];

		if (seen + n >= rank) {
			double lo = (double)hist_slot_low(i), hi = (double)hist_slot_high(i);

			return (__u64)(lo + (hi - lo) * (double)(rank - seen) / (double)n);
		}
		seen += n;
	}
	return hist_slot_high(TP_HIST_SLOTS - 1);
}

void tp_hist__print(FILE *f, const struct tp_hist *h, __u64 div, const char *unit)
{
	int first = -1, last = -1;
	__u64 max = 0;
	char bar[BAR_WIDTH + 1];

	for (int i = 0; i < TP_HIST_SLOTS; i++) {
		if (!h->slots[i])
			continue;
		if (first < 0)
			first = i;
		last = i;
		if (h->slots[i] > max)
			max = h->slots[i];
	}
	if (first < 0) {
		fprintf(f, "    (no samples)\n");
		return;
	}
	fprintf(f, "    %23s : %-10s %s\n", unit, "count", "distribution");
	for (int i = first; i <= last; i++) {
		int stars = (int)((h->slots[i] * BAR_WIDTH + max - 1) / max), gap = i;

		/* A run of three or more empty rows becomes one "..." row. */
		while (gap <= last && !h->slots[gap])
			gap++;
		if (gap - i >= 3) {
			fprintf(f, "    %10s    %-10s: %-10s |%*s|\n", "...", "", "0", BAR_WIDTH,
				"");
			i = gap - 1;
			continue;
		}
		memset(bar, '*', (size_t)stars);
		memset(bar + stars, ' ', (size_t)(BAR_WIDTH - stars));
		bar[BAR_WIDTH] = '\0';
		fprintf(f, "    %10llu -> %-10llu: %-10llu |%s|\n",
			(unsigned long long)(hist_slot_low((unsigned)i) / div),
			(unsigned long long)(hist_slot_high((unsigned)i) / div),
			(unsigned long long)h->slots[i], bar);
	}
}
