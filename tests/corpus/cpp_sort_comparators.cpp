// std::sort with comparators: functors, lambdas, member pointers, multi-key, std::greater.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

struct Employee { std::string name; std::string dept; int age; double salary; };

struct ByAgeDescThenName {
    bool operator()(const Employee &a, const Employee &b) const { return a.age != b.age ? a.age > b.age : a.name < b.name; }
};

static bool by_name(const Employee &a, const Employee &b) { return a.name < b.name; }

template <typename T, typename F> static void sort_by(std::vector<T> &v, F key) {
    std::sort(v.begin(), v.end(), [&](const T &a, const T &b) { return key(a) < key(b); });
}

static void print(const char *tag, const std::vector<Employee> &es) {
    std::printf("%s:", tag);
    for (const auto &e : es) std::printf(" %s", e.name.c_str());
    std::printf("\n");
}

int main() {
    std::vector<Employee> es{{"ann", "eng", 34, 120.5}, {"bob", "ops", 45, 90.0}, {"cid", "eng", 29, 130.0},
                             {"dee", "ops", 34, 95.5},  {"eve", "hr", 51, 80.0},  {"fay", "eng", 34, 110.0},
                             {"gus", "hr", 29, 70.25}};
    std::sort(es.begin(), es.end(), by_name);
    print("name", es);
    std::sort(es.begin(), es.end(), ByAgeDescThenName());
    print("age desc, name", es);
    std::sort(es.begin(), es.end(), [](const Employee &a, const Employee &b) {
        return std::tie(a.dept, b.salary) < std::tie(b.dept, a.salary);
    });
    print("dept, salary desc", es);
    sort_by(es, [](const Employee &e) { return e.salary; });
    print("salary", es);
    std::vector<double> ds{3.5, -1.25, 9.0, 0.0, 2.75, -7.5};
    std::sort(ds.begin(), ds.end(), std::greater<double>());
    for (double d : ds) std::printf("%.2f ", d);
    std::printf("\n");
    std::sort(ds.begin(), ds.end(), [](double a, double b) { return std::abs(a) < std::abs(b); });
    for (double d : ds) std::printf("%.2f ", d);
    std::printf("\n");
    std::vector<int> big(2000);
    unsigned s = 1;
    for (auto &x : big) { s = s * 1664525u + 1013904223u; x = int(s >> 8) % 100000; }
    std::sort(big.begin(), big.end(), [](int a, int b) { return (a % 1000) != (b % 1000) ? (a % 1000) < (b % 1000) : a < b; });
    std::printf("big first=%d mid=%d last=%d sorted=%d\n", big.front(), big[1000], big.back(),
                std::is_sorted(big.begin(), big.end(), [](int a, int b) { return (a % 1000) != (b % 1000) ? (a % 1000) < (b % 1000) : a < b; }));
    std::vector<std::string> words{"kiwi", "fig", "banana", "apple", "date", "cherry"};
    std::sort(words.begin(), words.end(), [](const std::string &a, const std::string &b) { return a.size() != b.size() ? a.size() < b.size() : a < b; });
    for (const auto &w : words) std::printf("%s ", w.c_str());
    std::printf("\n");
    std::partial_sort(big.begin(), big.begin() + 5, big.end(), std::greater<int>());
    std::printf("top5: %d %d %d %d %d\n", big[0], big[1], big[2], big[3], big[4]);
    return 0;
}
