// corpus-flags: -g
// Lambdas and std::function: captures by value/reference, mutable, generic, recursive, callbacks.
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

static std::function<int(int)> make_adder(int n) { return [n](int x) { return x + n; }; }
static auto make_counter() { int c = 0; return [c]() mutable { return ++c; }; }

static std::function<double(double)> compose(std::function<double(double)> f, std::function<double(double)> g) {
    return [f, g](double x) { return f(g(x)); };
}

struct EventBus {
    std::map<std::string, std::vector<std::function<void(int)>>> handlers;
    void on(const std::string &ev, std::function<void(int)> h) { handlers[ev].push_back(std::move(h)); }
    void emit(const std::string &ev, int v) { for (auto &h : handlers[ev]) h(v); }
};

int main() {
    auto add5 = make_adder(5);
    std::printf("add5(10)=%d\n", add5(10));
    auto ctr = make_counter();
    ctr(); ctr();
    std::printf("counter=%d\n", ctr());
    int total = 0;
    auto acc = [&total](int x) { total += x; };
    for (int i = 1; i <= 10; ++i) acc(i);
    std::printf("total=%d\n", total);
    auto generic = [](auto a, auto b) { return a * b; };
    std::printf("generic %d %.2f\n", generic(6, 7), generic(1.5, 2.5));
    std::function<long(int)> fact = [&fact](int n) -> long { return n <= 1 ? 1 : n * fact(n - 1); };
    std::printf("fact(15)=%ld\n", fact(15));
    auto f = compose([](double x) { return x * x; }, [](double x) { return x + 1; });
    std::printf("compose(3)=%.1f\n", f(3));
    EventBus bus;
    int clicks = 0;
    std::string log;
    bus.on("click", [&clicks](int v) { clicks += v; });
    bus.on("click", [&log](int v) { log += "c" + std::to_string(v); });
    bus.on("key", [&log](int v) { log += "k" + std::to_string(v); });
    bus.emit("click", 2); bus.emit("key", 7); bus.emit("click", 3); bus.emit("none", 1);
    std::printf("clicks=%d log=%s\n", clicks, log.c_str());
    std::vector<std::function<int(int)>> pipeline{[](int x) { return x + 1; }, [](int x) { return x * 3; }, make_adder(-4)};
    int v = 5;
    for (auto &step : pipeline) v = step(v);
    std::printf("pipeline=%d\n", v);
    int a = 1, b = 2;
    auto swapper = [&, b]() mutable { b += 10; a += b; return b; };
    int rb = swapper();
    std::printf("a=%d b=%d rb=%d\n", a, b, rb);
    auto iife = [] { int s = 0; for (int i = 0; i < 5; ++i) s += i * i; return s; }();
    std::printf("iife=%d empty=%d\n", iife, !std::function<void()>());
    return 0;
}
