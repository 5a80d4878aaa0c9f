/* corpus-flags: -g */
/* Sparse switch (binary search / compare tree), 64-bit and char cases. */
#include <stdio.h>

static int sparse(long x) {
    switch (x) {
    case -100000: return 1;
    case -7: return 2;
    case 3: return 3;
    case 1000: return 4;
    case 65536: return 5;
    case 1000000007: return 6;
    case 4000000000L: return 7;
    case 123456789012L: return 8;
    default: return 0;
    }
}

static int classify(char c) {
    switch (c) {
    case 'a': case 'e': case 'i': case 'o': case 'u': return 1;
    case ' ': case '\t': case '\n': return 2;
    case '0': case '1': case '2': case '3': case '4':
    case '5': case '6': case '7': case '8': case '9': return 3;
    case '!': case '?': case '.': return 4;
    default: return 0;
    }
}

int main(void) {
    long xs[] = {-100000, -7, 3, 1000, 65536, 1000000007, 4000000000L, 123456789012L, 5, -1};
    for (unsigned i = 0; i < sizeof xs / sizeof xs[0]; i++) printf("%ld->%d\n", xs[i], sparse(xs[i]));
    const char *text = "hello world, 2024 is a year! ok?\n";
    int counts[5] = {0};
    for (const char *p = text; *p; p++) counts[classify(*p)]++;
    printf("other=%d vowels=%d space=%d digits=%d punct=%d\n", counts[0], counts[1], counts[2], counts[3], counts[4]);
    return 0;
}
