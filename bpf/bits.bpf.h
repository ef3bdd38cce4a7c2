/* SPDX-License-Identifier: GPL-2.0 */
/* log2 bucketing for the u64 histograms shared with userspace. */
#ifndef TP_BITS_BPF_H
#define TP_BITS_BPF_H

/* Bucket of v: 0 for v == 0, else 1 + floor(log2(v)); always < TP_HIST_SLOTS. */
static __always_inline __u32 tp_log2_slot(__u64 v)
{
	__u32 r = 0, shift;

	if (!v)
		return 0;
	shift = (v > 0xffffffffULL) << 5;
	v >>= shift;
	r |= shift;
	shift = (v > 0xffff) << 4;
	v >>= shift;
	r |= shift;
	shift = (v > 0xff) << 3;
	v >>= shift;
	r |= shift;
	shift = (v > 0xf) << 2;
	v >>= shift;
	r |= shift;
	shift = (v > 0x3) << 1;
	v >>= shift;
	r |= shift;
	r |= (v >> 1);
	/* r = floor(log2(v)) <= 63, so r + 1 <= 64: clamp for the verifier. */
	r += 1;
	return r < TP_HIST_SLOTS ? r : TP_HIST_SLOTS - 1;
}

#endif /* TP_BITS_BPF_H */
