/* An LD_PRELOAD shim for the write tests: after every rename(2) and renameat(2) the process
 *  - ends with status 137 at the Nth one when RENAME_HOOK_CRASH_AT=N (a kill between the renames
 *    of a model and its data file, tests/cli/hardening.sh), or
 *  - sleeps 0-8 ms, a different time each, when RENAME_HOOK_PAUSE is set (so that two writers'
 *    renames interleave often, tests/cli/write_race.sh).
 * Build: cc -shared -fPIC -o rename_hook.so rename_hook.c -ldl */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int calls;
static unsigned state;

static void after_rename(void) {
  const char* at = getenv("RENAME_HOOK_CRASH_AT");
  if (at && ++calls == atoi(at)) _exit(137);
  if (getenv("RENAME_HOOK_PAUSE")) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    state = state * 1103515245u + 12345u + (unsigned)getpid() + (unsigned)now.tv_nsec;
    struct timespec t = {0, (long)((state >> 8) % 8000u) * 1000L};
    nanosleep(&t, NULL);
  }
}

int rename(const char* from, const char* to) {
  int (*real)(const char*, const char*) = (int (*)(const char*, const char*))dlsym(RTLD_NEXT, "rename");
  int rc = real(from, to);
  after_rename();
  return rc;
}

int renameat(int from_dir, const char* from, int to_dir, const char* to) {
  int (*real)(int, const char*, int, const char*) =
      (int (*)(int, const char*, int, const char*))dlsym(RTLD_NEXT, "renameat");
  int rc = real(from_dir, from, to_dir, to);
  after_rename();
  return rc;
}
