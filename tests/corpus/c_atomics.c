/* C11 atomics (single-threaded but exercising atomicrmw/cmpxchg/fences) and volatile. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

static _Atomic int counter;
static atomic_llong big;
static atomic_flag flag = ATOMIC_FLAG_INIT;
static _Atomic(double) dval;

static int cas_max(_Atomic int *p, int v) {
    int cur = atomic_load(p);
    while (cur < v && !atomic_compare_exchange_weak(p, &cur, v)) {}
    return atomic_load(p);
}

int main(void) {
    for (int i = 0; i < 100; i++) atomic_fetch_add(&counter, i);
    atomic_fetch_sub_explicit(&counter, 50, memory_order_relaxed);
    printf("counter=%d\n", atomic_load(&counter));
    atomic_store(&big, 1LL << 40);
    long long old = atomic_exchange(&big, 7);
    atomic_fetch_or(&big, 0x30);
    atomic_fetch_and(&big, 0xFF);
    atomic_fetch_xor(&big, 0x5);
    printf("old=%lld big=%lld\n", old, atomic_load(&big));
    printf("cas_max=%d %d\n", cas_max(&counter, 10), cas_max(&counter, 99999));
    printf("flag %d %d\n", atomic_flag_test_and_set(&flag), atomic_flag_test_and_set(&flag));
    atomic_flag_clear(&flag);
    atomic_thread_fence(memory_order_seq_cst);
    atomic_store(&dval, 1.5);
    double e = 1.5;
    int ok = atomic_compare_exchange_strong(&dval, &e, 2.75);
    printf("dcas=%d dval=%.2f\n", ok, atomic_load(&dval));
    volatile uint32_t reg = 0;
    for (int i = 0; i < 8; i++) reg = (reg << 4) | (uint32_t)i;
    printf("reg=%08x\n", reg);
    int x = 5;
    int y = __atomic_add_fetch(&x, 3, __ATOMIC_SEQ_CST);
    printf("builtin atomic=%d %d\n", x, y);
    return 0;
}
