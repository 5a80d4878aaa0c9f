/* setjmp/longjmp: error recovery across frames, volatile locals, nested jumps. */
#include <setjmp.h>
#include <stdio.h>

static jmp_buf env;
static int depth_reached;

static void deep(int n) {
    depth_reached = n;
    if (n == 5) longjmp(env, n * 10);
    deep(n + 1);
}

static int safe_div(int a, int b, jmp_buf on_err) {
    if (b == 0) longjmp(on_err, 1);
    return a / b;
}

int main(void) {
    volatile int tries = 0;
    int r = setjmp(env);
    if (r == 0) {
        tries++;
        deep(0);
        printf("not reached\n");
    } else {
        printf("jumped back r=%d depth=%d tries=%d\n", r, depth_reached, tries);
    }
    jmp_buf err;
    int results[4];
    int divisors[4] = {3, 0, 7, 0};
    for (volatile int i = 0; i < 4; i++) {
        if (setjmp(err)) { results[i] = -1; continue; }
        results[i] = safe_div(100, divisors[i], err);
    }
    for (int i = 0; i < 4; i++) printf("%d ", results[i]);
    printf("\n");
    volatile int count = 0;
    jmp_buf loop;
    if (setjmp(loop) < 3) { count++; longjmp(loop, count); }
    printf("count=%d\n", count);
    return 0;
}
