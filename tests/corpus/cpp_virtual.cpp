// Virtual calls: abstract shapes, visitor-ish dispatch, pure virtuals, virtual destructors, covariant returns.
#include <cmath>
#include <cstdio>
#include <memory>
#include <vector>

struct Shape {
    virtual ~Shape() = default;
    virtual double area() const = 0;
    virtual double perimeter() const = 0;
    virtual const char *kind() const = 0;
    virtual Shape *clone() const = 0;
    double ratio() const { return area() / perimeter(); }
};

struct Circle : Shape {
    double r;
    explicit Circle(double r) : r(r) {}
    double area() const override { return M_PI * r * r; }
    double perimeter() const override { return 2 * M_PI * r; }
    const char *kind() const override { return "circle"; }
    Circle *clone() const override { return new Circle(*this); }
};

struct Rect : Shape {
    double w, h;
    Rect(double w, double h) : w(w), h(h) {}
    double area() const override { return w * h; }
    double perimeter() const override { return 2 * (w + h); }
    const char *kind() const override { return "rect"; }
    Rect *clone() const override { return new Rect(*this); }
};

struct Square final : Rect {
    explicit Square(double s) : Rect(s, s) {}
    const char *kind() const override { return "square"; }
    Square *clone() const override { return new Square(*this); }
};

struct Triangle : Shape {
    double a, b, c;
    Triangle(double a, double b, double c) : a(a), b(b), c(c) {}
    double area() const override { double s = (a + b + c) / 2; return std::sqrt(s * (s - a) * (s - b) * (s - c)); }
    double perimeter() const override { return a + b + c; }
    const char *kind() const override { return "triangle"; }
    Triangle *clone() const override { return new Triangle(*this); }
};

int main() {
    std::vector<std::unique_ptr<Shape>> shapes;
    shapes.emplace_back(new Circle(1.5));
    shapes.emplace_back(new Rect(2, 3.5));
    shapes.emplace_back(new Square(4));
    shapes.emplace_back(new Triangle(3, 4, 5));
    double total = 0;
    for (const auto &s : shapes) {
        std::printf("%-8s area=%8.4f perim=%8.4f ratio=%.4f\n", s->kind(), s->area(), s->perimeter(), s->ratio());
        total += s->area();
    }
    std::printf("total=%.6f\n", total);
    std::unique_ptr<Shape> copy(shapes[2]->clone());
    std::printf("clone kind=%s area=%.1f\n", copy->kind(), copy->area());
    Square sq(2);
    Rect &r = sq;
    std::printf("static=%s dynamic=%s\n", sq.Rect::kind(), r.kind());
    return 0;
}
