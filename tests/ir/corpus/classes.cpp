#include <cmath>
struct Shape { virtual ~Shape() {} virtual double area() const = 0; };
struct Circle : Shape { double r; Circle(double r) : r(r) {} double area() const override { return M_PI * r * r; } };
struct Sq : Shape { double s; Sq(double s) : s(s) {} double area() const override { return s * s; } };
double total(Shape **s, int n) { double t = 0; for (int i = 0; i < n; ++i) t += s[i]->area(); return t; }
double f() { Circle c(2.0); Sq q(3.0); Shape *arr[2] = {&c, &q}; return total(arr, 2) + std::exp(std::sqrt(c.r)) + std::pow(q.s, 1.5); }
