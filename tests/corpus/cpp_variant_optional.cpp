// std::variant + std::visit, std::optional, std::any, std::pair/tuple return values.
#include <any>
#include <cstdio>
#include <optional>
#include <string>
#include <variant>
#include <vector>

using Value = std::variant<int, double, std::string, std::vector<int>>;

template <class... Ts> struct overloaded : Ts... { using Ts::operator()...; };
template <class... Ts> overloaded(Ts...) -> overloaded<Ts...>;

static std::optional<int> find_index(const std::vector<std::string> &v, const std::string &k) {
    for (std::size_t i = 0; i < v.size(); ++i) if (v[i] == k) return int(i);
    return std::nullopt;
}

static std::optional<double> safe_sqrt(double x) { if (x < 0) return {}; double g = x; for (int i = 0; i < 40; ++i) g = 0.5 * (g + x / (g ? g : 1)); return g; }

int main() {
    std::vector<Value> vals{42, 2.5, std::string("text"), std::vector<int>{1, 2, 3}, -7};
    for (const auto &v : vals) {
        std::visit(overloaded{
                       [](int i) { std::printf("int %d\n", i); },
                       [](double d) { std::printf("double %.3f\n", d); },
                       [](const std::string &s) { std::printf("string %s\n", s.c_str()); },
                       [](const std::vector<int> &xs) { std::printf("vector of %zu\n", xs.size()); },
                   },
                   v);
    }
    int ints = 0;
    for (const auto &v : vals) ints += std::holds_alternative<int>(v);
    std::printf("ints=%d index of 3rd=%zu get_if=%d\n", ints, vals[2].index(), std::get_if<double>(&vals[1]) != nullptr);
    try {
        std::printf("%d\n", std::get<int>(vals[1]));
    } catch (const std::bad_variant_access &) {
        std::printf("bad_variant_access\n");
    }
    std::vector<std::string> keys{"a", "b", "c"};
    for (const char *k : {"b", "z"}) {
        auto idx = find_index(keys, k);
        std::printf("%s -> %s %d\n", k, idx ? "found" : "none", idx.value_or(-1));
    }
    for (double x : {16.0, -1.0, 2.0}) {
        if (auto r = safe_sqrt(x)) std::printf("sqrt(%.1f)=%.9f\n", x, *r);
        else std::printf("sqrt(%.1f) undefined\n", x);
    }
    std::any a = 5;
    std::printf("any int=%d\n", std::any_cast<int>(a));
    a = std::string("now a string");
    std::printf("any string=%s has=%d\n", std::any_cast<std::string &>(a).c_str(), a.has_value());
    try { (void)std::any_cast<double>(a); } catch (const std::bad_any_cast &) { std::printf("bad_any_cast\n"); }
    return 0;
}
