/* Helpers shared by the store's unit tests: scratch data directories,
 * deterministic bytes, file counts.  Test-only. */
#ifndef CN_TESTS_STORETEST_H
#define CN_TESTS_STORETEST_H

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

__attribute__((unused)) static char *mkdata(void)
{
    const char *base = getenv("TMPDIR");
    char tmpl[512];
    snprintf(tmpl, sizeof tmpl, "%s/cn-store-test-XXXXXX", base && *base ? base : "/tmp");
    char *d = mkdtemp(tmpl);
    return d ? strdup(d) : NULL;
}

__attribute__((unused)) static int rm_cb(const char *path)
{
    DIR *dir = opendir(path);
    if (!dir)
        return unlink(path);
    struct dirent *de;
    while ((de = readdir(dir)) != NULL) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        char p[1024];
        snprintf(p, sizeof p, "%s/%s", path, de->d_name);
        rm_cb(p);
    }
    closedir(dir);
    return rmdir(path);
}

__attribute__((unused)) static void rmdata(char *d)
{
    if (d)
        rm_cb(d);
    free(d);
}

__attribute__((unused)) static void fill(uint8_t *p, size_t n, uint32_t seed)
{
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        p[i] = (uint8_t)x;
    }
}

__attribute__((unused)) static size_t count_files(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        char p[1024];
        struct stat st;
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
            n += count_files(p);
        else
            n++;
    }
    closedir(d);
    return n;
}

__attribute__((unused)) static size_t count_in(const char *data, const char *sub)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", data, sub);
    return count_files(p);
}

#endif
