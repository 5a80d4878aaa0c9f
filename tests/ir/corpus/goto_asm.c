int g(int x) { static void *tbl[] = { &&a, &&b }; goto *tbl[x & 1]; a: return 1; b: asm volatile("nop" ::: "memory"); return 2; }
int h(int x) { int r; asm("movl %1, %0" : "=r"(r) : "r"(x)); return r; }
