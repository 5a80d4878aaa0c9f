/* Heap counter for the benchmarks, loaded with LD_PRELOAD.
 *
 * Wraps malloc/calloc/realloc/free/posix_memalign/aligned_alloc/memalign (forwarding to
 * glibc's __libc_* entry points) and, between benchmem_begin() and benchmem_end(),
 * keeps the live byte count (malloc_usable_size of every block allocated minus every
 * block freed in the window) and its maximum.  Outside the window the wrappers only
 * forward.  The kernels' main() (bench_main.h) finds the two functions with dlsym, so a
 * binary run without the preload reports no memory figures rather than wrong ones.
 *
 * Counts heap only: memory a tool keeps on the stack (allocas) is not seen.
 *
 * build: cc -O2 -shared -fPIC memcount.c -o libbenchmem.so
 */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stddef.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);

static int on;
static long long live, peak;

static void add(void *p) {
    if (on && p) {
        live += (long long)malloc_usable_size(p);
        if (live > peak) peak = live;
    }
}
static void sub(void *p) {
    if (on && p) live -= (long long)malloc_usable_size(p);
}

void *malloc(size_t n) {
    void *p = __libc_malloc(n);
    add(p);
    return p;
}
void *calloc(size_t a, size_t b) {
    void *p = __libc_calloc(a, b);
    add(p);
    return p;
}
void *realloc(void *q, size_t n) {
    sub(q);
    void *p = __libc_realloc(q, n);
    if (p) add(p);
    else if (n && q) add(q); /* failed: q is still live */
    return p;
}
void free(void *p) {
    sub(p);
    __libc_free(p);
}
void *memalign(size_t a, size_t n) {
    void *p = __libc_memalign(a, n);
    add(p);
    return p;
}
void *aligned_alloc(size_t a, size_t n) { return memalign(a, n); }
int posix_memalign(void **out, size_t a, size_t n) {
    void *p = memalign(a, n);
    if (!p) return ENOMEM;
    *out = p;
    return 0;
}

/* start a window: the live count and the peak start at 0 */
void benchmem_begin(void) {
    live = 0;
    peak = 0;
    on = 1;
}
/* end the window; the peak of (live bytes - live bytes at its start) */
long long benchmem_end(void) {
    on = 0;
    return peak;
}
