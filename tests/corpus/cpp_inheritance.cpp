// corpus-flags: -g
// Inheritance: multiple and virtual inheritance, dynamic_cast, typeid, protected, override.
#include <cstdio>
#include <memory>
#include <typeinfo>
#include <vector>

struct Named { virtual ~Named() = default; virtual const char *name() const { return "named"; } };
struct Sized { virtual ~Sized() = default; virtual int size() const = 0; int sized_tag = 7; };

struct Base : Named {
    explicit Base(int v) : v_(v) { std::printf("Base(%d)\n", v); }
    ~Base() override { std::printf("~Base(%d)\n", v_); }
    const char *name() const override { return "base"; }
    virtual int value() const { return v_; }
protected:
    int v_;
};

struct Derived : Base, Sized {
    Derived(int v, int w) : Base(v), w_(w) { std::printf("Derived(%d,%d)\n", v, w); }
    ~Derived() override { std::printf("~Derived\n"); }
    const char *name() const override { return "derived"; }
    int value() const override { return v_ * 10 + w_; }
    int size() const override { return w_; }
private:
    int w_;
};

struct Animal { virtual ~Animal() = default; int legs = 4; };
struct Mammal : virtual Animal { int fur = 1; };
struct Winged : virtual Animal { int wings = 2; };
struct Bat : Mammal, Winged { Bat() { legs = 2; } };

int main() {
    {
        Derived d(3, 4);
        Base *b = &d;
        Sized *s = &d;
        Named *n = &d;
        std::printf("%s %d %d %s\n", b->name(), b->value(), s->size(), n->name());
        std::printf("cast ok=%d cross=%d\n", dynamic_cast<Derived *>(n) != nullptr, dynamic_cast<Sized *>(b)->size());
        std::printf("typeid same=%d\n", typeid(*n) == typeid(Derived));
        std::printf("tag=%d\n", s->sized_tag);
    }
    std::vector<std::unique_ptr<Named>> objs;
    objs.push_back(std::make_unique<Named>());
    objs.push_back(std::make_unique<Base>(1));
    objs.push_back(std::make_unique<Derived>(2, 5));
    for (auto &o : objs) {
        auto *sz = dynamic_cast<Sized *>(o.get());
        std::printf("%s sized=%d\n", o->name(), sz ? sz->size() : -1);
    }
    objs.clear();
    Bat bat;
    Animal &a = bat;
    std::printf("bat legs=%d fur=%d wings=%d via base=%d\n", bat.legs, bat.fur, bat.wings, a.legs);
    std::printf("is mammal=%d\n", dynamic_cast<Mammal *>(&a) != nullptr);
    return 0;
}
