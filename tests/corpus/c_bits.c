/* Bit manipulation: builtins, shifts, rotates, masks, bswap, parity. */
#include <stdio.h>
#include <stdint.h>

static uint32_t rotl32(uint32_t x, unsigned r) { return (x << (r & 31)) | (x >> ((32 - r) & 31)); }
static uint64_t rotr64(uint64_t x, unsigned r) { return (x >> (r & 63)) | (x << ((64 - r) & 63)); }
static unsigned popcount_manual(uint64_t x) { unsigned c = 0; while (x) { x &= x - 1; c++; } return c; }
static uint32_t reverse_bits(uint32_t x) {
    x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
    x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
    x = ((x >> 4) & 0x0F0F0F0Fu) | ((x & 0x0F0F0F0Fu) << 4);
    x = ((x >> 8) & 0x00FF00FFu) | ((x & 0x00FF00FFu) << 8);
    return (x >> 16) | (x << 16);
}
static uint64_t xorshift(uint64_t *s) { uint64_t x = *s; x ^= x << 13; x ^= x >> 7; x ^= x << 17; return *s = x; }

int main(void) {
    uint64_t seed = 88172645463325252ULL;
    uint64_t acc = 0;
    for (int i = 0; i < 1000; i++) {
        uint64_t v = xorshift(&seed);
        acc += (uint64_t)__builtin_popcountll(v) * 3 + (uint64_t)__builtin_clzll(v | 1) + (uint64_t)__builtin_ctzll(v | (1ULL << 63));
        acc ^= rotr64(v, i);
    }
    printf("acc=%016llx\n", (unsigned long long)acc);
    uint32_t x = 0xDEADBEEFu;
    printf("rotl=%08x bswap=%08x rev=%08x\n", rotl32(x, 8), __builtin_bswap32(x), reverse_bits(x));
    printf("bswap64=%016llx\n", (unsigned long long)__builtin_bswap64(0x0123456789ABCDEFULL));
    printf("pop=%u/%d parity=%d\n", popcount_manual(0xF0F0F0F0F0ULL), __builtin_popcountll(0xF0F0F0F0F0ULL), __builtin_parity(0x7u));
    int32_t neg = -12345;
    printf("sar=%d shr=%u\n", neg >> 3, (uint32_t)neg >> 3);
    uint8_t b = 0xA5;
    printf("b=%02x ~b=%02x mask=%02x\n", b, (uint8_t)~b, b & 0x3C);
    unsigned __int128 big = (unsigned __int128)0xFFFFFFFFFFFFFFFFULL * 0xFFFFFFFFFFFFFFFFULL;
    printf("u128 hi=%016llx lo=%016llx\n", (unsigned long long)(big >> 64), (unsigned long long)big);
    int of;
    int r = 0;
    of = __builtin_add_overflow(2147483600, 100, &r);
    printf("overflow=%d r=%d\n", of, r);
    return 0;
}
