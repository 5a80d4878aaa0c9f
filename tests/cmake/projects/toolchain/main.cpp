// C++ through enzyme-c++: d/dx (x^2 * y) at (x, y) = (1.5, 4): expect 12.
#include <enzyme.h>

#include <cstdio>

namespace {
template <typename T>
T g(T x, T y) { return x * x * y; }

double g_of_x(double x) { return g(x, 4.0); }
}  // namespace

int main() {
    std::printf("%.6f\n", __enzyme_autodiff(reinterpret_cast<void *>(g_of_x), 1.5));
    return 0;
}
