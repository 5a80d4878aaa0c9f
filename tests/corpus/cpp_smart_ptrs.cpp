// Smart pointers: unique_ptr (arrays, custom deleters), shared_ptr (aliasing, use_count), weak_ptr, enable_shared_from_this.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

struct Res {
    std::string name;
    explicit Res(std::string n) : name(std::move(n)) { std::printf("acquire %s\n", name.c_str()); }
    ~Res() { std::printf("release %s\n", name.c_str()); }
};

struct Node : std::enable_shared_from_this<Node> {
    int v;
    std::vector<std::shared_ptr<Node>> children;
    std::weak_ptr<Node> parent;
    explicit Node(int v) : v(v) {}
    std::shared_ptr<Node> add(int cv) {
        auto c = std::make_shared<Node>(cv);
        c->parent = shared_from_this();
        children.push_back(c);
        return c;
    }
    int sum() const { int s = v; for (auto &c : children) s += c->sum(); return s; }
};

static int closes = 0;
struct FileCloser { void operator()(int *p) const { ++closes; delete p; } };

int main() {
    {
        auto a = std::make_unique<Res>("A");
        std::unique_ptr<Res> b = std::move(a);
        std::printf("a null=%d b=%s\n", a == nullptr, b->name.c_str());
        b.reset(new Res("B"));
        std::printf("after reset\n");
    }
    std::shared_ptr<Res> s1 = std::make_shared<Res>("S");
    {
        std::shared_ptr<Res> s2 = s1;
        std::printf("use_count=%ld\n", s1.use_count());
    }
    std::weak_ptr<Res> w = s1;
    std::printf("use_count=%ld expired=%d\n", s1.use_count(), w.expired());
    if (auto locked = w.lock()) std::printf("locked %s\n", locked->name.c_str());
    s1.reset();
    std::printf("expired=%d\n", w.expired());
    auto root = std::make_shared<Node>(1);
    auto c1 = root->add(2);
    c1->add(3)->add(4);
    root->add(5);
    std::printf("tree sum=%d parent of c1=%d\n", root->sum(), c1->parent.lock()->v);
    {
        std::unique_ptr<int, FileCloser> h(new int(7));
        std::unique_ptr<int[]> arr(new int[5]{1, 2, 3, 4, 5});
        int s = 0;
        for (int i = 0; i < 5; ++i) s += arr[i];
        std::printf("handle=%d arr sum=%d\n", *h, s);
    }
    std::printf("closes=%d\n", closes);
    struct Pair { int a; int b; };
    auto pp = std::make_shared<Pair>(Pair{10, 20});
    std::shared_ptr<int> alias(pp, &pp->b);
    std::printf("alias=%d count=%ld\n", *alias, pp.use_count());
    std::shared_ptr<Res> custom(new Res("C"), [](Res *r) { std::printf("custom deleter\n"); delete r; });
    return 0;
}
