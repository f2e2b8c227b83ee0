/* Console API: GET metrics — this node's samples from the metrics ring
 * (ring.c): deltas per interval, oldest first, at most 720. */
#include "console_data.h"

#include <errno.h>

static int metrics_get(cn_console_call_t *c)
{
    const cn_console_config_t *cfg = cn__console_cfg(c->con);
    json_t *samples = cn__console_ring_samples(c->con);
    if (!samples)
        return cn__console_err(c, -ENOMEM);
    double iv = cn__console_ring_interval_s();
    json_t *doc =
        json_pack("{s:s,s:o,s:o}", "node", cfg->node ? cfg->node : "", "interval_s",
                  iv == (double)(int64_t)iv ? json_integer((json_int_t)iv) : json_real(iv),
                  "samples", samples);
    return cn__console_json(c, 200, doc);
}

const cn_console_op_t cn__console_metrics_ops[] = {
    { CN_HTTP_GET, "metrics", metrics_get, 0 },
    { 0, NULL, NULL, 0 },
};
