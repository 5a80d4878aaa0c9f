// Exceptions: rethrow, nested try, destructors during unwinding, noexcept, exception_ptr, nested_exception.
#include <cstdio>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>

static int depth = 0;
struct Guard {
    const char *name;
    explicit Guard(const char *n) : name(n) { ++depth; std::printf("enter %s (%d)\n", name, depth); }
    ~Guard() { std::printf("leave %s (%d)\n", name, depth); --depth; }
};

static void level3(int x) {
    Guard g("level3");
    if (x > 2) throw std::runtime_error("level3 failed x=" + std::to_string(x));
}
static void level2(int x) {
    Guard g("level2");
    auto p = std::make_unique<Guard>("heap");
    level3(x);
}
static void level1(int x) {
    Guard g("level1");
    try {
        level2(x);
    } catch (const std::runtime_error &e) {
        std::printf("level1 caught: %s, rethrowing\n", e.what());
        throw;
    }
}

static void wrap() {
    try {
        throw std::logic_error("inner");
    } catch (...) {
        std::throw_with_nested(std::runtime_error("outer"));
    }
}

static void print_nested(const std::exception &e, int lvl) {
    std::printf("%*s%s\n", lvl * 2, "", e.what());
    try { std::rethrow_if_nested(e); } catch (const std::exception &inner) { print_nested(inner, lvl + 1); }
}

static int safe() noexcept { return 5; }

int main() {
    for (int x = 2; x <= 3; ++x) {
        try {
            level1(x);
            std::printf("x=%d ok\n", x);
        } catch (const std::exception &e) {
            std::printf("main caught: %s depth=%d\n", e.what(), depth);
        }
    }
    std::exception_ptr ep;
    try { throw std::invalid_argument("stored"); } catch (...) { ep = std::current_exception(); }
    try { std::rethrow_exception(ep); } catch (const std::invalid_argument &e) { std::printf("from ptr: %s\n", e.what()); }
    try { wrap(); } catch (const std::exception &e) { print_nested(e, 0); }
    int caught = 0;
    for (int i = 0; i < 100; ++i) {
        try {
            try { if (i % 3 == 0) throw i; }
            catch (int v) { if (v % 2 == 0) throw; caught += 1000; }
        } catch (int v) { caught += v; }
    }
    std::printf("caught=%d safe=%d noexcept=%d\n", caught, safe(), noexcept(safe()));
    return 0;
}
