// threadmap_spec.h -- write a threadmap spec from your real CuTe / CUTLASS objects.
//
//   #include <threadmap_spec.h>   // nvcc -std=c++17 -x c++ -I$(threadmap spec-header --include-dir)
//                                 //      -I<cutlass>/include my_spec.cpp && ./a.out > my_kernel.yaml
//
//   using namespace cute;
//   auto tA = make_layout(make_shape(Int<16>{}, Int<16>{}), LayoutRight{});
//   auto copy_a = make_tiled_copy(Copy_Atom<AutoVectorizingCopy, float>{}, tA,
//                                 make_layout(make_shape(_1{}, _4{})));
//   threadmap::Spec s("my_transpose");
//   s.element<float>().threads(256).grid(M / 16, N / 64);
//   s.tensor("x", make_layout(make_shape(M, N), LayoutRight{}), threadmap::global)
//    .tensor("sA", sA_layout, threadmap::shared)
//    .copy(copy_a, threadmap::tile("x", make_shape(_16{}, _64{}), "bx", "by"), "sA")
//    .predicate("bounds")
//    .barrier()
//    ...;
//   s.print();   // YAML on stdout: `threadmap verify my_kernel.yaml`
//
// Every layout, swizzled layout, thread layout and TiledCopy is written with CuTe's own
// `print`, so the spec is exactly what the C++ objects are: a TiledCopy as its
// TiledLayout_TV and Tiler_MN (however it was made), a TiledMMA as its MMA operation and
// AtomLayoutMNK, a CUTLASS 2.x thread map as its template parameters.  Sizes are the
// program's values: the spec is for those sizes (ranges over sizes are written by hand).
//
// Sides of a copy: a tensor name ("sA", or threadmap::side("sA")), a CTA tile of a tensor
// (threadmap::tile("x", tile_shape, "bx", "by"): local_tile at block coordinates given as
// spec expressions), or registers (threadmap::registers("rA")); each partitioned by
// .threads(thr_layout) (local_partition), .tiled_copy(tc), .mma(tiled_mma, 'A'),
// .thread_map<ThreadMap>(contiguous_mode).  Spec::copy(tiled_copy, src, dst) gives the tiled
// copy to both sides.  Misuse throws threadmap::SpecError; types with no spec spelling fail
// to compile with a static_assert naming them.  An operand copy of a TiledMMA
// (make_tiled_copy_A/B) reads each element once per MMA atom sharing it: write
// expect_coverage("replicated") for it.
#pragma once

#include <cstdio>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <cute/tensor.hpp>
#include <cute/atom/copy_atom.hpp>
#include <cute/atom/mma_atom.hpp>
#include <cutlass/complex.h>
#include <cutlass/numeric_types.h>
#include <cutlass/transform/pitch_linear_thread_map.h>

namespace threadmap {

struct SpecError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

enum class Memory { global, shared };
inline constexpr Memory global = Memory::global;
inline constexpr Memory shared = Memory::shared;

namespace detail {

// YAML is written piece by piece to stdout, because that is where CuTe's print writes.
using Printer = std::function<void()>;

inline void put(const char* s) { std::fputs(s, stdout); }
inline void put(std::string const& s) { std::fputs(s.c_str(), stdout); }

// a YAML double-quoted scalar (names and descriptions are the user's text)
inline void quoted(std::string const& s) {
  std::fputc('"', stdout);
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      std::fputc('\\', stdout);
      std::fputc(c, stdout);
    } else if (c < 0x20 || c == 0x7f) {
      std::printf("\\x%02x", c);
    } else {
      std::fputc(c, stdout);
    }
  }
  std::fputc('"', stdout);
}

// a CuTe object as a quoted string, written by cute::print
template <class T>
Printer cute_text(T const& x) {
  return [x]() { put("\""); cute::print(x); put("\""); };
}

template <class T> struct element_name { static constexpr const char* value = nullptr; };
#define THREADMAP_ELEMENT(T, N) \
  template <> struct element_name<T> { static constexpr const char* value = N; };
THREADMAP_ELEMENT(float, "f32")
THREADMAP_ELEMENT(double, "f64")
THREADMAP_ELEMENT(cutlass::half_t, "f16")
THREADMAP_ELEMENT(cutlass::bfloat16_t, "bf16")
THREADMAP_ELEMENT(cutlass::tfloat32_t, "tf32")
THREADMAP_ELEMENT(cutlass::float_e4m3_t, "e4m3")
THREADMAP_ELEMENT(cutlass::float_e5m2_t, "e5m2")
THREADMAP_ELEMENT(int8_t, "i8")
THREADMAP_ELEMENT(uint8_t, "u8")
THREADMAP_ELEMENT(int16_t, "i16")
THREADMAP_ELEMENT(uint16_t, "u16")
THREADMAP_ELEMENT(int32_t, "i32")
THREADMAP_ELEMENT(uint32_t, "u32")
THREADMAP_ELEMENT(int64_t, "i64")
THREADMAP_ELEMENT(uint64_t, "u64")
THREADMAP_ELEMENT(cutlass::complex<float>, "cf32")
THREADMAP_ELEMENT(cutlass::complex<double>, "cf64")
THREADMAP_ELEMENT(cutlass::int4b_t, "i4")
THREADMAP_ELEMENT(cutlass::uint4b_t, "u4")
THREADMAP_ELEMENT(cutlass::uint1b_t, "b1")
#undef THREADMAP_ELEMENT

template <class T>
const char* element() {
  static_assert(element_name<std::remove_cv_t<T>>::value != nullptr,
                "threadmap: this element type has no spec name (f64 f32 tf32 f16 bf16 e4m3 e5m2 "
                "i8..i64 u8..u64 cf32 cf64 i4 u4 b1)");
  return element_name<std::remove_cv_t<T>>::value;
}

template <class T>
constexpr int bits() { return int(cute::sizeof_bits_v<T>); }

// The C++ name of a type, from the compiler's own spelling of this function's signature.
template <class T>
std::string type_name() {
  std::string s = __PRETTY_FUNCTION__;
  std::size_t a = s.find("T = ");
  if (a == std::string::npos) throw SpecError("threadmap: cannot read a type name from " + s);
  a += 4;
  std::size_t b = s.find_first_of(";]", a);
  std::string name = s.substr(a, b - a);
  // CuTe's own names are written as CuTe code spells them: SM75_U32x4_LDSM_N, UniversalFMA<...>
  for (std::size_t p; (p = name.find("cute::")) != std::string::npos;) name.erase(p, 6);
  return name;
}

inline std::string uint_name(int b) {
  if (b != 8 && b != 16 && b != 32 && b != 64 && b != 128) {
    throw SpecError("threadmap: a copy of " + std::to_string(b) + "-bit values has no spec spelling");
  }
  return "uint" + std::to_string(b) + "_t";
}

// A copy operation's spec spelling.  Sized operations are written by width, since the
// compiler spells uint16_t as "short unsigned int"; plain structs (ldmatrix, stmatrix) by name.
template <class Op> struct copy_op {
  static std::string name() { return type_name<Op>(); }
};
template <class S, class D> struct copy_op<cute::UniversalCopy<S, D>> {
  static std::string name() {
    if (bits<S>() != bits<D>()) throw SpecError("threadmap: UniversalCopy<S, D> with different widths");
    return "UniversalCopy<" + uint_name(bits<S>()) + ">";
  }
};
#define THREADMAP_SIZED_COPY(OP)                                                        \
  template <class S, class D> struct copy_op<cute::OP<S, D>> {                          \
    static std::string name() {                                                         \
      if (bits<S>() != bits<D>()) throw SpecError("threadmap: " #OP " with different widths"); \
      return std::string(#OP "<") + uint_name(bits<S>()) + ">";                          \
    }                                                                                   \
  };
THREADMAP_SIZED_COPY(SM80_CP_ASYNC_CACHEALWAYS)
THREADMAP_SIZED_COPY(SM80_CP_ASYNC_CACHEGLOBAL)
THREADMAP_SIZED_COPY(SM80_CP_ASYNC_CACHEALWAYS_ZFILL)
THREADMAP_SIZED_COPY(SM80_CP_ASYNC_CACHEGLOBAL_ZFILL)
#undef THREADMAP_SIZED_COPY
template <int N> struct copy_op<cute::AutoVectorizingCopyWithAssumedAlignment<N>> {
  static std::string name() {
    if (N == 128) return "AutoVectorizingCopy";
    if (N == 8) return "DefaultCopy";
    return "AutoVectorizingCopyWithAssumedAlignment<" + std::to_string(N) + ">";
  }
};

template <class Traits> struct traits_op;
template <class Op, class... Args> struct traits_op<cute::Copy_Traits<Op, Args...>> {
  using type = Op;
};

// CUTLASS 2.x pitch-linear thread maps: name and template parameters
template <class TM> struct thread_map_info {
  static constexpr bool known = false;
};
#define THREADMAP_MAP(NAME)                                                            \
  template <class Shape, int Threads, int EPA>                                         \
  struct thread_map_info<cutlass::transform::NAME<Shape, Threads, EPA>> {             \
    static constexpr bool known = true;                                                \
    static void print() {                                                              \
      std::printf("{name: " #NAME ", shape: [%d, %d], threads: %d, elements_per_access: %d", \
                  int(Shape::kContiguous), int(Shape::kStrided), Threads, EPA);        \
    }                                                                                  \
  };
THREADMAP_MAP(PitchLinearStripminedThreadMap)
THREADMAP_MAP(PitchLinearTilePolicyStripminedThreadContiguous)
THREADMAP_MAP(PitchLinearTilePolicyStripminedThreadStrided)
#undef THREADMAP_MAP
#define THREADMAP_WARP_MAP(NAME)                                                       \
  template <class Shape, int Threads, class Warp, int EPA>                             \
  struct thread_map_info<cutlass::transform::NAME<Shape, Threads, Warp, EPA>> {       \
    static constexpr bool known = true;                                                \
    static void print() {                                                              \
      std::printf("{name: " #NAME ", shape: [%d, %d], threads: %d, "                   \
                  "warp_thread_arrangement: [%d, %d], elements_per_access: %d",        \
                  int(Shape::kContiguous), int(Shape::kStrided), Threads,              \
                  int(Warp::kContiguous), int(Warp::kStrided), EPA);                   \
    }                                                                                  \
  };
THREADMAP_WARP_MAP(PitchLinearWarpRakedThreadMap)
THREADMAP_WARP_MAP(PitchLinearStridedWarpRakedThreadMap)
THREADMAP_WARP_MAP(PitchLinearWarpStripedThreadMap)
#undef THREADMAP_WARP_MAP

template <class Shape, std::size_t... I>
std::vector<long long> extents(Shape const& s, std::index_sequence<I...>) {
  return {static_cast<long long>(cute::size<I>(s))...};
}

template <class Shape>
std::vector<long long> extents(Shape const& s) {
  if constexpr (cute::is_tuple<Shape>::value) {
    return extents(s, std::make_index_sequence<cute::rank_v<Shape>>{});
  } else {
    return {static_cast<long long>(s)};
  }
}

template <class T> struct is_tiled_copy : std::false_type {};
template <class... Args> struct is_tiled_copy<cute::TiledCopy<Args...>> : std::true_type {};

template <class TM> struct tiled_mma_parts;
template <class Atom, class AtomLayoutMNK, class PermutationMNK>
struct tiled_mma_parts<cute::TiledMMA<Atom, AtomLayoutMNK, PermutationMNK>> {
  using op = typename Atom::MMA_Op;
  using layout = AtomLayoutMNK;
  static constexpr bool plain =
      std::is_same_v<PermutationMNK, cute::Tile<cute::Underscore, cute::Underscore, cute::Underscore>>;
};

}  // namespace detail

// One side of a copy: a tensor (optionally a CTA tile of it) or registers, and how the
// threads partition it.
class Side {
 public:
  Side(const char* tensor) : name_(tensor) {}         // NOLINT: "sA" is a side
  Side(std::string tensor) : name_(std::move(tensor)) {}  // NOLINT

  static Side registers(std::string name) {
    Side s(std::move(name));
    s.registers_ = true;
    return s;
  }

  // local_tile(tensor, tile_shape, (at0, at1, at2)): the tile coordinates are spec
  // expressions of the block coordinates bx, by, bz ("bx", "by + 1", "2 * bz")
  template <class Shape>
  Side& tile(Shape const& tile_shape, std::string at0, std::string at1 = "", std::string at2 = "") {
    tile_ = detail::extents(tile_shape);
    at_ = {std::move(at0)};
    if (!at1.empty()) at_.push_back(std::move(at1));
    if (!at2.empty()) at_.push_back(std::move(at2));
    if (at_.size() != tile_.size()) {
      throw SpecError("threadmap: side " + name_ + ": a rank-" + std::to_string(tile_.size()) +
                      " tile needs " + std::to_string(tile_.size()) + " tile coordinates");
    }
    return *this;
  }

  // local_partition(tile, thr_layout, threadIdx.x)
  template <class ThrLayout>
  Side& threads(ThrLayout const& thr_layout) {
    set("threads", [p = detail::cute_text(thr_layout)]() { p(); });
    return *this;
  }

  // tiled_copy.get_slice(threadIdx.x).partition_S (source) / partition_D (destination)
  template <class TiledCopy>
  Side& tiled_copy(TiledCopy const&) {
    using Op = typename detail::traits_op<typename TiledCopy::Traits>::type;
    std::string atom = detail::copy_op<Op>::name();
    auto tv = detail::cute_text(typename TiledCopy::TiledLayout_TV{});
    auto tiler = detail::cute_text(typename TiledCopy::Tiler_MN{});
    set("tiled_copy", [atom, tv, tiler]() {
      detail::put("{layout_tv: ");
      tv();
      detail::put(", tiler: ");
      tiler();
      detail::put(", atom: ");
      detail::quoted(atom);
      detail::put("}");
    });
    value_bits_ = detail::bits<typename TiledCopy::ValType>();
    return *this;
  }

  // tiled_mma.get_slice(threadIdx.x).partition_A / _B / _C
  template <class TiledMMA>
  Side& mma(TiledMMA const&, char operand) {
    using P = detail::tiled_mma_parts<TiledMMA>;
    static_assert(P::plain, "threadmap: a TiledMMA with a PermutationMNK has no spec spelling yet");
    if (operand != 'A' && operand != 'B' && operand != 'C') {
      throw SpecError("threadmap: side " + name_ + ": the MMA operand is 'A', 'B' or 'C'");
    }
    std::string atom = detail::type_name<typename P::op>();
    auto layout = detail::cute_text(typename P::layout{});
    set("mma", [atom, layout, operand]() {
      detail::put("{atom: ");
      detail::quoted(atom);
      detail::put(", atom_layout: ");
      layout();
      std::printf(", operand: %c}", operand);
    });
    return *this;
  }

  // a CUTLASS 2.x thread map; contiguous_mode: which mode of the CuTe tile is the thread
  // map's contiguous dimension (1: a row-major tile, 0: a column-major one)
  template <class ThreadMap>
  Side& thread_map(int contiguous_mode = 1) {
    static_assert(detail::thread_map_info<ThreadMap>::known,
                  "threadmap: this thread map has no spec spelling (pitch-linear stripmined, "
                  "tile-policy, warp-raked, strided warp-raked and warp-striped maps do)");
    if (contiguous_mode != 0 && contiguous_mode != 1) {
      throw SpecError("threadmap: side " + name_ + ": contiguous_mode is 0 or 1");
    }
    set("thread_map", [contiguous_mode]() {
      detail::thread_map_info<ThreadMap>::print();
      std::printf(", contiguous_mode: %d}", contiguous_mode);
    });
    return *this;
  }

  bool partitioned() const { return static_cast<bool>(partition_); }
  std::string const& name() const { return name_; }
  bool is_registers() const { return registers_; }
  int value_bits() const { return value_bits_; }

  void print() const {
    detail::put(registers_ ? "{registers: " : "{tensor: ");
    detail::quoted(name_);
    if (!tile_.empty()) {
      detail::put(", tile: [");
      for (std::size_t i = 0; i < tile_.size(); ++i) std::printf("%s%lld", i ? ", " : "", tile_[i]);
      detail::put("], at: [");
      for (std::size_t i = 0; i < at_.size(); ++i) {
        if (i) detail::put(", ");
        detail::quoted(at_[i]);
      }
      detail::put("]");
    }
    if (partition_) {
      detail::put(", ");
      detail::put(partition_key_);
      detail::put(": ");
      partition_();
    }
    detail::put("}");
  }

 private:
  void set(const char* key, detail::Printer p) {
    if (partition_) throw SpecError("threadmap: side " + name_ + " is already partitioned by " + partition_key_);
    if (registers_) throw SpecError("threadmap: registers " + name_ + " take no partition");
    partition_key_ = key;
    partition_ = std::move(p);
  }

  std::string name_;
  bool registers_ = false;
  std::vector<long long> tile_;
  std::vector<std::string> at_;
  std::string partition_key_;
  detail::Printer partition_;
  int value_bits_ = 0;  // a tiled copy's Copy_Atom value width, checked against the tensor
};

inline Side side(std::string tensor) { return Side(std::move(tensor)); }
inline Side registers(std::string name) { return Side::registers(std::move(name)); }
template <class Shape>
Side tile(std::string tensor, Shape const& tile_shape, std::string at0, std::string at1 = "",
          std::string at2 = "") {
  Side s(std::move(tensor));
  s.tile(tile_shape, std::move(at0), std::move(at1), std::move(at2));
  return s;
}

class Spec {
 public:
  explicit Spec(std::string name, std::string description = "")
      : name_(std::move(name)), description_(std::move(description)) {}

  template <class T>
  Spec& element() {
    element_ = detail::element<T>();
    element_bits_ = detail::bits<T>();
    return *this;
  }
  Spec& threads(int n) {
    if (n < 1 || n > 1024) throw SpecError("threadmap: a CTA has 1..1024 threads");
    threads_ = n;
    return *this;
  }
  Spec& grid(long long x, long long y = 1, long long z = 1) {
    grid_ = {x, y, z};
    while (grid_.size() > 1 && grid_.back() == 1) grid_.pop_back();
    return *this;
  }

  // A tensor of the spec's element type (or T's), in global or shared memory.
  template <class Layout>
  Spec& tensor(std::string name, Layout const& layout, Memory memory, int align = 256) {
    return add_tensor(std::move(name), detail::cute_text(layout), memory, nullptr, element_bits_, align);
  }
  template <class T, class Layout>
  Spec& tensor(std::string name, Layout const& layout, Memory memory, int align = 256) {
    return add_tensor(std::move(name), detail::cute_text(layout), memory, detail::element<T>(),
                      detail::bits<T>(), align);
  }
  // A cute::Tensor: element type from its value type, memory from its pointer
  // (make_gmem_ptr / make_smem_ptr).
  template <class Engine, class Layout>
  Spec& tensor(std::string name, cute::Tensor<Engine, Layout> const& t, int align = 256) {
    using TensorT = cute::Tensor<Engine, Layout>;
    using T = typename Engine::value_type;
    static_assert(cute::is_gmem<TensorT>::value || cute::is_smem<TensorT>::value,
                  "threadmap: give the tensor a gmem or smem pointer, or pass its layout and memory");
    Memory m = cute::is_smem<TensorT>::value ? shared : global;
    return add_tensor(std::move(name), detail::cute_text(t.layout()), m, detail::element<T>(),
                      detail::bits<T>(), align);
  }
  // The last tensor views another shared tensor's buffer (at an element offset).
  Spec& alias(std::string of, long long offset = 0) {
    if (tensors_.empty()) throw SpecError("threadmap: alias() follows a tensor()");
    tensors_.back().alias = std::move(of);
    tensors_.back().offset = offset;
    return *this;
  }

  Spec& copy(Side src, Side dst) {
    stages_.push_back(Stage{false, std::move(src), std::move(dst), "none", 0, ""});
    return *this;
  }
  // The tiled copy partitions both sides (partition_S, partition_D) unless a side has its own.
  template <class TiledCopy>
  Spec& copy(TiledCopy const& tc, Side src, Side dst) {
    static_assert(detail::is_tiled_copy<TiledCopy>::value,
                  "threadmap: Spec::copy(tiled_copy, src, dst) takes a cute::TiledCopy first "
                  "(make_tiled_copy, make_tiled_copy_A/B/C); partition sides with .threads(layout)");
    if (!src.partitioned() && !src.is_registers()) src.tiled_copy(tc);
    if (!dst.partitioned() && !dst.is_registers()) dst.tiled_copy(tc);
    return copy(std::move(src), std::move(dst));
  }
  Spec& barrier() {
    stages_.push_back(Stage{true, Side(""), Side(""), "", 0, ""});
    return *this;
  }
  // Options of the last copy: "none", "bounds" (copy_if with an identity tensor) or
  // "vector"; the widest vector a plain partition may use; a name for reports.
  Spec& predicate(std::string p) {
    last_copy("predicate").predicate = std::move(p);
    return *this;
  }
  Spec& vector_bits(int b) {
    last_copy("vector_bits").vector_bits = b;
    return *this;
  }
  Spec& named(std::string n) {
    last_copy("named").name = std::move(n);
    return *this;
  }

  // What the author expects (the spec's expect: block).
  Spec& expect_verdict(std::string v) { return expect("verdict", v); }
  Spec& expect_transform(std::string t) { return expect("transform", t); }
  Spec& expect_coverage(std::string c) { return expect("coverage", c); }
  Spec& expect_bank_conflicts(int n) { return expect("bank_conflicts", std::to_string(n), false); }
  Spec& expect_sectors_per_request(double r) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", r);
    return expect("sectors_per_request", buf, false);
  }
  // separate bounds for global loads (copy sources) and stores (copy destinations)
  Spec& expect_sectors_per_request(double load, double store) {
    char buf[80];
    std::snprintf(buf, sizeof buf, "{load: %.17g, store: %.17g}", load, store);
    return expect("sectors_per_request", buf, false);
  }
  Spec& expect_vector_bits(int b) { return expect("vector_bits", std::to_string(b), false); }
  Spec& expect_failing(std::vector<std::string> checks) {
    failing_ = std::move(checks);
    has_failing_ = true;
    return *this;
  }

  // Writes the spec as YAML on stdout.
  void print() const {
    validate();
    detail::put("spec: 1\nname: ");
    detail::quoted(name_);
    if (!description_.empty()) {
      detail::put("\ndescription: ");
      detail::quoted(description_);
    }
    std::printf("\nelement: %s\nthreads: %d\ngrid: [", element_, threads_);
    for (std::size_t i = 0; i < grid_.size(); ++i) std::printf("%s%lld", i ? ", " : "", grid_[i]);
    detail::put("]\ntensors:\n");
    for (auto const& t : tensors_) {
      detail::put("  ");
      detail::quoted(t.name);
      detail::put(t.memory == global ? ": {memory: global, layout: " : ": {memory: shared, layout: ");
      t.layout();
      if (t.element) std::printf(", element: %s", t.element);
      if (t.memory == global) std::printf(", align: %d", t.align);
      if (!t.alias.empty()) {
        detail::put(", alias: ");
        detail::quoted(t.alias);
        if (t.offset) std::printf(", offset: %lld", t.offset);
      }
      detail::put("}\n");
    }
    detail::put("stages:\n");
    for (auto const& s : stages_) {
      if (s.barrier) {
        detail::put("  - barrier\n");
        continue;
      }
      detail::put("  - copy:\n      src: ");
      s.src.print();
      detail::put("\n      dst: ");
      s.dst.print();
      if (s.predicate != "none") {
        detail::put("\n      predicate: ");
        detail::quoted(s.predicate);
      }
      if (s.vector_bits) std::printf("\n      vector_bits: %d", s.vector_bits);
      if (!s.name.empty()) {
        detail::put("\n      name: ");
        detail::quoted(s.name);
      }
      detail::put("\n");
    }
    if (!expect_.empty() || has_failing_) {
      detail::put("expect:\n");
      for (auto const& e : expect_) {
        std::printf("  %s: ", e.key.c_str());
        if (e.quote) detail::quoted(e.value); else detail::put(e.value);
        detail::put("\n");
      }
      if (has_failing_) {
        detail::put("  failing_checks: [");
        for (std::size_t i = 0; i < failing_.size(); ++i) {
          if (i) detail::put(", ");
          detail::quoted(failing_[i]);
        }
        detail::put("]\n");
      }
    }
    std::fflush(stdout);
  }

 private:
  struct Tensor {
    std::string name;
    detail::Printer layout;
    Memory memory;
    const char* element;  // nullptr: the spec's element
    int bits;             // 0: the spec's element (set later)
    int align;
    std::string alias;
    long long offset;
  };
  struct Stage {
    bool barrier;
    Side src, dst;
    std::string predicate;
    int vector_bits;
    std::string name;
  };
  struct Expectation {
    std::string key, value;
    bool quote;
  };

  Spec& add_tensor(std::string name, detail::Printer layout, Memory memory, const char* element, int bits,
                   int align) {
    for (auto const& t : tensors_) {
      if (t.name == name) throw SpecError("threadmap: tensor " + name + " is defined twice");
    }
    tensors_.push_back(Tensor{std::move(name), std::move(layout), memory, element,
                              element ? bits : 0, align, "", 0});
    return *this;
  }
  Stage& last_copy(const char* what) {
    if (stages_.empty() || stages_.back().barrier) {
      throw SpecError(std::string("threadmap: ") + what + "() follows a copy()");
    }
    return stages_.back();
  }
  Spec& expect(const char* key, std::string value, bool quote = true) {
    for (auto& e : expect_) {
      if (e.key == key) {
        e.value = std::move(value);
        return *this;
      }
    }
    expect_.push_back(Expectation{key, std::move(value), quote});
    return *this;
  }
  // The checks the C++ side can make that the spec file cannot express.
  void validate() const {
    if (!element_) throw SpecError("threadmap: spec " + name_ + ": call element<T>() (the element type)");
    if (!threads_) throw SpecError("threadmap: spec " + name_ + ": call threads(n)");
    for (auto const& s : stages_) {
      if (s.barrier) continue;
      for (Side const* side : {&s.src, &s.dst}) {
        if (!side->value_bits() || side->is_registers()) continue;
        int tbits = element_bits_;
        for (auto const& t : tensors_) {
          if (t.name == side->name() && t.element) tbits = t.bits;
        }
        if (side->value_bits() != tbits) {
          throw SpecError("threadmap: spec " + name_ + ": the tiled copy on " + side->name() + " copies " +
                          std::to_string(side->value_bits()) + "-bit values but the tensor holds " +
                          std::to_string(tbits) + "-bit elements (Copy_Atom<Op, T>: T must be the element type)");
        }
      }
    }
  }

  std::string name_, description_;
  const char* element_ = nullptr;
  int element_bits_ = 0;
  int threads_ = 0;
  std::vector<long long> grid_{1};
  std::vector<Tensor> tensors_;
  std::vector<Stage> stages_;
  std::vector<Expectation> expect_;
  std::vector<std::string> failing_;
  bool has_failing_ = false;
};

}  // namespace threadmap
