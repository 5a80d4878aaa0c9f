#include <functional>
#include <cmath>
double integrate(const std::function<double(double)> &f, double a, double b, int n) { double h = (b - a) / n, s = 0; for (int i = 0; i < n; ++i) s += f(a + h * (i + 0.5)); return s * h; }
double run(double k) { auto g = [k](double x) { return std::sin(k * x) * std::log1p(x) + std::tanh(x) + std::fabs(x); }; return integrate(g, 0, 1, 100) + [](int q) { return q * 2.0; }(3); }
