/* .ci/bench, sections fsync and pause: the LD_PRELOAD shim, built by fsync_cluster with
 * cc -shared -fPIC -O2 -Wall ... -ldl. fsync and fdatasync on a file whose path contains
 * SNO_SLOW_FSYNC_MATCH (sno_generator.state) sleep SNO_SLOW_FSYNC_MS (200) first and say so on
 * stderr (the server log). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int matches(int fd, char *path, size_t size) {
    const char *m = getenv("SNO_SLOW_FSYNC_MATCH");
    char link[64];
    ssize_t n;
    if (m == NULL || *m == '\0') m = "sno_generator.state";
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    n = readlink(link, path, size - 1);
    if (n < 0) return 0;
    path[n] = '\0';
    return strstr(path, m) != NULL;
}

static void slow(const char *fn, int fd) {
    char path[4096], line[4200];
    int saved = errno, len;
    if (matches(fd, path, sizeof path)) {
        const char *s = getenv("SNO_SLOW_FSYNC_MS");
        long ms = s != NULL && *s != '\0' ? atol(s) : 200;
        struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {}
        len = snprintf(line, sizeof line, "sno-slow-fsync: pid %d %s(%d) %s delayed %ld ms\n",
                       (int) getpid(), fn, fd, path, ms);
        if (len > 0) (void) !write(2, line, len < (int) sizeof line ? (size_t) len : sizeof line - 1);
    }
    errno = saved;
}

int fsync(int fd) {
    static int (*real)(int);
    if (real == NULL) real = (int (*)(int)) dlsym(RTLD_NEXT, "fsync");
    slow("fsync", fd);
    return real(fd);
}

int fdatasync(int fd) {
    static int (*real)(int);
    if (real == NULL) real = (int (*)(int)) dlsym(RTLD_NEXT, "fdatasync");
    slow("fdatasync", fd);
    return real(fd);
}
