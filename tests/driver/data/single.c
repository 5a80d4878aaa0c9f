#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static double table[16];

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(void) {
    for (int i = 0; i < 16; i++) table[i] = sin(i * 0.7) * exp(-0.1 * i);
    qsort(table, 16, sizeof table[0], cmp);
    double s = 0;
    for (int i = 0; i < 16; i++) s += table[i] * (i + 1);
    printf("min %.12f max %.12f weighted %.12f\n", table[0], table[15], s);
    return 0;
}
