/* cairnd — the cairn server.  Parses the stable command line, opens the data
 * directory and runs the listeners until SIGTERM/SIGINT.
 *
 * Exit status: 0 after a clean shutdown, 1 when the server cannot start,
 * 2 for a usage error (unknown flag, bad value). */
#include "cairn/util.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CAIRND_USAGE \
    "usage: cairnd [--data DIR] [--jay ADDR|off] [--scribe ADDR|off] [--http ADDR|off]\n" \
    "              [--config FILE] [--log-level debug|info|warn|error] [--log-format text|json]\n" \
    "              [--help] [--version]\n"

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"data", required_argument, 0, 'd'},   {"jay", required_argument, 0, 'j'},
        {"scribe", required_argument, 0, 's'}, {"http", required_argument, 0, 'H'},
        {"config", required_argument, 0, 'c'}, {"log-level", required_argument, 0, 'l'},
        {"log-format", required_argument, 0, 'f'}, {"help", no_argument, 0, 'h'},
        {"version", no_argument, 0, 'V'},      {0, 0, 0, 0},
    };
    cn_log_level_t level = CN_LOG_INFO;
    bool json = false;
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'l':
            if (cn_log_level_parse(optarg, &level) < 0) {
                fprintf(stderr, "cairnd: --log-level: unknown level '%s'\n" CAIRND_USAGE, optarg);
                return 2;
            }
            break;
        case 'f':
            if (strcmp(optarg, "json") && strcmp(optarg, "text")) {
                fprintf(stderr, "cairnd: --log-format must be text or json\n" CAIRND_USAGE);
                return 2;
            }
            json = strcmp(optarg, "json") == 0;
            break;
        case 'h':
            fputs(CAIRND_USAGE, stdout);
            return 0;
        case 'V':
            puts("cairnd " CAIRN_VERSION);
            return 0;
        case 'd': case 'j': case 's': case 'H': case 'c':
            break;
        default:
            fputs(CAIRND_USAGE, stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "cairnd: unexpected argument '%s'\n" CAIRND_USAGE, argv[optind]);
        return 2;
    }
    cn_log_configure(level, json);
    cn_error("cairnd", "no listener is built yet in this version");
    return 1;
}
