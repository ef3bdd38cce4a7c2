/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one test harness: tests register themselves per tier (unit, bpf, e2e), checks
 * print what failed and return bool, and the runner ends on "N passed, N failed".
 */
#ifndef TP_HARNESS_H
#define TP_HARNESS_H

#include <errno.h>
#include <stdbool.h>
#include <string.h>

enum tier { TIER_UNIT, TIER_BPF, TIER_E2E };

struct tp_test {
	const char *name;
	enum tier tier;
	void (*fn)(void);
};

void tp_register(const struct tp_test *t);

#define TEST(tier_, name_)                                                                         \
	static void test_##name_(void);                                                            \
	static const struct tp_test tp_test_##name_ = { #name_, tier_, test_##name_ };             \
	__attribute__((constructor)) static void tp_reg_##name_(void)                              \
	{                                                                                          \
		tp_register(&tp_test_##name_);                                                     \
	}                                                                                          \
	static void test_##name_(void)

bool tp_check(bool ok, const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Ends the current test as skipped (a failure unless TASKPROBE_ALLOW_SKIP=1). */
void tp_skip(const char *why);
bool tp_test_failed(void);

#define CHECK(cond, fmt, ...) tp_check(!!(cond), __FILE__, __LINE__, fmt, ##__VA_ARGS__)

#define ASSERT_TRUE(cond, name) CHECK(cond, "%s: expected true", name)
#define ASSERT_FALSE(cond, name) CHECK(!(cond), "%s: expected false", name)
#define ASSERT_EQ(a, b, name)                                                                      \
	({                                                                                         \
		long long _a = (long long)(a), _b = (long long)(b);                                \
		CHECK(_a == _b, "%s: got %lld, expected %lld", name, _a, _b);                      \
	})
#define ASSERT_GE(a, b, name)                                                                      \
	({                                                                                         \
		long long _a = (long long)(a), _b = (long long)(b);                                \
		CHECK(_a >= _b, "%s: got %lld, expected >= %lld", name, _a, _b);                   \
	})
#define ASSERT_LE(a, b, name)                                                                      \
	({                                                                                         \
		long long _a = (long long)(a), _b = (long long)(b);                                \
		CHECK(_a <= _b, "%s: got %lld, expected <= %lld", name, _a, _b);                   \
	})
/* |got - want| <= frac * want */
#define ASSERT_NEAR(got, want, frac, name)                                                         \
	({                                                                                         \
		double _g = (double)(got), _w = (double)(want);                                    \
		double _d = _g > _w ? _g - _w : _w - _g;                                           \
		CHECK(_d <= (frac)*_w, "%s: got %.0f, expected %.0f within %.1f%% (off %.2f%%)",   \
		      name, _g, _w, (frac)*100.0, _w ? _d / _w * 100.0 : 0.0);                     \
	})
#define ASSERT_OK(err, name)                                                                       \
	({                                                                                         \
		int _e = (int)(err);                                                               \
		CHECK(_e == 0, "%s: failed: %d (%s)", name, _e, strerror(_e < 0 ? -_e : _e));      \
	})
#define ASSERT_STREQ(a, b, name)                                                                   \
	({                                                                                         \
		const char *_a = (a), *_b = (b);                                                   \
		CHECK(_a &&_b && !strcmp(_a, _b), "%s: got '%s', expected '%s'", name,             \
		      _a ? _a : "(null)", _b ? _b : "(null)");                                     \
	})
#define ASSERT_NOT_NULL(p, name) CHECK((p) != NULL, "%s: got NULL (errno %d)", name, errno)

#endif /* TP_HARNESS_H */
