/* Dates in the three text forms the protocols carry (include/cairn/util.h):
 * IMF-fixdate (HTTP Date, Last-Modified), the SigV4 basic form
 * (yyyymmddThhmmssZ) and RFC 3339 with milliseconds, from Unix time by
 * civil-from-days arithmetic (the proleptic Gregorian calendar, UTC).
 *
 * It must never call gmtime_r, strftime or anything else that takes libc's
 * time-zone lock: every answer of every face writes a date, on every event
 * loop at once, and that lock was a shared futex on the small-GET path
 * (docs/performance.md, issue 16).  Nor snprintf for the common years: the
 * digits are written by hand (snprintf was the largest user-space entry of
 * a loop-answered GET). */
#include "cairn/util.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

void cn_civil_from_unix(int64_t unix_s, cn_civil_t *out)
{
    int64_t days = unix_s / 86400;
    int64_t secs = unix_s % 86400;
    if (secs < 0) {
        secs += 86400;
        days -= 1;
    }
    /* Days since 1970-01-01 to (year, month, day): eras of 400 years
     * (146,097 days), counted from 0000-03-01 so that the leap day ends
     * each year of the era's arithmetic (the method of Howard Hinnant's
     * "chrono-Compatible Low-Level Date Algorithms", civil_from_days). */
    int64_t z = days + 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;                                      /* [0, 146096] */
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365; /* [0, 399] */
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);               /* [0, 365] */
    int64_t mp = (5 * doy + 2) / 153;                                    /* [0, 11], March = 0 */
    out->mday = (int)(doy - (153 * mp + 2) / 5 + 1);
    out->mon = (int)(mp < 10 ? mp + 3 : mp - 9);
    out->year = (int)(yoe + era * 400 + (out->mon <= 2));
    /* 1970-01-01 was a Thursday (4). */
    int64_t wd = (days % 7 + 11) % 7;
    out->wday = (int)wd;
    out->hour = (int)(secs / 3600);
    out->min = (int)(secs / 60 % 60);
    out->sec = (int)(secs % 60);
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

static char *text3(char *p, const char *t)
{
    p[0] = t[0];
    p[1] = t[1];
    p[2] = t[2];
    return p + 3;
}

size_t cn_date_format(int64_t unix_ms, cn_date_form_t form, char out[CN_DATE_MAX])
{
    static const char wd[] = "SunMonTueWedThuFriSat";
    static const char mo[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
    int64_t s = unix_ms / 1000;
    int ms = (int)(unix_ms % 1000);
    if (ms < 0) {
        ms += 1000;
        s -= 1;
    }
    cn_civil_t c;
    cn_civil_from_unix(s, &c);
    if (c.year < 0 || c.year > 9999) {
        int n = form == CN_DATE_IMF
                    ? snprintf(out, CN_DATE_MAX, "%.3s, %02d %.3s %04d %02d:%02d:%02d GMT",
                               wd + 3 * c.wday, c.mday, mo + 3 * (c.mon - 1), c.year, c.hour, c.min,
                               c.sec)
                : form == CN_DATE_AMZ
                    ? snprintf(out, CN_DATE_MAX, "%04d%02d%02dT%02d%02d%02dZ", c.year, c.mon,
                               c.mday, c.hour, c.min, c.sec)
                    : snprintf(out, CN_DATE_MAX, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", c.year,
                               c.mon, c.mday, c.hour, c.min, c.sec, ms);
        return n > 0 ? (size_t)n : 0;
    }
    char *p = out;
    if (form == CN_DATE_IMF) {
        p = text3(p, wd + 3 * c.wday);
        *p++ = ',';
        *p++ = ' ';
        p = digits(p, c.mday, 2);
        *p++ = ' ';
        p = text3(p, mo + 3 * (c.mon - 1));
        *p++ = ' ';
        p = digits(p, c.year, 4);
        *p++ = ' ';
    } else {
        bool dashes = form == CN_DATE_RFC3339;
        p = digits(p, c.year, 4);
        if (dashes)
            *p++ = '-';
        p = digits(p, c.mon, 2);
        if (dashes)
            *p++ = '-';
        p = digits(p, c.mday, 2);
        *p++ = 'T';
    }
    bool colons = form != CN_DATE_AMZ;
    p = digits(p, c.hour, 2);
    if (colons)
        *p++ = ':';
    p = digits(p, c.min, 2);
    if (colons)
        *p++ = ':';
    p = digits(p, c.sec, 2);
    if (form == CN_DATE_IMF) {
        memcpy(p, " GMT", 4);
        p += 4;
    } else {
        if (form == CN_DATE_RFC3339) {
            *p++ = '.';
            p = digits(p, ms, 3);
        }
        *p++ = 'Z';
    }
    *p = 0;
    return (size_t)(p - out);
}
