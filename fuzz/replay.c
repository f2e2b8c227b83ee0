/* A stand-alone driver for the libFuzzer harnesses: feeds every file named on
 * the command line (directories are walked one level) to
 * LLVMFuzzerTestOneInput.  It is how the seed corpus and every crash found
 * (fuzz/regress/<harness>/) replay as ordinary unit tests, under any compiler.
 * Output is TAP, one line per input; the input about to run is named on
 * stderr first, so a harness that aborts still says which file did it. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int count;

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        printf("not ok %d - %s (cannot open)\n", ++count, path);
        return 1;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    /* An exact-size heap copy, so a sanitizer catches a read one past the end. */
    uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
    size_t got = n > 0 && buf ? fread(buf, 1, (size_t)n, f) : 0;
    fclose(f);
    if (!buf) {
        printf("not ok %d - %s (out of memory)\n", ++count, path);
        return 1;
    }
    fprintf(stderr, "# replaying %s\n", path);
    LLVMFuzzerTestOneInput(buf, got);
    free(buf);
    printf("ok %d - %s\n", ++count, path);
    return 0;
}

int main(int argc, char **argv)
{
    int failed = 0;
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0)
            continue; /* an absent regress dir means no regressions yet */
        if (!S_ISDIR(st.st_mode)) {
            failed |= replay_file(argv[i]);
            continue;
        }
        DIR *d = opendir(argv[i]);
        struct dirent *e;
        while (d && (e = readdir(d))) {
            if (e->d_name[0] == '.')
                continue;
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
            failed |= replay_file(path);
        }
        if (d)
            closedir(d);
    }
    printf("1..%d\n", count);
    return failed;
}
