// CRTP, custom iterators usable with range-for and <algorithm>, generators, operator<=>-free comparisons.
#include <algorithm>
#include <cstdio>
#include <iterator>
#include <numeric>
#include <vector>

template <typename Derived> struct Printable {
    void print() const { std::printf("<%s:%d>\n", static_cast<const Derived *>(this)->tag(), static_cast<const Derived *>(this)->value()); }
};
struct Apple : Printable<Apple> { const char *tag() const { return "apple"; } int value() const { return 3; } };
struct Pear : Printable<Pear> { const char *tag() const { return "pear"; } int value() const { return 9; } };

template <typename D> struct Counted {
    static inline int created = 0;
    Counted() { ++created; }
};
struct Foo : Counted<Foo> {};
struct Bar : Counted<Bar> {};

class Range {
    long lo_, hi_, step_;
public:
    Range(long lo, long hi, long step = 1) : lo_(lo), hi_(hi), step_(step) {}
    struct iterator {
        using iterator_category = std::forward_iterator_tag;
        using value_type = long;
        using difference_type = long;
        using pointer = const long *;
        using reference = long;
        long cur, step;
        long operator*() const { return cur; }
        iterator &operator++() { cur += step; return *this; }
        iterator operator++(int) { iterator t = *this; cur += step; return t; }
        bool operator==(const iterator &o) const { return cur >= o.cur; }
        bool operator!=(const iterator &o) const { return cur < o.cur; }
    };
    iterator begin() const { return {lo_, step_}; }
    iterator end() const { return {hi_, step_}; }
};

template <typename T> class Ring {
    std::vector<T> buf_;
    std::size_t head_ = 0;
public:
    explicit Ring(std::size_t n) : buf_(n) {}
    void push(const T &v) { buf_[head_++ % buf_.size()] = v; }
    T average() const { return std::accumulate(buf_.begin(), buf_.end(), T{}) / T(buf_.size()); }
};

int main() {
    Apple{}.print();
    Pear{}.print();
    Foo f1, f2, f3;
    Bar b1;
    (void)f1; (void)f2; (void)f3; (void)b1;
    std::printf("Foo=%d Bar=%d\n", Counted<Foo>::created, Counted<Bar>::created);
    long s = 0;
    for (long x : Range(0, 100, 7)) s += x;
    std::printf("range sum=%ld\n", s);
    Range r(3, 40, 3);
    std::printf("count odd=%ld max=%ld\n", long(std::count_if(r.begin(), r.end(), [](long x) { return x % 2; })), *std::max_element(r.begin(), r.end()));
    std::vector<long> collected(r.begin(), r.end());
    std::printf("collected %zu last=%ld\n", collected.size(), collected.back());
    Ring<double> ring(4);
    for (int i = 1; i <= 10; ++i) ring.push(i * 1.5);
    std::printf("ring avg=%.3f\n", ring.average());
    return 0;
}
