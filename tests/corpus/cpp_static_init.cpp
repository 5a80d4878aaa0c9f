// Global constructors/destructors, static locals with guards, inline variables, namespaces, registries.
#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace registry {
std::map<std::string, int (*)(int)> &table() {
    static std::map<std::string, int (*)(int)> t;
    return t;
}
struct Register {
    Register(const char *name, int (*fn)(int)) { table()[name] = fn; }
};
} // namespace registry

static int twice(int x) { return 2 * x; }
static int square(int x) { return x * x; }
static int negate(int x) { return -x; }
static registry::Register r1("twice", twice), r2("square", square), r3("negate", negate);

struct Tracer {
    const char *name;
    explicit Tracer(const char *n) : name(n) { std::printf("init %s\n", name); }
    ~Tracer() { std::printf("fini %s\n", name); }
};
static Tracer global_tracer("global");
inline int inline_counter = 100;
static std::vector<int> global_vec = [] { std::vector<int> v; for (int i = 0; i < 5; ++i) v.push_back(i * i); return v; }();

static Tracer &lazy() {
    static Tracer t("lazy");
    return t;
}

namespace outer { namespace inner { int value() { return 17; } } inline namespace v2 { int version() { return 2; } } }

int main() {
    std::printf("main starts, registry size=%zu\n", registry::table().size());
    for (const auto &[name, fn] : registry::table()) std::printf("%s(7)=%d\n", name.c_str(), fn(7));
    std::printf("lazy %s\n", lazy().name);
    std::printf("lazy again %s\n", lazy().name);
    inline_counter += global_vec.back();
    std::printf("inline_counter=%d value=%d version=%d\n", inline_counter, outer::inner::value(), outer::version());
    return 3;
}
