// The cross-entropy kernels on 16-bit logits widen each row into a buffer in the kernel's scratch
// (one per part of the team): a row's bits must not depend on where that scratch lies, nor on
// whether the gradient is written over the logits.

#include <catch2/catch.hpp>

#include <cstdint>
#include <memory>
#include <set>
#include <vector>

#include "graph/graph.hpp"
#include "runtime/half_precision.hpp"
#include "runtime/host_kernels.hpp"
#include "runtime/kernel_set.hpp"
#include "runtime/thread_team.hpp"
#include "runtime_fixture.hpp"
#include "storage/page_aligned.hpp"

using namespace csrun;
using graph::DType;

namespace {

constexpr std::int64_t kRows = 256;
constexpr std::int64_t kClasses = 1003;

// AddressSanitizer's allocator starts every block on a 64-byte boundary, so there the scratch
// lies at one address modulo 64 bytes, whatever the test allocates before it.
#if defined(__SANITIZE_ADDRESS__)
constexpr std::size_t kScratchAddresses = 1;
#elif defined(__has_feature)
constexpr std::size_t kScratchAddresses = __has_feature(address_sanitizer) ? 1 : 2;
#else
constexpr std::size_t kScratchAddresses = 2;
#endif

// Vectors of `floats` elements, some of them at different addresses modulo 64 bytes (the widest
// vector registers'): each allocated after a small one of another size, none freed, so that
// each comes from fresh memory.
std::vector<std::vector<float>> scratch_at_offsets(std::size_t floats) {
  std::vector<std::vector<float>> made;
  std::vector<std::unique_ptr<char[]>> spacers;
  std::set<std::uintptr_t> residues;
  for (std::size_t attempt = 0; attempt < 64 && residues.size() < 4; ++attempt) {
    spacers.push_back(std::make_unique<char[]>(8 + 16 * (attempt % 4)));
    made.emplace_back(floats);
    residues.insert(reinterpret_cast<std::uintptr_t>(made.back().data()) % 64);
  }
  std::vector<std::vector<float>> found;
  residues.clear();
  for (std::vector<float>& scratch : made) {
    if (residues.insert(reinterpret_cast<std::uintptr_t>(scratch.data()) % 64).second)
      found.push_back(std::move(scratch));
  }
  return found;
}

// Logits of -6 to 6, varied by position.
float logit(std::size_t i) {
  return static_cast<float>((i * 7919) % 2003) / 167.0f - 6.0f;
}

// Each row's label and the loss's gradient for it.
struct RowTargets {
  RowTargets() : labels(kRows), g(kRows) {
    for (std::size_t r = 0; r < labels.size(); ++r) {
      labels[r] = static_cast<std::int32_t>((r * 389) % kClasses);
      g[r] = 0.25f + 0.125f * static_cast<float>(r % 5);
    }
  }
  std::vector<std::int32_t> labels;
  std::vector<float> g;
};

// The gradient of logits of `dtype`, in their type.
graph::Node gradient_node(DType dtype) {
  graph::Node node;
  node.op = graph::OpKind::softmax_cross_entropy_grad;
  node.type = {{kRows, kClasses}, dtype};
  node.attrs.dtype = dtype;
  return node;
}

}  // namespace

TEST_CASE(
    "cross-entropy gradients of float16 logits have the same bits wherever the scratch lies") {
  std::vector<std::uint16_t> logits(static_cast<std::size_t>(kRows * kClasses));
  for (std::size_t i = 0; i < logits.size(); ++i)
    logits[i] = runtime::narrow_to_half(logit(i), DType::f16);
  RowTargets targets;
  graph::Node node = gradient_node(DType::f16);
  runtime::ThreadTeam team(2);
  for (std::string_view name : runtime::runnable_kernel_sets()) {
    INFO(name);
    const runtime::KernelSet& kernels = runtime::kernel_set(name);
    std::vector<std::uint16_t> first_result;
    for (runtime::ThreadTeam* parts : {static_cast<runtime::ThreadTeam*>(nullptr), &team}) {
      runtime::NodeTask task;
      task.node = &node;
      task.team = parts;
      task.in = {test::tensor_ref(logits, DType::f16, {kRows, kClasses}),
                 test::tensor_ref(targets.labels, DType::i32, {kRows}),
                 test::tensor_ref(targets.g, DType::f32, {kRows})};
      std::vector<std::uint16_t> gradient(logits.size());
      task.out = test::tensor_ref(gradient, DType::f16, {kRows, kClasses});
      kernels.prepare(task);
      REQUIRE(task.scratch_floats > 0);
      std::vector<std::vector<float>> scratches =
          scratch_at_offsets(static_cast<std::size_t>(task.scratch_floats));
      INFO(scratches.size() << " addresses modulo 64 bytes tried");
      CHECK(scratches.size() >= kScratchAddresses);
      for (std::vector<float>& scratch : scratches) {
        runtime::TaskScratch area{scratch.data(), static_cast<std::int64_t>(scratch.size())};
        task.scratch = &area;
        kernels.run(task);
        if (first_result.empty()) first_result = gradient;
        REQUIRE(gradient == first_result);
      }
    }
  }
}

namespace {

// The cross-entropy's gradient of `logits` (values of `dtype`, f32 or 16-bit codes) with the
// kernel set `name`, into a buffer of its own or over the logits (as the memory plan lets it,
// compiler::OpRule::over_operand), on one part or a team's.
template <class Value>
std::vector<Value> gradient_of(const std::vector<Value>& logits, DType dtype, bool over_logits,
                               runtime::ThreadTeam* team, std::string_view name) {
  RowTargets targets;
  graph::Node node = gradient_node(dtype);
  // Page-aligned, so 64-byte aligned as the arena places every buffer.
  storage::PageAlignedVector<Value> in(logits.begin(), logits.end());
  storage::PageAlignedVector<Value> apart(logits.size());
  storage::PageAlignedVector<Value>& out = over_logits ? in : apart;
  runtime::NodeTask task;
  task.node = &node;
  task.team = team;
  task.in = {test::tensor_ref(in, dtype, {kRows, kClasses}),
             test::tensor_ref(targets.labels, DType::i32, {kRows}),
             test::tensor_ref(targets.g, DType::f32, {kRows})};
  task.out = test::tensor_ref(out, dtype, {kRows, kClasses});
  const runtime::KernelSet& kernels = runtime::kernel_set(name);
  kernels.prepare(task);
  std::vector<float> scratch(static_cast<std::size_t>(task.scratch_floats) + 64);
  runtime::TaskScratch area{scratch.data(), static_cast<std::int64_t>(scratch.size())};
  task.scratch = &area;
  kernels.run(task);
  return {out.begin(), out.end()};
}

template <class Value>
void check_over_logits(const std::vector<Value>& logits, DType dtype) {
  runtime::ThreadTeam team(2);
  for (std::string_view name : runtime::runnable_kernel_sets()) {
    for (runtime::ThreadTeam* parts : {static_cast<runtime::ThreadTeam*>(nullptr), &team}) {
      INFO(graph::dtype_name(dtype)
           << " on the " << name << " set, " << (parts ? "a team" : "one part"));
      bool same = gradient_of(logits, dtype, true, parts, name) ==
                  gradient_of(logits, dtype, false, parts, name);
      CHECK(same);
    }
  }
}

}  // namespace

// The memory plan writes the gradient over the logits when nothing reads them later: each row
// of them is read whole before that row of the gradient is written.
TEST_CASE("the cross-entropy's gradient written over its logits has the bits of its own buffer") {
  std::vector<float> wide(static_cast<std::size_t>(kRows * kClasses));
  for (std::size_t i = 0; i < wide.size(); ++i)
    wide[i] = logit(i);
  check_over_logits(wide, DType::f32);
  for (DType dtype : {DType::bf16, DType::f16, DType::cb16}) {
    std::vector<std::uint16_t> codes(wide.size());
    for (std::size_t i = 0; i < codes.size(); ++i)
      codes[i] = runtime::narrow_to_half(wide[i], dtype);
    check_over_logits(codes, dtype);
  }
}
