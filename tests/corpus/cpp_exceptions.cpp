// corpus-flags: -g
// Exceptions: throw/catch by type, hierarchy, catch(...), std exceptions, function-try-block.
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

struct MyError : std::runtime_error {
    int code;
    MyError(const std::string &m, int c) : std::runtime_error(m), code(c) {}
};

static int parse_digit(char c) {
    if (c < '0' || c > '9') throw MyError(std::string("bad digit '") + c + "'", c);
    return c - '0';
}

static int parse(const char *s) {
    int v = 0;
    for (; *s; ++s) v = v * 10 + parse_digit(*s);
    return v;
}

static void thrower(int kind) {
    switch (kind) {
    case 0: throw 42;
    case 1: throw 3.5;
    case 2: throw std::string("string");
    case 3: throw std::out_of_range("range");
    case 4: throw MyError("mine", 7);
    default: throw "c-string";
    }
}

struct Widget {
    int v;
    explicit Widget(int x) try : v(x > 5 ? throw std::invalid_argument("too big") : x) {
    } catch (const std::invalid_argument &e) {
        std::printf("ctor failed: %s\n", e.what());
    }
};

int main() {
    const char *inputs[] = {"123", "4x5", "987654", "", "-1"};
    for (const char *in : inputs) {
        try {
            std::printf("parse(%s)=%d\n", in, parse(in));
        } catch (const MyError &e) {
            std::printf("error: %s code=%d\n", e.what(), e.code);
        }
    }
    for (int k = 0; k < 6; ++k) {
        try {
            thrower(k);
        } catch (int i) {
            std::printf("int %d\n", i);
        } catch (double d) {
            std::printf("double %.1f\n", d);
        } catch (const std::string &s) {
            std::printf("std::string %s\n", s.c_str());
        } catch (const MyError &e) {
            std::printf("MyError %s %d\n", e.what(), e.code);
        } catch (const std::exception &e) {
            std::printf("std::exception %s\n", e.what());
        } catch (...) {
            std::printf("unknown\n");
        }
    }
    try {
        std::vector<int> v(3);
        std::printf("%d\n", v.at(10));
    } catch (const std::out_of_range &) {
        std::printf("vector::at threw\n");
    }
    try {
        Widget w(9);
    } catch (const std::exception &e) {
        std::printf("rethrown from ctor: %s\n", e.what());
    }
    Widget ok(3);
    std::printf("ok.v=%d\n", ok.v);
    return 0;
}
