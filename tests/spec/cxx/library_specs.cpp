// The spec library written from the real CuTe / CUTLASS objects with threadmap_spec.h.
//
// Each function builds the objects the kernel builds (layouts, swizzled smem layouts, tiled
// copies, tiled MMAs, CUTLASS thread maps) at the hand-written spec's sizes and prints the
// spec; tests/spec/test_spec_header.py verifies every dump and compares it with the hand-written
// spec (`# case: <path>` precedes each).  Size ranges (specs/ranges/) are not C++ objects:
// a program has one size.
#include <threadmap_spec.h>

using namespace cute;
using threadmap::registers;
using threadmap::side;
using threadmap::tile;
using threadmap::Spec;
template <int C, int S> using PLShape = cutlass::layout::PitchLinearShape<C, S>;
using cutlass::transform::PitchLinearStripminedThreadMap;
using cutlass::transform::PitchLinearWarpRakedThreadMap;

static int ceil_div(int a, int b) { return (a + b - 1) / b; }

static void expect(Spec& s, const char* verdict, const char* transform, std::vector<std::string> failing) {
  s.expect_verdict(verdict).expect_transform(transform).expect_coverage("exact").expect_failing(failing);
}

// x (M,N) row-major -> y (N,M) row-major, 16x16 CTA tiles, through smem or registers
static auto t16 = make_shape(Int<16>{}, Int<16>{});
static auto row16 = make_layout(t16, LayoutRight{});  // make_layout((16,16), GenRowMajor{})
static auto col16 = make_layout(t16, LayoutLeft{});

template <class Thr>
static void transpose_smem(const char* name, const char* desc, Thr thr, bool swizzled,
                           bool with_barrier, int M, int N, bool ceil_grid, std::vector<std::string> failing) {
  Spec s(name, desc);
  s.element<float>().threads(256).grid(ceil_grid ? ceil_div(M, 16) : M / 16, ceil_grid ? ceil_div(N, 16) : N / 16);
  s.tensor("x", make_layout(make_shape(M, N), LayoutRight{}), threadmap::global)
      .tensor("y", make_layout(make_shape(N, M), LayoutRight{}), threadmap::global);
  if (swizzled) {
    s.tensor("sA", composition(Swizzle<4, 0, 4>{}, make_layout(t16, LayoutRight{})), threadmap::shared)
        .tensor("sB", composition(Swizzle<4, 0, 4>{}, make_layout(t16, LayoutLeft{})), threadmap::shared)
        .alias("sA");
  } else {
    s.tensor("sA", make_layout(t16, LayoutRight{}), threadmap::shared)
        .tensor("sB", make_layout(t16, LayoutLeft{}), threadmap::shared)
        .alias("sA");
  }
  s.copy(tile("x", t16, "bx", "by").threads(thr), side("sA").threads(thr)).predicate("bounds");
  if (with_barrier) s.named("copy_if gA -> sA").barrier();
  s.copy(side("sB").threads(thr), tile("y", t16, "by", "bx").threads(thr)).predicate("bounds");
  if (with_barrier) s.named("copy_if sB -> gB");
  expect(s, failing.empty() ? "pass" : "fail", "transpose", failing);
  s.expect_sectors_per_request(1.0).expect_bank_conflicts(0);
  s.print();
}

template <class ThrA, class ThrB>
static void transpose_reg(const char* name, ThrA tA, ThrB tB, std::vector<std::string> failing) {
  int M = 1024, N = 1024;
  Spec s(name);
  s.element<float>().threads(256).grid(ceil_div(M, 16), ceil_div(N, 16));
  s.tensor("x", make_layout(make_shape(M, N), LayoutRight{}), threadmap::global)
      .tensor("y", make_layout(make_shape(N, M), LayoutRight{}), threadmap::global)
      .copy(tile("x", t16, "bx", "by").threads(tA), tile("y", t16, "by", "bx").threads(tB))
      .predicate("bounds")
      .named("copy_if gA -> gB");
  expect(s, failing.empty() ? "pass" : "fail", "transpose", failing);
  s.expect_sectors_per_request(4.0, 1.0).expect_bank_conflicts(0);
  s.print();
}

// make_tiled_copy(Copy_Atom<AutoVectorizingCopy, float>, thr (16,16) row-major, val) both ways
template <class ValA, class ValB>
static void transpose_vectorized(const char* name, ValA val_a, ValB val_b, std::vector<std::string> failing) {
  int M = 1024, N = 1024;
  auto copy_a = make_tiled_copy(Copy_Atom<AutoVectorizingCopy, float>{}, row16, val_a);
  auto copy_b = make_tiled_copy(Copy_Atom<AutoVectorizingCopy, float>{}, row16, val_b);
  auto a_tile = make_shape(Int<16>{} * size<0>(val_a), Int<16>{} * size<1>(val_a));  // the tiler of copy_a
  auto b_tile = make_shape(get<1>(a_tile), get<0>(a_tile));
  Spec s(name);
  s.element<float>().threads(256).grid(ceil_div(M, size<0>(a_tile)), ceil_div(N, size<1>(a_tile)));
  s.tensor("x", make_layout(make_shape(M, N), LayoutRight{}), threadmap::global)
      .tensor("y", make_layout(make_shape(N, M), LayoutRight{}), threadmap::global)
      .tensor("sA", make_layout(a_tile, LayoutRight{}), threadmap::shared)
      .tensor("sB", make_layout(b_tile, LayoutLeft{}), threadmap::shared)
      .alias("sA")
      .copy(copy_a, tile("x", a_tile, "bx", "by"), "sA")
      .named("copy(copy_a, tAgA, tAsA)")
      .barrier()
      .copy(copy_b, "sB", tile("y", b_tile, "by", "bx"))
      .named("copy(copy_b, tBsB, tBgB)");
  expect(s, "fail", "transpose", failing);
  s.expect_sectors_per_request(1.0).expect_bank_conflicts(0);
  s.print();
}

// the register transpose + Swizzle<2,3,2> kernel (with and without its barrier)
static void transpose_optimized(const char* name, bool with_barrier) {
  int M = 1024, N = 1024;
  using Auto = Copy_Atom<AutoVectorizingCopy, float>;
  auto copy_a = make_tiled_copy(Auto{}, make_layout(make_shape(_8{}, make_shape(_4{}, _8{})),
                                                    make_stride(_4{}, make_stride(_1{}, _32{}))),
                                make_layout(make_shape(_1{}, _4{}), LayoutRight{}));
  auto copy_trans = make_tiled_copy(Auto{}, make_layout(make_shape(make_shape(_4{}, _8{}), _8{}),
                                                        make_stride(make_stride(_1{}, _32{}), _4{})),
                                    make_layout(make_shape(_4{}, _1{}), LayoutRight{}));
  auto copy_b = make_tiled_copy(Auto{}, make_layout(make_shape(_128{}, _2{}), LayoutRight{}),
                                make_layout(make_shape(_1{}, _4{}), LayoutRight{}));
  auto sB = composition(Swizzle<2, 3, 2>{}, make_layout(make_shape(_128{}, _8{}), LayoutRight{}));
  Spec s(name);
  s.element<float>().threads(256).grid(ceil_div(M, 8), ceil_div(N, 128));
  s.tensor("x", make_layout(make_shape(M, N), LayoutRight{}), threadmap::global)
      .tensor("y", make_layout(make_shape(N, M), LayoutRight{}), threadmap::global)
      .tensor("sB", sB, threadmap::shared)
      .copy(copy_a, tile("x", make_shape(_8{}, _128{}), "bx", "by"), registers("rA"));
  if (with_barrier) s.named("copy(copy_a, tAgA, tAsA_view)");
  s.copy(copy_trans, registers("rA"), "sB");
  if (with_barrier) s.named("copy(copy_trans, tAsB, tBsB_trans)").barrier();
  s.copy(copy_b, "sB", tile("y", make_shape(_128{}, _8{}), "by", "bx"));
  if (with_barrier) s.named("copy(copy_b, tBsB, tBgB)");
  expect(s, with_barrier ? "pass" : "fail", "transpose",
         with_barrier ? std::vector<std::string>{} : std::vector<std::string>{"dataflow"});
  s.expect_sectors_per_request(1.0).expect_bank_conflicts(0);
  s.print();
}

// CUTLASS PredicatedTileIterator-style loads with a pitch-linear thread map
template <class TM, class T, class Layout, class SmemLayout>
static void thread_map_copy(const char* name, const char* stage, const char* g, const char* sm, Layout const& gmem,
                            SmemLayout const& smem, int tile_m, int tile_k, int cmode, int gx, int gy, bool with_smem,
                            std::vector<std::string> failing, const char* transform, bool bank) {
  Spec s(name);
  s.element<T>().threads(TM::kThreads).grid(gx, gy);
  s.tensor(g, gmem, threadmap::global);
  if (with_smem) s.tensor(sm, smem, threadmap::shared);
  auto t = tile(g, make_shape(tile_m, tile_k), "bx", "by").template thread_map<TM>(cmode);
  if (with_smem) {
    s.copy(t, side(sm).thread_map<TM>(cmode));
  } else {
    s.copy(t, registers("frag"));
  }
  s.predicate("vector");
  if (stage) s.named(stage);
  if (with_smem) s.barrier();
  expect(s, failing.empty() ? "pass" : "fail", transform, failing);
  if (failing.empty()) s.expect_sectors_per_request(1.0);
  if (bank) s.expect_bank_conflicts(0);
  s.print();
}

static void sm70_quadpairs(const char* name, bool two_by_two) {
  using Op = SM70_8x8x4_F32F16F16F32_NT;
  auto n_major_2x2 = make_layout(make_shape(_2{}, _2{}), make_stride(_2{}, _1{}));
  Spec s(name);
  s.element<cutlass::half_t>().threads(32);
  if (two_by_two) {
    s.tensor("sA", make_layout(make_shape(_16{}, _4{})), threadmap::shared)
        .tensor("sB", make_layout(make_shape(_16{}, _4{})), threadmap::shared);
  } else {
    s.tensor("sA", make_layout(make_shape(_32{}, _4{})), threadmap::shared)
        .tensor("sB", make_layout(make_shape(_32{}, _4{})), threadmap::shared);
  }
  s.tensor<float>("sC", make_layout(make_shape(_16{}, _16{})), threadmap::shared);
  auto mma_c = make_tiled_mma(Op{}, n_major_2x2);
  if (two_by_two) {
    s.copy(side("sA").mma(mma_c, 'A'), registers("rA"))
        .copy(side("sB").mma(mma_c, 'B'), registers("rB"))
        .copy(side("sC").mma(mma_c, 'C'), registers("rC"));
  } else {
    s.copy(side("sA").mma(make_tiled_mma(Op{}, Layout<Shape<_4, _1, _1>>{}), 'A'), registers("rA"))
        .named("partition_A(sA), 4 quadpairs along M")
        .copy(side("sB").mma(make_tiled_mma(Op{}, Layout<Shape<_1, _4, _1>>{}), 'B'), registers("rB"))
        .named("partition_B(sB), 4 quadpairs along N")
        .copy(side("sC").mma(mma_c, 'C'), registers("rC"))
        .named("partition_C(sC), 2x2 n-major quadpairs");
  }
  s.expect_verdict("pass").expect_transform("none").expect_coverage(two_by_two ? "replicated" : "exact");
  s.expect_failing({});
  s.print();
}

static void sm80_f64() {
  auto mma = make_tiled_mma(SM80_8x8x4_F64F64F64F64_TN{});
  auto k_major = make_layout(make_shape(_8{}, _4{}), LayoutRight{});
  Spec s("MMA SM80_8x8x4_F64F64F64F64_TN, one atom (partition_A/B/C)");
  s.element<double>().threads(32);
  s.tensor("sA", k_major, threadmap::shared)
      .tensor("sB", k_major, threadmap::shared)
      .tensor("gC", make_layout(make_shape(_8{}, _8{}), LayoutRight{}), threadmap::global)
      .copy(side("sA").mma(mma, 'A'), registers("rA"))
      .named("partition_A(sA) -> registers")
      .copy(side("sB").mma(mma, 'B'), registers("rB"))
      .named("partition_B(sB) -> registers")
      .copy(side("gC").mma(mma, 'C'), registers("rC"))
      .vector_bits(128)
      .named("partition_C(gC) -> registers");
  s.expect_verdict("pass").expect_transform("none").expect_coverage("exact").expect_failing({});
  s.print();
}

// sgemm_1 / sgemm_2 of the CuTe tutorial
static void sgemm_1_copy_a() {
  int M = 256, K = 32;
  auto tA = make_layout(make_shape(Int<32>{}, Int<8>{}));
  auto bM = Int<128>{};
  auto bK = Int<8>{};
  Spec s("sgemm_1 A copy, gmem -> smem, local_partition with tA = (32,8)");
  s.element<float>().threads(256).grid(ceil_div(M, 128), ceil_div(K, 8));
  s.tensor("A", make_layout(make_shape(M, K), make_stride(Int<1>{}, M)), threadmap::global)
      .tensor("sA", make_layout(make_shape(bM, bK)), threadmap::shared)
      .copy(tile("A", make_shape(bM, bK), "bx", "by").threads(tA), side("sA").threads(tA))
      .named("copy(tAgA(_,_,k_tile), tAsA)")
      .barrier();
  expect(s, "pass", "copy", {});
  s.expect_sectors_per_request(1.0).expect_bank_conflicts(0);
  s.print();
}

static void sgemm_1_compute_c() {
  int M = 256, N = 256;
  auto tC = make_layout(make_shape(Int<16>{}, Int<16>{}));
  auto cta = make_shape(Int<128>{}, Int<128>{});
  Spec s("sgemm_1 compute partition of C (local_partition with tC = (16,16)), epilogue read/write");
  s.element<float>().threads(256).grid(ceil_div(M, 128), ceil_div(N, 128));
  s.tensor("C", make_layout(make_shape(M, N), make_stride(Int<1>{}, M)), threadmap::global)
      .copy(tile("C", cta, "bx", "by").threads(tC), registers("tCrC"))
      .named("axpby reads tCgC")
      .copy(registers("tCrC"), tile("C", cta, "bx", "by").threads(tC))
      .named("axpby writes tCgC");
  expect(s, "pass", "copy", {});
  s.expect_sectors_per_request(1.0);
  s.print();
}

static auto sgemm_2_mma() {
  return make_tiled_mma(UniversalFMA<float, float, float>{}, Layout<Shape<_16, _16, _1>>{});
}

static void sgemm_2_compute_ab() {
  auto mma = sgemm_2_mma();
  auto sA = make_layout(make_shape(Int<128>{}, Int<8>{}));
  Spec s("sgemm_2 compute partitions of A and B (TiledMMA UniversalFMA 16x16x1), smem -> registers");
  s.element<float>().threads(256);
  s.tensor("sA", sA, threadmap::shared)
      .tensor("sB", sA, threadmap::shared)
      .copy(side("sA").mma(mma, 'A'), registers("tCrA"))
      .named("gemm reads tCsA")
      .copy(side("sB").mma(mma, 'B'), registers("tCrB"))
      .named("gemm reads tCsB");
  s.expect_verdict("pass").expect_transform("none").expect_coverage("replicated").expect_bank_conflicts(0);
  s.expect_failing({});
  s.print();
}

static void sgemm_2_compute_c() {
  int M = 256, N = 256;
  auto mma = sgemm_2_mma();
  auto cta = make_shape(Int<128>{}, Int<128>{});
  Spec s("sgemm_2 compute partition of C (TiledMMA UniversalFMA 16x16x1), epilogue read/write");
  s.element<float>().threads(256).grid(ceil_div(M, 128), ceil_div(N, 128));
  s.tensor("C", make_layout(make_shape(M, N), make_stride(Int<1>{}, M)), threadmap::global)
      .copy(tile("C", cta, "bx", "by").mma(mma, 'C'), registers("tCrC"))
      .named("axpby reads tCgC")
      .copy(registers("tCrC"), tile("C", cta, "bx", "by").mma(mma, 'C'))
      .named("axpby writes tCgC");
  expect(s, "pass", "copy", {});
  s.expect_sectors_per_request(1.0);
  s.print();
}

static void sgemm_2_copy_a() {
  int M = 256, K = 32;
  auto thr = make_layout(make_shape(Int<32>{}, Int<8>{}));
  auto val = make_layout(make_shape(Int<4>{}, Int<1>{}));
  auto copyA = make_tiled_copy(Copy_Atom<UniversalCopy<uint128_t>, float>{}, thr, val);
  auto copy_smem = make_tiled_copy(Copy_Atom<AutoVectorizingCopy, float>{}, thr, val);
  Spec s("sgemm_2 A copy, gmem -> registers (UniversalCopy<uint128_t>) -> smem");
  s.element<float>().threads(256).grid(ceil_div(M, 128), ceil_div(K, 8));
  s.tensor("A", make_layout(make_shape(M, K), make_stride(Int<1>{}, M)), threadmap::global)
      .tensor("sA", make_layout(make_shape(Int<128>{}, Int<8>{})), threadmap::shared)
      .copy(copyA, tile("A", make_shape(Int<128>{}, Int<8>{}), "bx", "by"), registers("tArA"))
      .named("copy(copyA, tAgA(_,_,_,k), tArA)")
      .copy(copy_smem, registers("tArA"), "sA")
      .named("copy(tArA, tAsA)")
      .barrier();
  expect(s, "pass", "copy", {});
  s.expect_sectors_per_request(1.0).expect_bank_conflicts(0);
  s.print();
}

// the SM80 GEMM's smem -> register copy of A: make_tiled_copy_A of ldmatrix for a TiledMMA
static void ldmatrix_a(bool swizzled) {
  auto mma = make_tiled_mma(SM80_16x8x16_F32F16F16F32_TN{}, Layout<Shape<_2, _2, _1>>{});
  auto smem_tiled_copy_A = make_tiled_copy_A(Copy_Atom<SM75_U32x4_LDSM_N, cutlass::half_t>{}, mma);
  auto sA = make_layout(make_shape(_32{}, _64{}), LayoutRight{});
  Spec s(swizzled ? "SM80 ldmatrix A (make_tiled_copy_A of SM75_U32x4_LDSM_N), Swizzle<3,3,3> smem"
                  : "SM80 ldmatrix A (make_tiled_copy_A of SM75_U32x4_LDSM_N), unswizzled smem");
  s.element<cutlass::half_t>().threads(size(mma));
  if (swizzled) {
    s.tensor("sA", composition(Swizzle<3, 3, 3>{}, sA), threadmap::shared);
  } else {
    s.tensor("sA", sA, threadmap::shared);
  }
  s.copy(smem_tiled_copy_A, "sA", registers("tCrA")).named("copy(smem_tiled_copy_A, tCsA, tCrA_view)");
  s.expect_verdict(swizzled ? "pass" : "fail").expect_transform("none").expect_coverage("replicated");
  s.expect_bank_conflicts(0).expect_failing(swizzled ? std::vector<std::string>{}
                                                     : std::vector<std::string>{"bank_conflicts"});
  s.print();
}

static void stmatrix_epilogue() {
  int M = 256, N = 256;
  auto mma = make_tiled_mma(SM90_64x16x16_F32F16F16_SS<GMMA::Major::K, GMMA::Major::K>{});
  auto r2s = make_tiled_copy_C_atom(Copy_Atom<SM90_U32x4_STSM_N, cutlass::half_t>{}, mma);
  auto s2g = make_tiled_copy(Copy_Atom<UniversalCopy<uint128_t>, cutlass::half_t>{},
                             make_layout(make_shape(_64{}, _2{}), make_stride(_2{}, _1{})),
                             make_layout(make_shape(_1{}, _8{})));
  auto sD = composition(Swizzle<1, 3, 3>{}, make_layout(make_shape(make_shape(_8{}, _8{}), _16{}),
                                                         make_stride(make_stride(_16{}, _128{}), _1{})));
  auto sub = make_shape(_64{}, _16{});
  Spec s("SM90 epilogue stmatrix.x4 (make_tiled_copy_C_atom of SM90_U32x4_STSM_N), 64x16 f16 subtile, SW32");
  s.element<cutlass::half_t>().threads(size(mma)).grid(ceil_div(M, 64), ceil_div(N, 16));
  s.tensor("D", make_layout(make_shape(M, N), make_stride(N, Int<1>{})), threadmap::global)
      .tensor("sD", sD, threadmap::shared, 1024)
      .copy(tile("D", sub, "bx", "by").mma(mma, 'C'), registers("tRS_rD"))
      .named("the accumulator fragment (partition_C)")
      .copy(r2s, registers("tRS_rD"), "sD")
      .named("copy(tiled_r2s, tRS_rD, tRS_sD)")
      .barrier()
      .copy(s2g, "sD", tile("D", sub, "bx", "by"))
      .named("copy(tiled_s2g, tSG_sD, tSG_gD)");
  expect(s, "pass", "copy", {});
  s.expect_bank_conflicts(0);
  s.print();
}

static void wrong_stride() {
  int M = 256, K = 32;
  Spec s("planted: thread layout with a wrong stride");
  s.element<float>().threads(256).grid(ceil_div(M, 128), ceil_div(K, 8));
  s.tensor("A", make_layout(make_shape(M, K), make_stride(Int<1>{}, M)), threadmap::global)
      .copy(tile("A", make_shape(Int<128>{}, Int<8>{}), "bx", "by")
                .threads(make_layout(make_shape(Int<32>{}, Int<8>{}), make_stride(Int<1>{}, Int<16>{}))),
            registers("rA"));
  s.expect_verdict("fail").expect_transform("none").expect_coverage("exact").expect_failing({"coverage"});
  s.print();
}

// Misuse the header catches (each prints "error: <what>"), and a name that needs escaping.
static void errors() {
  auto thr = make_layout(make_shape(_32{}, _8{}));
  auto attempt = [](const char* what, auto&& f) {
    try {
      f();
      std::printf("no error: %s\n", what);
    } catch (threadmap::SpecError const& e) {
      std::printf("error: %s: %s\n", what, e.what());
    }
  };
  attempt("value type", [&] {
    auto tc = make_tiled_copy(Copy_Atom<UniversalCopy<uint64_t>, cutlass::half_t>{}, thr,
                              make_layout(make_shape(_4{}, _1{})));
    Spec s("k");
    s.element<float>().threads(256).tensor("A", make_layout(make_shape(_128{}, _8{})), threadmap::shared);
    s.copy(tc, "A", registers("r")).print();
  });
  attempt("predicate first", [&] { Spec("k").barrier().predicate("bounds"); });
  attempt("two partitions", [&] { side("A").threads(thr).threads(thr); });
  attempt("tile rank", [&] { tile("A", make_shape(_4{}, _4{}, _4{}), "bx", "by"); });
  attempt("no element", [&] { Spec("k").threads(32).print(); });
  attempt("operand", [&] { side("A").mma(sgemm_2_mma(), 'D'); });
  std::printf("# case: escaped\n");
  Spec s("a \"quoted\" name\twith <script>alert(1)</script> \\ and\nnewline", "d: {not: yaml}");
  s.element<float>().threads(32).tensor("s\"A", make_layout(make_shape(_32{})), threadmap::shared);
  s.copy(side("s\"A").threads(make_layout(_32{})), registers("r: x")).named("# not a comment");
  s.print();
}

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "errors") {
    errors();
    return 0;
  }
  struct Case {
    const char* path;
    void (*make)();
  };
  static const Case cases[] = {
      {"cute_transpose/row_smem.yaml", [] {
         transpose_smem("CuTe transpose, smem, row thread layouts (mat_transpose_cute_row_smem)", "", row16, false,
                        true, 1024, 1024, true, {"bank_conflicts"});
       }},
      {"cute_transpose/row_smem_swizzled.yaml", [] {
         transpose_smem("CuTe transpose, smem + Swizzle<4,0,4>, row thread layouts "
                        "(mat_transpose_cute_row_smem_swizzled)", "", row16, true, true, 1024, 1024, true, {});
       }},
      {"cute_transpose/col_smem.yaml", [] {
         transpose_smem("CuTe transpose, smem, column thread layouts (mat_transpose_cute_col_smem)", "", col16,
                        false, true, 1024, 1024, true, {"coalescing", "bank_conflicts"});
       }},
      {"cute_transpose/col_smem_swizzled.yaml", [] {
         transpose_smem("CuTe transpose, smem + Swizzle<4,0,4>, column thread layouts "
                        "(mat_transpose_cute_col_smem_swizzled)", "", col16, true, true, 1024, 1024, true,
                        {"coalescing"});
       }},
      {"planted/missing_barrier.yaml", [] {
         transpose_smem("planted: missing barrier", "", row16, true, false, 1024, 1024, true, {"dataflow"});
       }},
      {"planted/off_by_one_grid.yaml", [] {
         transpose_smem("planted: off-by-one grid", "", row16, true, true, 1000, 1000, false, {"predicates"});
       }},
      {"cute_transpose/row2col_reg.yaml", [] {
         transpose_reg("CuTe transpose, registers, row2col (mat_transpose_cute_row2col_reg)", col16, row16, {});
       }},
      {"cute_transpose/col2row_reg.yaml", [] {
         transpose_reg("CuTe transpose, registers, col2row (mat_transpose_cute_col2row_reg)", row16, col16, {"coalescing"});
       }},
      {"cute_transpose/row_rvectorized.yaml", [] {
         transpose_vectorized("CuTe transpose, tiled copy, row vectorized (mat_transpose_cute_row_rvectorized)",
                              make_layout(make_shape(_1{}, _4{}), LayoutRight{}),
                              make_layout(make_shape(_4{}, _1{}), LayoutRight{}), {"bank_conflicts"});
       }},
      {"planted/transpose_vector_store_odd_m.yaml", [] {
         // row_rvectorized with the store side vectorized, at an odd M: the edge vector is masked whole
         int M = 101, N = 100;
         auto v14 = make_layout(make_shape(_1{}, _4{}), LayoutRight{});
         auto copy_a = make_tiled_copy(Copy_Atom<AutoVectorizingCopy, float>{}, row16, v14);
         auto copy_b = make_tiled_copy(Copy_Atom<AutoVectorizingCopy, float>{},
                                       make_layout(make_shape(_64{}, _4{}), LayoutRight{}), v14);
         Spec s("planted transpose with vector stores masked whole at an odd edge (100 outputs never written)");
         s.element<float>().threads(256).grid(ceil_div(M, 16), ceil_div(N, 64));
         s.tensor("x", make_layout(make_shape(M, N), LayoutRight{}), threadmap::global)
             .tensor("y", make_layout(make_shape(N, M), LayoutRight{}), threadmap::global)
             .tensor("sA", make_layout(make_shape(_16{}, _64{}), LayoutLeft{}), threadmap::shared)
             .tensor("sB", make_layout(make_shape(_64{}, _16{}), LayoutRight{}), threadmap::shared)
             .alias("sA")
             .copy(copy_a, tile("x", make_shape(_16{}, _64{}), "bx", "by"), "sA")
             .predicate("bounds")
             .named("copy(copy_a, tAgA, tAsA)")
             .barrier()
             .copy(copy_b, "sB", tile("y", make_shape(_64{}, _16{}), "by", "bx"))
             .predicate("vector")
             .named("copy(copy_b, tBsB, tBgB)");
         expect(s, "fail", "transpose", {"coverage", "predicates", "coalescing", "vectorization", "dataflow"});
         s.print();
       }},
      {"cute_transpose/row_cvectorized.yaml", [] {
         transpose_vectorized("CuTe transpose, tiled copy, column vectorized (mat_transpose_cute_row_cvectorized)",
                              make_layout(make_shape(_4{}, _1{}), LayoutRight{}),
                              make_layout(make_shape(_1{}, _4{}), LayoutRight{}), {"coalescing", "bank_conflicts"});
       }},
      {"cute_transpose/rvectorized_swizzled_optimized.yaml", [] {
         transpose_optimized("CuTe transpose, register transpose + Swizzle<2,3,2> "
                             "(mat_transpose_cute_row_rvectorized_swizzled_optimized)", true);
       }},
      {"planted/optimized_as_published_no_barrier.yaml", [] {
         transpose_optimized("planted: optimized transpose as published, no barrier", false);
       }},
      {"cutlass/simt_sgemm_a_128x8_stripmined.yaml", [] {
         using TM = PitchLinearStripminedThreadMap<PLShape<128, 8>, 256, 1>;
         thread_map_copy<TM, float>("CUTLASS SIMT SGEMM A tile 128x8", "A tile gmem -> smem", "A", "sA",
                                    make_layout(make_shape(256, 32), make_stride(Int<1>{}, 256)),
                                    make_layout(make_shape(Int<128>{}, Int<8>{})), 128, 8, 0, 2, 4, true, {},
                                    "copy", true);
       }},
      {"cutlass/sm80_f16_gemm_a_128x32_warpraked.yaml", [] {
         using TM = PitchLinearWarpRakedThreadMap<PLShape<32, 128>, 128, PLShape<4, 8>, 8>;
         auto sA = composition(Swizzle<2, 3, 3>{}, make_layout(make_shape(Int<128>{}, Int<32>{}), LayoutRight{}));
         thread_map_copy<TM, cutlass::half_t>("CUTLASS SM80 f16 GEMM A tile 128x32", "cp.async A tile", "A", "sA",
                                              make_layout(make_shape(256, 64), LayoutRight{}), sA, 128, 32, 1, 2,
                                              2, true, {}, "copy", true);
       }},
      {"cutlass/sm80_f16_gemm_b_64x64_warpraked.yaml", [] {
         using TM = PitchLinearWarpRakedThreadMap<PLShape<64, 64>, 128, PLShape<8, 4>, 8>;
         auto sB = composition(Swizzle<3, 3, 3>{}, make_layout(make_shape(Int<64>{}, Int<64>{}), LayoutRight{}));
         thread_map_copy<TM, cutlass::half_t>("CUTLASS SM80 f16 GEMM B tile 64x64", "cp.async B tile", "B", "sB",
                                              make_layout(make_shape(256, 128), LayoutRight{}), sB, 64, 64, 1, 4,
                                              2, true, {}, "copy", true);
       }},
      {"cutlass/stripmined_64x64_128t_v4.yaml", [] {
         using TM = PitchLinearStripminedThreadMap<PLShape<64, 64>, 128, 4>;
         thread_map_copy<TM, float>("CUTLASS stripmined 64x64, 128 threads, 4-wide", "PredicatedTileIterator load", "A", "",
                                    make_layout(make_shape(256, 256), LayoutRight{}), Layout<_1>{}, 64, 64, 1, 4,
                                    4, false, {}, "none", false);
       }},
      {"cutlass/stripmined_64x64_128t_v4_m63.yaml", [] {
         using TM = PitchLinearStripminedThreadMap<PLShape<64, 64>, 128, 4>;
         thread_map_copy<TM, float>("CUTLASS stripmined 64x64, M = 63", "PredicatedTileIterator load, residue tile", "A", "",
                                    make_layout(make_shape(63, 64), LayoutRight{}), Layout<_1>{}, 64, 64, 1, 1, 1,
                                    false, {}, "none", false);
       }},
      {"planted/stripmined_vector_straddle_n62.yaml", [] {
         using TM = PitchLinearStripminedThreadMap<PLShape<64, 64>, 128, 4>;
         thread_map_copy<TM, float>("planted: vector straddles the edge at N = 62", nullptr, "A", "",
                                    make_layout(make_shape(64, 62), make_stride(64, Int<1>{})), Layout<_1>{}, 64, 64,
                                    1, 1, 1, false, {"predicates"}, "none", false);
       }},
      {"mma/sm70_8x8x4_f32f16f16f32_nt.yaml", [] {
         sm70_quadpairs("MMA SM70_8x8x4_F32F16F16F32_NT, quadpairs along M, N and 2x2", false);
       }},
      {"mma/sm70_8x8x4_f32f16f16f32_nt_2x2.yaml", [] {
         sm70_quadpairs("MMA SM70_8x8x4_F32F16F16F32_NT tiled 2x2 n-major", true);
       }},
      {"mma/sm80_8x8x4_f64f64f64f64_tn.yaml", sm80_f64},
      {"mma/sm80_ldmatrix_a_32x64_sw333.yaml", [] { ldmatrix_a(true); }},
      {"mma/sm80_ldmatrix_a_32x64.yaml", [] { ldmatrix_a(false); }},
      {"mma/sm90_stmatrix_epilogue_64x16.yaml", stmatrix_epilogue},
      {"sgemm/sgemm_1_copy_a.yaml", sgemm_1_copy_a},
      {"sgemm/sgemm_1_compute_c.yaml", sgemm_1_compute_c},
      {"sgemm/sgemm_2_compute_ab.yaml", sgemm_2_compute_ab},
      {"sgemm/sgemm_2_compute_c.yaml", sgemm_2_compute_c},
      {"sgemm/sgemm_2_copy_a.yaml", sgemm_2_copy_a},
      {"planted/wrong_stride_thread_layout.yaml", wrong_stride},
  };
  for (auto const& c : cases) {
    std::printf("# case: %s\n", c.path);
    c.make();
  }
  return 0;
}
