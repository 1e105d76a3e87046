namespace loader {
class Batch {
  public:
    explicit Batch(int size) : size_(size) {}
    int stage2(int x);
    int stage3(int x);
    int stage4(int x);
    int stage5(int x);

  private:
    int poke(int v);
    int size_;
};
}  // namespace loader
