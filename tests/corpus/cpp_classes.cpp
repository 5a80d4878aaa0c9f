// Classes: constructors, destructors, copy/move, static members, const methods, friends.
#include <cstdio>
#include <cstring>
#include <utility>

class Buffer {
public:
    explicit Buffer(std::size_t n) : size_(n), data_(new int[n]) { ++live; for (std::size_t i = 0; i < n; ++i) data_[i] = int(i); }
    Buffer(const Buffer &o) : size_(o.size_), data_(new int[o.size_]) { ++live; ++copies; std::memcpy(data_, o.data_, size_ * sizeof(int)); }
    Buffer(Buffer &&o) noexcept : size_(o.size_), data_(o.data_) { ++live; ++moves; o.data_ = nullptr; o.size_ = 0; }
    Buffer &operator=(Buffer o) noexcept { std::swap(size_, o.size_); std::swap(data_, o.data_); return *this; }
    ~Buffer() { --live; delete[] data_; }
    std::size_t size() const { return size_; }
    int sum() const { int s = 0; for (std::size_t i = 0; i < size_; ++i) s += data_[i]; return s; }
    int &operator[](std::size_t i) { return data_[i]; }
    friend bool same(const Buffer &a, const Buffer &b);
    static int live, copies, moves;
private:
    std::size_t size_;
    int *data_;
};
int Buffer::live = 0, Buffer::copies = 0, Buffer::moves = 0;

bool same(const Buffer &a, const Buffer &b) {
    return a.size_ == b.size_ && std::memcmp(a.data_, b.data_, a.size_ * sizeof(int)) == 0;
}

static Buffer make(std::size_t n) { Buffer b(n); b[0] = 100; return b; }

struct Counter {
    int value = 0;
    Counter &inc() { ++value; return *this; }
    Counter &add(int x) { value += x; return *this; }
};

int main() {
    {
        Buffer a(10);
        Buffer b = a;
        std::printf("same=%d sum=%d\n", same(a, b), a.sum());
        b[3] = 50;
        std::printf("same=%d sum=%d live=%d\n", same(a, b), b.sum(), Buffer::live);
        Buffer c = std::move(b);
        std::printf("moved size=%zu old=%zu\n", c.size(), b.size());
        a = make(5);
        std::printf("a size=%zu sum=%d\n", a.size(), a.sum());
    }
    std::printf("live=%d copies=%d moves>=1:%d\n", Buffer::live, Buffer::copies, Buffer::moves >= 1);
    Counter k;
    k.inc().inc().add(10).inc();
    std::printf("counter=%d\n", k.value);
    return 0;
}
