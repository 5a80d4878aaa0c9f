// Variadic templates: recursion, fold expressions, parameter packs, tuple, std::apply, index_sequence.
#include <cstdio>
#include <string>
#include <tuple>
#include <utility>

template <typename... Ts> constexpr auto sum(Ts... xs) { return (xs + ... + 0); }
template <typename... Ts> constexpr bool all_positive(Ts... xs) { return ((xs > 0) && ...); }

static void print_one(int x) { std::printf("int:%d ", x); }
static void print_one(double x) { std::printf("double:%.2f ", x); }
static void print_one(const char *x) { std::printf("str:%s ", x); }
static void print_one(const std::string &x) { std::printf("string:%s ", x.c_str()); }

template <typename... Ts> static void print_all(const Ts &...xs) { (print_one(xs), ...); std::printf("(%zu)\n", sizeof...(Ts)); }

static void rec_print() { std::printf("end\n"); }
template <typename T, typename... Rest> static void rec_print(T first, Rest... rest) {
    std::printf("[%d left] ", int(sizeof...(rest)));
    print_one(first);
    rec_print(rest...);
}

template <typename Tuple, std::size_t... I> static void print_tuple(const Tuple &t, std::index_sequence<I...>) {
    ((std::printf(I == 0 ? "" : ", "), print_one(std::get<I>(t))), ...);
    std::printf("\n");
}

template <typename F, typename... Args> static auto call_twice(F f, Args &&...args) {
    f(args...);
    return f(std::forward<Args>(args)...);
}

template <typename... Ts> struct TypeList { static constexpr std::size_t size = sizeof...(Ts); };

template <typename T, typename... Args> static T make(Args &&...args) { return T(std::forward<Args>(args)...); }

int main() {
    std::printf("sum=%d %.2f\n", sum(1, 2, 3, 4, 5), sum(1.5, 2.25, 3));
    std::printf("all_positive=%d %d\n", all_positive(1, 2, 3), all_positive(1, -2, 3));
    print_all(1, 2.5, "three", std::string("four"));
    rec_print(7, 8.25, "x");
    auto t = std::make_tuple(10, 2.5, "tuple");
    print_tuple(t, std::make_index_sequence<3>{});
    auto r = std::apply([](int a, double b, const char *c) { return a * b + c[0]; }, t);
    std::printf("apply=%.2f\n", r);
    int counter = 0;
    int res = call_twice([&counter](int a, int b) { counter += a; return counter * b; }, 3, 4);
    std::printf("call_twice=%d counter=%d\n", res, counter);
    std::printf("TypeList size=%zu\n", TypeList<int, char, double, void>::size);
    auto s = make<std::string>(5, 'z');
    auto p = make<std::pair<int, double>>(1, 2.0);
    std::printf("%s %d %.1f\n", s.c_str(), p.first, p.second);
    auto [a, b, c] = std::tuple<int, char, long>{1, 'q', 1L << 40};
    std::printf("structured %d %c %ld\n", a, b, c);
    return 0;
}
