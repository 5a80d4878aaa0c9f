// constexpr: functions, constructors, lookup tables computed at compile time, static_assert, if constexpr.
#include <array>
#include <cstdio>

constexpr unsigned long long fib(int n) {
    unsigned long long a = 0, b = 1;
    for (int i = 0; i < n; ++i) { auto t = a + b; a = b; b = t; }
    return a;
}

constexpr bool is_prime(int n) {
    if (n < 2) return false;
    for (int d = 2; d * d <= n; ++d) if (n % d == 0) return false;
    return true;
}

template <std::size_t N> constexpr std::array<int, N> primes() {
    std::array<int, N> out{};
    std::size_t k = 0;
    for (int n = 2; k < N; ++n) if (is_prime(n)) out[k++] = n;
    return out;
}

struct Rgb {
    unsigned char r, g, b;
    constexpr Rgb(unsigned v) : r((v >> 16) & 0xFF), g((v >> 8) & 0xFF), b(v & 0xFF) {}
    constexpr unsigned luma() const { return (299u * r + 587u * g + 114u * b) / 1000u; }
};

constexpr std::array<unsigned, 256> crc_table() {
    std::array<unsigned, 256> t{};
    for (unsigned i = 0; i < 256; ++i) {
        unsigned c = i;
        for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        t[i] = c;
    }
    return t;
}
constexpr auto kCrc = crc_table();

static unsigned crc32(const char *s) {
    unsigned c = 0xFFFFFFFFu;
    while (*s) c = kCrc[(c ^ (unsigned char)*s++) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

constexpr auto kPrimes = primes<20>();
static_assert(fib(10) == 55, "fib");
static_assert(kPrimes[4] == 11, "primes");
static_assert(Rgb(0xFFFFFF).luma() == 255, "luma");

int main(int argc, char **) {
    constexpr auto f90 = fib(90);
    std::printf("fib(90)=%llu runtime fib(%d)=%llu\n", f90, argc + 40, fib(argc + 40));
    for (int p : kPrimes) std::printf("%d ", p);
    std::printf("\n");
    constexpr Rgb orange(0xFF8800);
    std::printf("orange luma=%u r=%u\n", orange.luma(), unsigned(orange.r));
    std::printf("crc32=%08x %08x\n", crc32("123456789"), crc32("The quick brown fox"));
    constexpr int sq = [](int x) { return x * x; }(12);
    std::printf("sq=%d\n", sq);
    return 0;
}
