/* Line-oriented logging to stderr, as text or JSON (include/cairn/util.h).
 * The configuration is process-wide and set once at start-up. */
#include "cairn/util.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static _Atomic int cn__log_min = CN_LOG_INFO;
static _Atomic bool cn__log_json = false;

static const char *const cn__level_names[] = { "debug", "info", "warn", "error" };

void cn_log_configure(cn_log_level_t min_level, bool json)
{
    cn__log_min = (int)min_level;
    cn__log_json = json;
}

cn_err_t cn_log_level_parse(const char *s, cn_log_level_t *out)
{
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(s, cn__level_names[i]) == 0) {
            *out = (cn_log_level_t)i;
            return CN_OK;
        }
    }
    if (strcasecmp(s, "warning") == 0) {
        *out = CN_LOG_WARN;
        return CN_OK;
    }
    return CN_E_INVALID;
}

static void json_escape(cn_buf_t *b, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            cn_buf_printf(b, "\\%c", c);
        else if (c < 0x20)
            cn_buf_printf(b, "\\u%04x", c);
        else
            cn_buf_put_u8(b, c);
    }
}

void cn_log(cn_log_level_t level, const char *module, const char *fmt, ...)
{
    if ((int)level < cn__log_min)
        return;
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    char ts[CN_RFC3339_LEN];
    cn_rfc3339(cn_wall_ms(), ts);

    cn_buf_t b = { 0 };
    if (cn__log_json) {
        cn_buf_printf(&b, "{\"ts\":\"%s\",\"level\":\"%s\",\"module\":\"", ts,
                      cn__level_names[level]);
        json_escape(&b, module);
        cn_buf_append_str(&b, "\",\"msg\":\"");
        json_escape(&b, msg);
        cn_buf_append_str(&b, "\"}\n");
    } else {
        cn_buf_printf(&b, "%s %-5s %s: %s\n", ts, cn__level_names[level], module, msg);
    }
    if (b.data)
        fwrite(b.data, 1, b.len, stderr); /* one write per line keeps lines whole */
    cn_buf_free(&b);
}

bool cn_log_allow(cn_log_limit_t *l, uint64_t *left_out)
{
    int64_t period = l->period_ms ? l->period_ms : 1000;
    uint32_t burst = l->burst ? l->burst : CN_LOG_LIMIT_BURST;
    int64_t now = cn_mono_ms(), start = atomic_load(&l->start_ms);
    *left_out = 0;
    if ((now - start >= period || start == 0) &&
        atomic_compare_exchange_strong(&l->start_ms, &start, now)) {
        atomic_store(&l->n, 0);
        *left_out = atomic_exchange(&l->left_out, 0);
    }
    if (atomic_fetch_add(&l->n, 1) < burst)
        return true;
    atomic_fetch_add(&l->left_out, 1);
    return false;
}
