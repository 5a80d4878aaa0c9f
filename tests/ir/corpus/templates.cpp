template <typename T, int N> struct Vec { T v[N]; T dot(const Vec &o) const { T s = T(); for (int i = 0; i < N; ++i) s += v[i] * o.v[i]; return s; } };
template <typename T> T maxv(T a, T b) { return a > b ? a : b; }
double g(double x) { Vec<double, 3> a{{x, 2, 3}}, b{{1, x, 1}}; return a.dot(b) + maxv(x, 1.0); }
float h(float x) { Vec<float, 8> a{}; for (int i = 0; i < 8; i++) a.v[i] = x * i; return a.dot(a) + maxv<int>(1, 2); }
