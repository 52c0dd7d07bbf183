#include "onednn_gemm.hpp"

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <cstddef>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

// Debian builds oneDNN with GCC's OpenMP runtime, which it loads.
extern "C" void omp_set_num_threads(int threads);

namespace csrun::runtime::onednn_gemm {

namespace {

using dnnl::memory;

// The instruction set of this kernel set's products (lib/runtime/CMakeLists.txt): AMX tiles or
// AVX512_BF16's dot products for bfloat16 (amx, avx512bf16), AVX-512 (avx512), which the first two
// include and every set's f32 products use.
constexpr dnnl::cpu_isa kIsa = dnnl::cpu_isa::CSRUN_ONEDNN_GEMM_ISA;
constexpr bool kHardwareBf16 = CSRUN_ONEDNN_BF16;

struct SetNames {
  const char* set;
  const char* kernels;
};

constexpr SetNames kNames = kIsa == dnnl::cpu_isa::avx512_core_amx ? SetNames{"amx", "AMX"}
                            : kIsa == dnnl::cpu_isa::avx512_core_bf16
                                ? SetNames{"avx512bf16", "AVX512_BF16"}
                                : SetNames{"avx512", "AVX-512"};

bool includes(dnnl::cpu_isa isa, dnnl::cpu_isa subset) {
  auto bits = static_cast<unsigned>(subset);
  return (static_cast<unsigned>(isa) & bits) == bits;
}

// The engine, its kernels pinned to the set's instruction set: oneDNN would otherwise pick newer
// instructions where a CPU has them, and a kernel set's bits must not depend on more than its
// name. oneDNN takes that limit once per process, before its first kernel: where the amx set
// made kernels first in this process (the tests run every set, the best first), the avx512bf16
// set's products run on AMX too, the same sums in another order.
const dnnl::engine& engine() {
  static const dnnl::engine cpu = [] {
    bool limited_before = false;
    try {
      dnnl::set_max_cpu_isa(kIsa);
    } catch (const dnnl::error&) {
      limited_before = true;
    }
    if (!includes(dnnl::get_effective_cpu_isa(), kIsa)) {
      throw std::runtime_error(
          std::string("the ") + kNames.set + " kernels need oneDNN's " + kNames.kernels +
          " kernels, which " +
          (limited_before ? "another kernel set of this process excluded when it made its own"
                          : "this CPU or its operating system does not grant") +
          " (run with CSRUN_CPU=" + (kHardwareBf16 ? "avx512" : "avx2") + ")");
    }
    return dnnl::engine(dnnl::engine::kind::cpu, 0);
  }();
  return cpu;
}

// What a block's primitive depends on: the operands' pointers are bound at each call. `n` is the
// whole product's row length, the result's leading dimension.
struct Shape {
  std::int64_t rows, columns, n, k, lda, ldb;
  bool a_transposed, b_transposed, has_addend, out_bf16, accumulate;
  Operands operands;
  auto operator<=>(const Shape&) const = default;
};

struct Primitive {
  memory::desc a, b, addend, out, scratchpad;
  dnnl::matmul matmul;
};

Primitive make_primitive(const Shape& shape) {
  // Row-major, a transposed operand read through its strides: nothing is copied here.
  auto strides = [](bool transposed, std::int64_t leading) {
    return transposed ? memory::dims{1, leading} : memory::dims{leading, 1};
  };
  memory::data_type operand_type =
      shape.operands == Operands::f32 ? memory::data_type::f32 : memory::data_type::bf16;
  memory::desc a({shape.rows, shape.k}, operand_type, strides(shape.a_transposed, shape.lda));
  memory::desc b({shape.k, shape.columns}, operand_type, strides(shape.b_transposed, shape.ldb));
  memory::desc addend = shape.has_addend
                            ? memory::desc({1, shape.columns}, memory::data_type::f32, {shape.n, 1})
                            : memory::desc();
  memory::desc out({shape.rows, shape.columns},
                   shape.out_bf16 ? memory::data_type::bf16 : memory::data_type::f32, {shape.n, 1});
  dnnl::primitive_attr attributes;
  // Scratch memory per calling thread, so that the team's threads can share one primitive.
  attributes.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (shape.accumulate) {
    dnnl::post_ops sum;
    sum.append_sum(1.0f);
    attributes.set_post_ops(sum);
  }
  dnnl::matmul::primitive_desc description(dnnl::matmul::desc(a, b, addend, out), attributes,
                                           engine());
  return {a, b, addend, out, description.scratchpad_desc(), dnnl::matmul(description)};
}

// The leading dimensions a block's operands and result are read and written with.
std::int64_t lda_of(const Block& block) {
  if (block.lda > 0) return block.lda;
  return block.a_transposed ? block.m : block.k;
}
std::int64_t ldb_of(const Block& block) {
  if (block.ldb > 0) return block.ldb;
  return block.b_transposed ? block.k : block.n;
}
std::int64_t ldc_of(const Block& block) {
  return block.ldc > 0 ? block.ldc : block.n;
}

Shape shape_of(const Block& block) {
  return {block.rows,
          block.columns,
          ldc_of(block),
          block.k,
          lda_of(block),
          ldb_of(block),
          block.a_transposed,
          block.b_transposed,
          block.addend != nullptr,
          block.out_bf16,
          block.accumulate,
          block.operands};
}

// The kernels made so far, one per shape (making one compiles it), and the largest scratch
// memory one needs.
struct Primitives {
  std::mutex mutex;
  std::map<Shape, Primitive> made;
  std::size_t largest_scratchpad = 0;
};

Primitives& primitives() {
  static Primitives all;
  return all;
}

// oneDNN's OpenMP would otherwise start a team of threads under each of the caller's, and a
// kernel made for several threads splits its work (and its sums) for them: one thread each, when
// a kernel is made and when it runs, so the result depends on the shape alone, never on the cores.
void one_thread() {
  omp_set_num_threads(1);
}

// Each calling thread's stream and scratch memory, as large as any kernel made before the thread
// first multiplies needs.
struct CallingThread {
  dnnl::stream stream{engine()};
  std::vector<std::uint8_t> scratchpad;
  CallingThread() {
    one_thread();
    std::lock_guard lock(primitives().mutex);
    scratchpad.resize(primitives().largest_scratchpad);
  }
};

std::string block_text(const Block& block) {
  return "a " + std::to_string(block.rows) + "x" + std::to_string(block.k) + " by a " +
         std::to_string(block.k) + "x" + std::to_string(block.columns) +
         (block.operands == Operands::f32 ? " f32 block" : " bfloat16 block");
}

// The element size of the block's operands.
std::int64_t operand_bytes(const Block& block) {
  return block.operands == Operands::f32 ? 4 : 2;
}

}  // namespace

void prepare(const Block& block) {
  if (block.rows <= 0 || block.columns <= 0 || block.k <= 0)
    throw std::invalid_argument("onednn_gemm: an empty product, " + block_text(block));
  if (block.operands == Operands::bf16 && !kHardwareBf16)
    throw std::invalid_argument("onednn_gemm: the " + std::string(kNames.set) +
                                " set widens bfloat16 operands, " + block_text(block));
  if (block.out_bf16 && block.operands == Operands::f32)
    throw std::invalid_argument("onednn_gemm: a bfloat16 result of f32 operands, " +
                                block_text(block));
  if (block.accumulate && block.addend != nullptr)
    throw std::invalid_argument("onednn_gemm: an accumulated block with an addend, " +
                                block_text(block));
  Shape shape = shape_of(block);
  Primitives& all = primitives();
  std::lock_guard lock(all.mutex);
  if (all.made.contains(shape)) return;
  one_thread();
  try {
    const Primitive& made = all.made.emplace(shape, make_primitive(shape)).first->second;
    all.largest_scratchpad = std::max(all.largest_scratchpad, made.scratchpad.get_size());
  } catch (const dnnl::error& error) {
    throw std::runtime_error("oneDNN cannot multiply " + block_text(block) + ": " + error.what());
  }
}

void multiply(const Block& block) {
  const Primitive* made = nullptr;
  {
    Primitives& all = primitives();
    std::lock_guard lock(all.mutex);
    auto found = all.made.find(shape_of(block));
    if (found == all.made.end())
      throw std::logic_error("onednn_gemm: a block not prepared: " + block_text(block));
    made = &found->second;
  }
  thread_local CallingThread thread;
  std::size_t scratchpad_bytes = made->scratchpad.get_size();
  if (thread.scratchpad.size() < scratchpad_bytes) thread.scratchpad.resize(scratchpad_bytes);
  // oneDNN takes non-const handles; it only reads the operands.
  auto operand = [&](const void* data, std::int64_t offset) {
    return const_cast<std::byte*>(static_cast<const std::byte*>(data) +
                                  offset * operand_bytes(block));
  };
  void* a =
      operand(block.a, block.a_transposed ? block.first_row : block.first_row * lda_of(block));
  void* b = operand(block.b,
                    block.b_transposed ? block.first_column * ldb_of(block) : block.first_column);
  std::int64_t out_offset = block.first_row * ldc_of(block) + block.first_column;
  void* out = block.out_bf16
                  ? static_cast<void*>(static_cast<std::uint16_t*>(block.out) + out_offset)
                  : static_cast<void*>(static_cast<float*>(block.out) + out_offset);
  std::unordered_map<int, memory> arguments{
      {DNNL_ARG_SRC, memory(made->a, engine(), a)},
      {DNNL_ARG_WEIGHTS, memory(made->b, engine(), b)},
      {DNNL_ARG_DST, memory(made->out, engine(), out)},
      {DNNL_ARG_SCRATCHPAD, memory(made->scratchpad, engine(), thread.scratchpad.data())}};
  if (block.addend != nullptr) {
    arguments.emplace(DNNL_ARG_BIAS, memory(made->addend, engine(),
                                            const_cast<float*>(block.addend + block.first_column)));
  }
  made->matmul.execute(thread.stream, arguments);
  thread.stream.wait();
}

}  // namespace csrun::runtime::onednn_gemm
