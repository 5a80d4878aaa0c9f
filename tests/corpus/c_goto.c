/* corpus-flags: -g */
/* goto: cleanup chains, loop exits, state machines, computed goto (labels as values). */
#include <stdio.h>
#include <stdlib.h>

static int process(int fail_at) {
    int rc = -1;
    char *a = malloc(16), *b = NULL, *c = NULL;
    if (!a || fail_at == 1) goto out_a;
    b = malloc(32);
    if (!b || fail_at == 2) goto out_b;
    c = malloc(64);
    if (!c || fail_at == 3) goto out_c;
    rc = 0;
out_c:
    free(c);
out_b:
    free(b);
out_a:
    free(a);
    return rc;
}

static int find(int m[4][4], int target, int *ri, int *ci) {
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            if (m[i][j] == target) { *ri = i; *ci = j; goto found; }
    return 0;
found:
    return 1;
}

static long interp(const unsigned char *code) {
    static void *dispatch[] = {&&op_halt, &&op_inc, &&op_dbl, &&op_dec, &&op_jnz};
    long acc = 0, ctr = 5;
    const unsigned char *pc = code;
#define NEXT goto *dispatch[*pc++]
    NEXT;
op_inc: acc += 1; NEXT;
op_dbl: acc *= 2; NEXT;
op_dec: ctr -= 1; NEXT;
op_jnz: if (ctr) { pc = code; } NEXT;
op_halt: return acc;
#undef NEXT
}

int main(void) {
    for (int f = 0; f < 4; f++) printf("process(%d)=%d\n", f, process(f));
    int m[4][4];
    for (int i = 0; i < 16; i++) m[i / 4][i % 4] = i * 7 % 16;
    int r = -1, c = -1;
    int ok = find(m, 13, &r, &c);
    printf("found=%d at %d,%d\n", ok, r, c);
    int i = 0, total = 0;
again:
    total += i;
    if (++i < 10) goto again;
    printf("total=%d\n", total);
    unsigned char prog[] = {1, 2, 1, 3, 4, 0};
    printf("interp=%ld\n", interp(prog));
    return 0;
}
