/* Loops: for, while, do-while, nested loops, break/continue, reductions. */
#include <stdio.h>

static int collatz_steps(unsigned long n) {
    int steps = 0;
    while (n != 1) {
        n = (n % 2) ? 3 * n + 1 : n / 2;
        steps++;
    }
    return steps;
}

int main(void) {
    long sum = 0;
    for (int i = 0; i < 1000; i++) {
        if (i % 7 == 0) continue;
        if (i > 900) break;
        sum += i * (i % 5);
    }
    printf("sum=%ld\n", sum);

    int best = 0, arg = 0;
    for (unsigned long n = 1; n < 3000; n++) {
        int s = collatz_steps(n);
        if (s > best) { best = s; arg = (int)n; }
    }
    printf("collatz best=%d at %d\n", best, arg);

    int k = 0;
    do { k += 3; } while (k < 100);
    printf("k=%d\n", k);

    double acc[4] = {0};
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 256; j++)
            acc[i] += (double)(i + 1) / (j + 1);
    for (int i = 0; i < 4; i++) printf("acc[%d]=%.9f\n", i, acc[i]);

    int triangles = 0;
    for (int a = 1; a < 60; a++)
        for (int b = a; b < 60; b++)
            for (int c = b; c < 60; c++)
                if (a * a + b * b == c * c) triangles++;
    printf("pythagorean triples=%d\n", triangles);
    return 0;
}
