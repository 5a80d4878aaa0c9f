typedef float v4 __attribute__((vector_size(16)));
v4 mad(v4 a, v4 b, v4 c) { return a * b + c; }
float hsum(v4 a) { return a[0] + a[1] + a[2] + a[3]; }
void scale(double *restrict x, double s, int n) { for (int i = 0; i < n; i++) x[i] = x[i] * s + 1.0; }
int atomics(int *p) { __atomic_fetch_add(p, 1, __ATOMIC_SEQ_CST); int e = 0; __atomic_compare_exchange_n(p, &e, 5, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED); __atomic_thread_fence(__ATOMIC_RELEASE); return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
