#include <iostream>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

struct Shape { virtual ~Shape() = default; virtual double area() const = 0; };
struct Sq : Shape { double s; explicit Sq(double s) : s(s) {} double area() const override { return s * s; } };
struct Tri : Shape { double b, h; Tri(double b, double h) : b(b), h(h) {} double area() const override { return b * h / 2; } };

static double checked(double x) { if (x < 0) throw std::domain_error("negative"); return x; }

int main() {
    std::vector<std::unique_ptr<Shape>> v;
    v.push_back(std::make_unique<Sq>(3));
    v.push_back(std::make_unique<Tri>(4, 5));
    std::map<std::string, double> m;
    for (auto &s : v) m[std::to_string(s->area())] = s->area();
    double total = 0;
    for (auto &[k, a] : m) total += a;
    try { checked(-1); } catch (const std::exception &e) { std::cout << "caught " << e.what() << "\n"; }
    std::cout << "total " << total << " entries " << m.size() << "\n";
}
