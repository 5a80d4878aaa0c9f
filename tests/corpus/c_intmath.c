/* Integer arithmetic: signed division/modulo, widening, unsigned wraparound, gcd, primes, 128-bit. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

static uint64_t gcd(uint64_t a, uint64_t b) { while (b) { uint64_t t = a % b; a = b; b = t; } return a; }
static uint64_t powmod(uint64_t b, uint64_t e, uint64_t m) {
    unsigned __int128 r = 1, x = b % m;
    while (e) { if (e & 1) r = r * x % m; x = x * x % m; e >>= 1; }
    return (uint64_t)r;
}
static int is_prime(uint64_t n) {
    if (n < 2) return 0;
    for (uint64_t d = 2; d * d <= n; d++) if (n % d == 0) return 0;
    return 1;
}

int main(void) {
    int vals[] = {17, -17, 5, -5};
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            if (j % 2 == 0) printf("%d/%d=%d %%=%d  ", vals[i], vals[j] % 7 ? vals[j] % 7 : 3, vals[i] / (vals[j] % 7 ? vals[j] % 7 : 3), vals[i] % (vals[j] % 7 ? vals[j] % 7 : 3));
    printf("\n");
    uint8_t u8 = 250; u8 += 10;
    int16_t s16 = (int16_t)40000;
    uint32_t u32 = 0; u32 -= 1;
    printf("u8=%u s16=%d u32=%" PRIu32 "\n", u8, s16, u32);
    printf("gcd=%" PRIu64 " powmod=%" PRIu64 "\n", gcd(1071, 462), powmod(3, 1000000007ULL - 2, 1000000007ULL));
    int np = 0; uint64_t last = 0;
    for (uint64_t n = 0; n < 20000; n++) if (is_prime(n)) { np++; last = n; }
    printf("primes<20000: %d last=%" PRIu64 "\n", np, last);
    int64_t m = INT64_MIN;
    printf("min=%" PRId64 " max=%" PRId64 " -> %" PRIu64 "\n", m, INT64_MAX, (uint64_t)m);
    __int128 p = (__int128)INT64_MAX * 3;
    printf("i128/7=%" PRId64 " rem=%d\n", (int64_t)(p / 7), (int)(p % 7));
    long long sq = 0;
    for (int i = 1; i <= 1000; i++) sq += (long long)i * i;
    printf("sumsq=%lld\n", sq);
    unsigned sat = 0;
    for (unsigned i = 0; i < 50; i++) { unsigned t = sat + i * 100000000u; sat = t < sat ? UINT32_MAX : t; }
    printf("sat=%u\n", sat);
    return (int)(sq % 100);
}
