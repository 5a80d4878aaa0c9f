// <cmath>: overloads for float/double/long double, special functions, numeric_limits, ODE integration.
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <limits>

template <typename T> static T rk4_decay(T y0, T k, T h, int steps) {
    T y = y0;
    for (int i = 0; i < steps; ++i) {
        T k1 = -k * y, k2 = -k * (y + h / 2 * k1), k3 = -k * (y + h / 2 * k2), k4 = -k * (y + h * k3);
        y += h / 6 * (k1 + 2 * k2 + 2 * k3 + k4);
    }
    return y;
}

int main() {
    for (double x : {0.1, 0.5, 1.0, 2.5}) {
        std::printf("x=%.1f tgamma=%.9f lgamma=%.9f erf=%.9f erfc=%.9f asinh=%.9f\n", x, std::tgamma(x), std::lgamma(x),
                    std::erf(x), std::erfc(x), std::asinh(x));
    }
    float f = 2.0f;
    long double ld = 2.0L;
    std::printf("sqrt f=%.6f d=%.12f ld=%.15Lf\n", double(std::sqrt(f)), std::sqrt(2.0), std::sqrt(ld));
    std::printf("exp2=%.3f log2=%.6f log10=%.6f expm1=%.12f\n", std::exp2(10.0), std::log2(1000.0), std::log10(2.0), std::expm1(1e-5));
    std::printf("remainder=%.3f remquo-free fdim=%.2f nextafter>1=%d\n", std::remainder(10.0, 3.0), std::fdim(5.0, 3.5),
                std::nextafter(1.0, 2.0) > 1.0);
    std::printf("eps=%.6e max=%.6e min=%.6e inf=%d nan=%d\n", std::numeric_limits<double>::epsilon(), double(std::numeric_limits<float>::max()),
                std::numeric_limits<double>::min(), std::isinf(std::numeric_limits<double>::infinity()),
                std::isnan(std::numeric_limits<double>::quiet_NaN()));
    std::printf("rk4 double=%.12f exact=%.12f\n", rk4_decay(1.0, 0.7, 0.01, 300), std::exp(-0.7 * 3.0));
    std::printf("rk4 float=%.5f\n", double(rk4_decay(1.0f, 0.7f, 0.01f, 300)));
    std::printf("atan2 quadrants: %.4f %.4f %.4f %.4f\n", std::atan2(1, 1), std::atan2(1, -1), std::atan2(-1, -1), std::atan2(-1, 1));
    std::printf("cosh=%.6f sinh=%.6f tanh=%.6f acos=%.6f\n", std::cosh(1.2), std::sinh(1.2), std::tanh(1.2), std::acos(-0.3));
    std::printf("pow int=%.1f pow frac=%.9f abs=%d fabs=%.2f\n", std::pow(3, 4), std::pow(10.0, -0.5), std::abs(-17), std::fabs(-2.25));
    double intpart;
    double frac = std::modf(-3.75, &intpart);
    std::printf("modf %.2f %.2f scalbn=%.1f ilogb=%d\n", intpart, frac, std::scalbn(1.5, 4), std::ilogb(1024.0));
    return 0;
}
