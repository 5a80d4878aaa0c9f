// Operator overloading: arithmetic, comparison, compound assignment, subscript, call, stream, conversion, increment.
#include <cmath>
#include <cstdio>
#include <iostream>

struct Vec3 {
    double x, y, z;
    Vec3 operator+(const Vec3 &o) const { return {x + o.x, y + o.y, z + o.z}; }
    Vec3 operator-(const Vec3 &o) const { return {x - o.x, y - o.y, z - o.z}; }
    Vec3 operator*(double s) const { return {x * s, y * s, z * s}; }
    Vec3 operator-() const { return {-x, -y, -z}; }
    Vec3 &operator+=(const Vec3 &o) { x += o.x; y += o.y; z += o.z; return *this; }
    double operator|(const Vec3 &o) const { return x * o.x + y * o.y + z * o.z; }
    Vec3 operator^(const Vec3 &o) const { return {y * o.z - z * o.y, z * o.x - x * o.z, x * o.y - y * o.x}; }
    double &operator[](int i) { return i == 0 ? x : i == 1 ? y : z; }
    bool operator==(const Vec3 &o) const { return x == o.x && y == o.y && z == o.z; }
    bool operator!=(const Vec3 &o) const { return !(*this == o); }
    explicit operator double() const { return std::sqrt(*this | *this); }
};
Vec3 operator*(double s, const Vec3 &v) { return v * s; }
std::ostream &operator<<(std::ostream &os, const Vec3 &v) { return os << "(" << v.x << ", " << v.y << ", " << v.z << ")"; }

class Fraction {
    long n_, d_;
    static long gcd(long a, long b) { return b ? gcd(b, a % b) : (a < 0 ? -a : a); }
public:
    Fraction(long n = 0, long d = 1) : n_(n), d_(d) { long g = gcd(n_, d_); if (d_ < 0) g = -g; n_ /= g; d_ /= g; }
    Fraction operator+(const Fraction &o) const { return {n_ * o.d_ + o.n_ * d_, d_ * o.d_}; }
    Fraction operator*(const Fraction &o) const { return {n_ * o.n_, d_ * o.d_}; }
    Fraction operator/(const Fraction &o) const { return {n_ * o.d_, d_ * o.n_}; }
    bool operator<(const Fraction &o) const { return n_ * o.d_ < o.n_ * d_; }
    Fraction &operator++() { n_ += d_; return *this; }
    Fraction operator++(int) { Fraction t = *this; ++*this; return t; }
    friend std::ostream &operator<<(std::ostream &os, const Fraction &f) { return os << f.n_ << "/" << f.d_; }
};

struct Poly {
    double c[4];
    double operator()(double x) const { return ((c[3] * x + c[2]) * x + c[1]) * x + c[0]; }
};

int main() {
    Vec3 a{1, 2, 3}, b{-2, 0.5, 4};
    Vec3 c = a + 2.0 * b - -a;
    c += Vec3{0.25, 0.25, 0.25};
    std::cout << "c=" << c << " dot=" << (a | b) << " cross=" << (a ^ b) << "\n";
    c[1] = 10;
    std::cout << "c[1]=" << c[1] << " |a|=" << static_cast<double>(a) << " eq=" << (a == a) << (a != b) << "\n";
    Fraction h(1, 2), t(1, 3);
    Fraction s = h + t;
    std::cout << "sum=" << s << " prod=" << h * t << " div=" << h / t << " less=" << (t < h) << "\n";
    Fraction harmonic;
    for (int i = 1; i <= 10; ++i) harmonic = harmonic + Fraction(1, i);
    std::cout << "H10=" << harmonic << "\n";
    Fraction k(5, 3);
    Fraction old = k++;
    ++k;
    std::cout << "old=" << old << " k=" << k << "\n";
    Poly p{{1, -2, 0.5, 0.25}};
    std::cout << "p(2)=" << p(2) << " p(-1.5)=" << p(-1.5) << "\n";
    return 0;
}
