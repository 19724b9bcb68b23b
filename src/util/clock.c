/*
** clock.c — milliseconds since the epoch and RFC 3339 text (see clock.h).
**
** Formatting is done by hand from the civil-date algorithm rather than with
** gmtime_r/strftime so it needs no locale, no TZ and no allocation.
*/
#include <ctype.h>
#include <stdatomic.h>
#include <time.h>

#include "util/clock.h"

/* The pinned time; 0: the real clock. A relaxed load a call, beside a
** clock_gettime that costs far more. */
static _Atomic int64_t pinned;

void a2m_clock_pin(int64_t ms)
{
	atomic_store(&pinned, ms);
}

#ifdef A2M_TEST_HOOKS
void a2m_clock_set_for_tests(int64_t ms)
{
	a2m_clock_pin(ms);
}
#endif

int64_t a2m_clock_now_ms(void)
{
	int64_t fixed = atomic_load_explicit(&pinned, memory_order_relaxed);
	if (fixed)
		return fixed;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's
** days_from_civil / civil_from_days). */
static void civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
	z += 719468;
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	int64_t doe = z - era * 146097;
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	int64_t mp = (5 * doy + 2) / 153;
	*d = (int)(doy - (153 * mp + 2) / 5 + 1);
	*m = (int)(mp < 10 ? mp + 3 : mp - 9);
	*y = yoe + era * 400 + (*m <= 2);
}

static int64_t days_from_civil(int64_t y, int m, int d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	int64_t yoe = y - era * 400;
	int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

/* Writes v as exactly n decimal digits (zero-padded) and returns the end. */
static char *put_digits(char *p, unsigned v, int n)
{
	for (int i = n - 1; i >= 0; i--) {
		p[i] = (char)('0' + v % 10);
		v /= 10;
	}
	return p + n;
}

char *a2m_clock_format(int64_t ms, char out[A2M_TIMESTAMP_LEN])
{
	/* Clamp to years 0000..9999 so the output always has four digits. */
	const int64_t lo = -62167219200000LL, hi = 253402300799999LL;
	if (ms < lo)
		ms = lo;
	if (ms > hi)
		ms = hi;
	int64_t secs = ms >= 0 ? ms / 1000 : (ms - 999) / 1000;
	int milli = (int)(ms - secs * 1000);
	int64_t days = secs >= 0 ? secs / 86400 : (secs - 86399) / 86400;
	int sod = (int)(secs - days * 86400);
	int64_t y;
	int mo, d;
	civil_from_days(days, &y, &mo, &d);
	char *p = out;
	p = put_digits(p, (unsigned)y, 4);
	*p++ = '-';
	p = put_digits(p, (unsigned)mo, 2);
	*p++ = '-';
	p = put_digits(p, (unsigned)d, 2);
	*p++ = 'T';
	p = put_digits(p, (unsigned)(sod / 3600), 2);
	*p++ = ':';
	p = put_digits(p, (unsigned)(sod / 60 % 60), 2);
	*p++ = ':';
	p = put_digits(p, (unsigned)(sod % 60), 2);
	*p++ = '.';
	p = put_digits(p, (unsigned)milli, 3);
	*p++ = 'Z';
	*p = '\0';
	return out;
}

static int digits(const char **p, int n, int *out)
{
	int v = 0;
	for (int i = 0; i < n; i++) {
		if (!isdigit((unsigned char)**p))
			return -1;
		v = v * 10 + (**p - '0');
		(*p)++;
	}
	*out = v;
	return 0;
}

int a2m_clock_parse(const char *text, int64_t *ms)
{
	const char *p = text;
	int y, mo, d, h, mi, s, milli = 0;
	if (digits(&p, 4, &y) || *p++ != '-' || digits(&p, 2, &mo) || *p++ != '-' ||
	    digits(&p, 2, &d) || (*p != 'T' && *p != 't') || !*p++ ||
	    digits(&p, 2, &h) || *p++ != ':' || digits(&p, 2, &mi) || *p++ != ':' ||
	    digits(&p, 2, &s))
		return -1;
	if (*p == '.') {
		p++;
		if (!isdigit((unsigned char)*p))
			return -1;
		int scale = 100;
		while (isdigit((unsigned char)*p)) {
			milli += (*p - '0') * scale;
			scale /= 10;
			p++;
		}
	}
	if ((*p != 'Z' && *p != 'z') || p[1] != '\0')
		return -1;
	if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60)
		return -1;
	int64_t days = days_from_civil(y, mo, d);
	*ms = ((days * 86400) + h * 3600 + mi * 60 + s) * 1000 + milli;
	return 0;
}
