// C++ through enzyme-c++: d/dx of sum_{i<3} (x + i)^2 at x = 0.5, with a
// std::array and a lambda: 2 * (0.5 + 1.5 + 2.5) = 9.
#include <enzyme.h>

#include <array>
#include <cstdio>

static double f(double x) {
    std::array<double, 3> v{};
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = x + static_cast<double>(i);
    auto sq = [](double t) { return t * t; };
    double s = 0.0;
    for (double t : v) s += sq(t);
    return s;
}

int main() {
    std::printf("%.6f\n", __enzyme_autodiff(reinterpret_cast<void *>(f), 0.5));
    return 0;
}
