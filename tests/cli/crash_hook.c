/* An LD_PRELOAD shim for tests/cli/reduce.sh's --crash case: an onnxtool process that maps a file
 * holding the bytes of CRASH_HOOK_MARKER (a node name planted in a model) dies by SIGSEGV, as a
 * crash in a kernel would end it. The reduce process itself (argv[1] "reduce"), which maps the
 * whole model, is left alone.
 * Build: cc -shared -fPIC -o crash_hook.so crash_hook.c -ldl */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

static int is_reduce(void) {
  static int known, reduce;
  if (!known) {
    char args[4096];
    FILE* f = fopen("/proc/self/cmdline", "r");
    size_t n = f ? fread(args, 1, sizeof args - 1, f) : 0;
    if (f) fclose(f);
    args[n] = 0;
    size_t first = strlen(args);
    reduce = first + 1 < n && strcmp(args + first + 1, "reduce") == 0;
    known = 1;
  }
  return reduce;
}

void* mmap(void* addr, size_t length, int prot, int flags, int fd, off_t offset) {
  static void* (*real)(void*, size_t, int, int, int, off_t);
  static int resolving;
  if (!real) {
    if (resolving) return (void*)syscall(SYS_mmap, addr, length, prot, flags, fd, offset);  /* dlsym's own */
    resolving = 1;
    real = (void* (*)(void*, size_t, int, int, int, off_t))dlsym(RTLD_NEXT, "mmap");
    resolving = 0;
  }
  void* p = real(addr, length, prot, flags, fd, offset);
  const char* marker = getenv("CRASH_HOOK_MARKER");
  if (p != MAP_FAILED && fd >= 0 && (prot & PROT_READ) && marker && *marker && !is_reduce() &&
      memmem(p, length, marker, strlen(marker)))
    raise(SIGSEGV);
  return p;
}
