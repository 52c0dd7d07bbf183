#include <catch2/catch.hpp>

#include <cstdlib>
#include <vector>

#include "allocation_counter.hpp"
#include "runtime/host_kernels.hpp"
#include "runtime_fixture.hpp"
#include "support/step_fixture.hpp"

using namespace csrun;

TEST_CASE("the allocation counter sees allocations and the bytes they hold") {
  std::int64_t before = test::heap_allocations();
  std::int64_t bytes_before = test::heap_bytes_in_use();
  // Through a volatile pointer, so the compiler cannot elide the pair.
  void* (*volatile allocate)(std::size_t) = std::malloc;
  void* block = allocate(100000);
  CHECK(test::heap_bytes_in_use() - bytes_before >= 100000);
  std::free(block);
  auto* values = new std::vector<int>(100);
  delete values;
  CHECK(test::heap_allocations() - before >= 1);
  CHECK(test::heap_bytes_in_use() == bytes_before);
}

TEST_CASE("a step allocates nothing: every buffer is in the arena or planned scratch") {
  const char* models[] = {
      "{name: fc_mnist, hidden_sizes: [256, 256]}",
      "{name: gpt2, vocab_size: 64, hidden_size: 64, num_hidden_layers: 2, num_heads: 4, "
      "filter_size: 256, max_position_embeddings: 32, dropout_rate: 0.1}",
  };
  for (const char* model : models) {
    INFO(model);
    models::TracedStep step = test::traced_step(model, 32);
    for (bool mixed : {false, true}) {
      compiler::Plan plan = mixed ? test::compiled_plan(step.graph, 32, graph::DType::bf16, 1)
                                  : test::compiled_plan(step.graph, 32);
      runtime::Executable executable(std::move(plan));
      test::feed(executable, test::sample_feeds(executable.plan().graph));
      auto input = executable.slot(step.batch[0].name);
      std::vector<std::int32_t> batch(
          static_cast<std::size_t>(graph::element_count(executable.type(input).shape)), 1);
      executable.run();  // warm: anything lazily initialized happens here
      std::int64_t before = test::heap_allocations();
      std::int64_t bytes_before = test::heap_bytes_in_use();
      for (int i = 0; i < 3; ++i) {
        if (executable.type(input).dtype == graph::DType::i32) executable.write(input, batch);
        executable.run();
      }
      std::string_view set = runtime::selected_kernel_set();
      if (set == "amx" || set == "avx512bf16" || set == "avx512") {
        // These sets multiply most f32 products (and the first two bfloat16 ones) with oneDNN's
        // matmul, which allocates its call's records and work space in each call and frees them
        // before it returns.
        CHECK(test::heap_bytes_in_use() == bytes_before);
      } else {
        CHECK(test::heap_allocations() - before == 0);
      }
    }
  }
}
