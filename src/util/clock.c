/* Monotonic and wall clocks, RFC 3339 formatting (include/cairn/util.h). */
#include "cairn/util.h"

#include <stdio.h>
#include <time.h>

int64_t cn_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t cn_mono_ms(void)
{
    return cn_mono_ns() / 1000000;
}

int64_t cn_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Writes v as n decimal digits, zero-padded, at p; returns the end. */
static char *digits(char *p, int v, int n)
{
    for (int i = n - 1; i >= 0; i--) {
        p[i] = (char)('0' + v % 10);
        v /= 10;
    }
    return p + n;
}

/* The digits are written by hand, not by snprintf: every Jay and S3 answer
 * about an object carries a time, and snprintf was the largest user-space
 * entry of a loop-answered Jay GET after the caches (docs/performance.md,
 * "Jay at 64 connections").  Years outside 0000-9999 keep snprintf. */
void cn_rfc3339(int64_t unix_ms, char out[CN_RFC3339_LEN])
{
    time_t s = (time_t)(unix_ms / 1000);
    int ms = (int)(unix_ms % 1000);
    if (ms < 0) {
        ms += 1000;
        s -= 1;
    }
    struct tm tm;
    gmtime_r(&s, &tm);
    if (tm.tm_year < -1900 || tm.tm_year > 9999 - 1900) {
        snprintf(out, CN_RFC3339_LEN, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
        return;
    }
    char *p = digits(out, tm.tm_year + 1900, 4);
    *p++ = '-';
    p = digits(p, tm.tm_mon + 1, 2);
    *p++ = '-';
    p = digits(p, tm.tm_mday, 2);
    *p++ = 'T';
    p = digits(p, tm.tm_hour, 2);
    *p++ = ':';
    p = digits(p, tm.tm_min, 2);
    *p++ = ':';
    p = digits(p, tm.tm_sec, 2);
    *p++ = '.';
    p = digits(p, ms, 3);
    *p++ = 'Z';
    *p = 0;
}
