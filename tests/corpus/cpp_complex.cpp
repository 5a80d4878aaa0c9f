// std::complex: arithmetic, polar, exp/log/pow, FFT of a small signal.
#include <cmath>
#include <complex>
#include <cstdio>
#include <vector>

using cd = std::complex<double>;

static void fft(std::vector<cd> &a) {
    std::size_t n = a.size();
    for (std::size_t i = 1, j = 0; i < n; ++i) {
        std::size_t bit = n >> 1;
        for (; j & bit; bit >>= 1) j ^= bit;
        j ^= bit;
        if (i < j) std::swap(a[i], a[j]);
    }
    for (std::size_t len = 2; len <= n; len <<= 1) {
        double ang = -2 * M_PI / double(len);
        cd wl(std::cos(ang), std::sin(ang));
        for (std::size_t i = 0; i < n; i += len) {
            cd w(1);
            for (std::size_t j = 0; j < len / 2; ++j) {
                cd u = a[i + j], v = a[i + j + len / 2] * w;
                a[i + j] = u + v;
                a[i + j + len / 2] = u - v;
                w *= wl;
            }
        }
    }
}

static double clean(double x) { return std::fabs(x) < 1e-9 ? 0.0 : x; }

int main() {
    cd a(1, 2), b(3, -1);
    cd p = a * b, q = a / b;
    std::printf("a*b=(%.4f,%.4f) a/b=(%.4f,%.4f) |a|=%.6f arg=%.6f\n", p.real(), p.imag(), q.real(), q.imag(), std::abs(a), std::arg(a));
    cd e = std::exp(cd(0, M_PI));
    std::printf("exp(i pi)=(%.6f,%.6f)\n", e.real(), clean(e.imag()));
    cd l = std::log(a), pw = std::pow(a, 2.5), sq = std::sqrt(cd(-9, 0));
    std::printf("log=(%.6f,%.6f) pow=(%.6f,%.6f) sqrt(-9)=(%.1f,%.1f)\n", l.real(), l.imag(), pw.real(), pw.imag(), sq.real(), sq.imag());
    cd pol = std::polar(2.0, M_PI / 4);
    std::printf("polar=(%.6f,%.6f) norm=%.3f conj=(%.1f,%.1f)\n", pol.real(), pol.imag(), std::norm(pol), std::conj(a).real(), std::conj(a).imag());
    std::vector<cd> sig(16);
    for (int i = 0; i < 16; ++i) sig[i] = std::sin(2 * M_PI * 3 * i / 16.0) + 0.5 * std::cos(2 * M_PI * 5 * i / 16.0);
    fft(sig);
    for (int k = 0; k < 8; ++k) std::printf("bin %d: %.4f\n", k, clean(std::abs(sig[k])));
    std::complex<float> fz(1.5f, -2.0f);
    fz *= fz;
    std::printf("float complex (%.3f,%.3f)\n", double(fz.real()), double(fz.imag()));
    return 0;
}
